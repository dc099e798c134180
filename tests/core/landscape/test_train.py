"""isoscope.landscape.train: checkpoints recognised from their header, runs reproducible and resumable."""

from __future__ import annotations

import pytest
import torch


def test_checkpoint_check_reads_the_header_and_refuses_broken_files(tmp_path) -> None:
    """A finished epoch is recognised from its sidecar and safetensors header; a truncated file is not one."""
    from isoscope.landscape.flat import vector_digest
    from isoscope.landscape.store import write_tensors
    from isoscope.landscape.train import _ckpt_path, _read_checkpoint

    theta = torch.arange(10, dtype=torch.float32)
    path = _ckpt_path(tmp_path, 1)
    write_tensors(path, {"theta": theta}, {"key": "k", "digest": vector_digest(theta), "train_loss": 0.5})
    found = _read_checkpoint(tmp_path, 1, "k")
    assert found is not None and found.digest == vector_digest(theta) and found.train_loss == 0.5
    torch.testing.assert_close(found.load(), theta)
    assert _read_checkpoint(tmp_path, 1, "other key") is None
    assert _read_checkpoint(tmp_path, 2, "k") is None
    path.write_bytes(path.read_bytes()[:-4])
    assert _read_checkpoint(tmp_path, 1, "k") is None
    write_tensors(path, {"not_theta": theta}, {"key": "k", "digest": vector_digest(theta), "train_loss": 0.5})
    assert _read_checkpoint(tmp_path, 1, "k") is None


def test_a_run_is_reproducible_and_read_back_instead_of_retrained(tiny, tasks, tmp_path) -> None:
    from isoscope.landscape.classifier import build_classifier
    from isoscope.landscape.flat import FlatLayout
    from isoscope.landscape.tasks import sample
    from isoscope.landscape.train import TrainConfig, run_key, train_run

    task = sample(tasks[1].train, 16, 0)
    config = TrainConfig(lr=1e-3, epochs=2, batch_size=8, n_train=16, max_length=32, seed=3)

    def run(folder, reuse=True):
        model = build_classifier(tiny, task.n_classes, init="scratch", seed=config.seed)
        layout = FlatLayout.from_module(model)
        key = run_key(tiny.fingerprint, "scratch", task, config=config, layout=layout)
        return train_run(
            model, layout, tiny.tokenizer, task=task, config=config, run_dir=tmp_path / folder, key=key, reuse=reuse
        )

    ckpts, timing = run("a")
    assert [c.epoch for c in ckpts] == [0, 1, 2] and timing["trained_epochs"] == 2
    assert ckpts[0].digest != ckpts[2].digest and all(c.train_loss > 0 for c in ckpts[1:])
    again, _ = run("b")  # a fresh folder: trained again, to the same weights (seeded order and dropout)
    assert [c.digest for c in again] == [c.digest for c in ckpts]
    cached, timing = run("a")
    assert timing["trained_epochs"] == 0 and [c.digest for c in cached] == [c.digest for c in ckpts]
    assert torch.equal(cached[2].load(), ckpts[2].load())
    assert TrainConfig().key() != config.key()
    with pytest.raises(ValueError, match="lr > 0"):
        TrainConfig(lr=0.0).validate()
    with pytest.raises(ValueError, match="head pooling"):
        TrainConfig(pooling="max").validate()
