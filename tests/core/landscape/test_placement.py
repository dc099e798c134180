"""isoscope.landscape.placement: the landscape trains and evaluates on the encoder's resolved device, its flat vectors
sit beside the model (the CPU for MPS), seeds leave no trace outside, and only a device other than the CPU enters the
cache keys (CPU keys are those written before devices). Tested on the CPU, the device this machine has."""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

from isoscope.encode.device import resolve_device
from isoscope.landscape.classifier import build_classifier, make_eval_set
from isoscope.landscape.flat import FlatLayout
from isoscope.landscape.placement import key_parts, module_device, seeded_rng, vector_device
from isoscope.landscape.tasks import sample
from isoscope.landscape.train import TrainConfig, run_key, train_run, train_step, training_batch


def test_the_training_step_runs_model_and_batches_on_the_resolved_device(tiny, tasks, tmp_path) -> None:
    """Every forward pass of a training run sees inputs and labels on the device the encoder was resolved to, where
    the model's parameters and AdamW's moments are too; the checkpoints are written from there and read back."""
    device = resolve_device("cpu")
    encoder = dataclasses.replace(tiny, device=str(device))
    task = sample(tasks[1].train, 16, 0)
    config = TrainConfig(lr=1e-3, epochs=1, batch_size=8, n_train=16, max_length=32, seed=3)
    model = build_classifier(encoder, task.n_classes, init="pretrained", seed=config.seed)
    assert module_device(model) == device and {p.device for p in model.parameters()} == {device}
    assert {p.dtype for p in model.parameters()} == {torch.float32}
    seen: list[torch.device] = []

    def record(_module, args, kwargs):
        seen.extend(t.device for t in (*args, *kwargs.values()) if isinstance(t, torch.Tensor))

    handle = model.register_forward_pre_hook(record, with_kwargs=True)
    try:
        layout = FlatLayout.from_module(model)
        key = run_key(encoder.fingerprint, "pretrained", task, config=config, layout=layout, device=device)
        ckpts, timing = train_run(
            model, layout, encoder.tokenizer, task=task, config=config, run_dir=tmp_path / "run", key=key
        )
    finally:
        handle.remove()
    assert timing["trained_epochs"] == 1 and len(seen) == 2 * 3  # two steps: ids, mask and token types each
    assert set(seen) == {device}
    inputs, labels = training_batch(encoder.tokenizer, task, np.arange(8), max_length=32, device=device)
    assert labels.device == device and {t.device for t in inputs.values()} == {device}
    loss = train_step(model, torch.optim.AdamW(model.parameters()), inputs, labels, max_grad_norm=1.0)
    assert np.isfinite(loss)
    assert ckpts[-1].load(device).device == device and ckpts[-1].load().device == torch.device("cpu")


def test_the_evaluator_copies_its_examples_to_the_models_device_once(tiny, tasks) -> None:
    device = resolve_device("cpu")
    model = build_classifier(dataclasses.replace(tiny, device=str(device)), 2, init="scratch", seed=0)
    eval_set = make_eval_set(
        tiny.tokenizer, sample(tasks[0].train, 6, 1), sample(tasks[0].heldout, 6, 2), max_length=32, chunk_size=4
    )
    from isoscope.landscape.classifier import Evaluator

    for packed in (True, False):
        evaluate = Evaluator(model, FlatLayout.from_module(model), eval_set, packed=packed)
        assert evaluate.device == device
        assert all(t.device == device for inputs in evaluate._inputs for t in inputs.values())
        if packed:
            assert evaluate.packed.input_ids.device == device and evaluate.packed.to(device) is evaluate.packed
        theta = evaluate.layout.flatten(model)
        assert theta.device == device and evaluate.logits(theta).device == device
        metrics = evaluate(theta)
        assert set(metrics) == {"train_loss", "train_acc", "heldout_loss", "heldout_acc"}


def test_vectors_beside_the_model_where_it_has_float64() -> None:
    assert vector_device(torch.device("cpu")) == torch.device("cpu")
    assert vector_device(torch.device("cuda", 1)) == torch.device("cuda", 1)
    assert vector_device(torch.device("mps")) == torch.device("cpu")  # MPS has no float64


def test_only_a_device_other_than_the_cpu_enters_the_keys(tiny, tasks) -> None:
    """CPU keys are exactly those written before devices (so stored CPU results stay valid); a GPU's kind, not its
    index, is part of the training run's key and of the experiment's."""
    from isoscope.cache import make_key
    from isoscope.landscape.pipeline import LandscapeConfig, experiment_key

    assert key_parts(torch.device("cpu")) == ()
    assert key_parts(torch.device("cuda", 0)) == key_parts(torch.device("cuda", 3)) == ("device=cuda",)
    task = sample(tasks[1].train, 16, 0)
    config = TrainConfig()
    layout = FlatLayout.from_module(build_classifier(tiny, task.n_classes, init="pretrained", seed=0))
    before = make_key("run", tiny.fingerprint, "pretrained", task.digest(), config.key(), layout.digest())
    keys = {
        d: run_key(tiny.fingerprint, "pretrained", task, config=config, layout=layout, device=torch.device(d))
        for d in ("cpu", "cuda:0", "cuda:1", "mps")
    }
    assert keys["cpu"] == before == run_key(tiny.fingerprint, "pretrained", task, config=config, layout=layout)
    assert keys["cuda:0"] == keys["cuda:1"] and len({keys["cpu"], keys["cuda:0"], keys["mps"]}) == 3
    cfg = LandscapeConfig()
    on = {d: experiment_key(dataclasses.replace(tiny, device=d), *tasks, config=cfg) for d in ("cpu", "cuda:0")}
    assert on["cpu"] == experiment_key(tiny, *tasks, config=cfg) != on["cuda:0"]


def test_seeded_rng_is_torch_manual_seed_on_the_cpu_and_leaves_no_trace() -> None:
    cpu = torch.device("cpu")
    outside = torch.get_rng_state()
    with seeded_rng(cpu, 1234):
        drawn = torch.randn(5)
        order = torch.randperm(9).numpy()
    assert torch.equal(torch.get_rng_state(), outside)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1234)
        assert torch.equal(drawn, torch.randn(5)) and np.array_equal(order, torch.randperm(9).numpy())
