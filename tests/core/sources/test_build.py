"""SPEC strings, random-init and landscape-checkpoint encoders, and building spaces from one forward pass."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from isoscope.data import load_corpus
from isoscope.encode.embed import encode, encode_many
from isoscope.encode.pooling import layer_pooling
from isoscope.errors import InputError
from isoscope.paths import DEMO_CORPUS
from isoscope.sources import (
    SourceReaders,
    SpaceSpec,
    build_spaces,
    load_space_encoder,
    parse_space,
    random_encoder,
    space_vectors,
)
from isoscope.sources.spec import parse_landscape_ref
from tests.tiny_models import tiny_bert

DEMO_TOPICS = load_corpus(DEMO_CORPUS).meta["topic"].nunique()  # demo-topic's classes

TEXTS = [
    "A man plays the guitar.",
    "A woman is slicing an onion.",
    "Two dogs run through a field.",
    "The stock market fell sharply today.",
    "A child reads a book in the library.",
    "It is raining in Paris.",
    "A plane takes off from the runway.",
    "He eats an apple in the kitchen.",
    "The team won the final match.",
    "Prices of houses keep rising.",
    "A cat sleeps on the sofa.",
    "Scientists discovered a new planet.",
]


@pytest.fixture(scope="module")
def tiny():
    return tiny_bert(11, num_hidden_layers=3)  # seed 11: init=random (seed 0) must not rebuild it


def test_parse_defaults_and_full_spec() -> None:
    assert parse_space("") == SpaceSpec()
    assert parse_space(None).label() == "model=default,init=pretrained,pooling=default,calibrate=none"
    spec = parse_space(" model=some/model , init=random:7, pooling=layer:2, calibrate=SN+abtt:3 ")
    assert spec == SpaceSpec("some/model", "random", 7, layer_pooling(2), "sn+abtt:3")
    assert spec.encoder_key == ("some/model", "random", 7)
    assert parse_space("pooling=cls").encoder_key == parse_space("calibrate=whitening").encoder_key


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("colour=red", "unknown key 'colour'.*keys model, init, pooling, calibrate"),
        ("pooling", "not key=value"),
        ("pooling=cls,pooling=mean", "given twice"),
        ("init=trained", "init must be one of pretrained, random"),
        ("init=pretrained:3", "init must be one of"),
        ("init=random:-1", "whole number"),
        ("pooling=median", "unknown pooling 'median'; choose one of model, cls, mean"),
        ("calibrate=pca", "unknown calibration method 'pca'; valid choices: none, centre, flow, whitening"),
        ("model=landscape:", "landscape:FOLDER"),
        ("model=landscape:x:finetuned", "INIT must be one of pretrained, scratch"),
        ("model=landscape:x:pretrained:two", "EPOCH must be a whole number or 'last'"),
        ("model=landscape:x:pretrained:1:task3", "TASK must be one of task1, task2"),
        ("model=landscape:x,init=random", "init=random takes a model's architecture"),
    ],
)
def test_bad_specs_say_what_to_fix(text: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        parse_space(text)


def test_landscape_ref_defaults() -> None:
    ref = parse_landscape_ref("landscape:latest")
    assert (ref.folder, ref.init, ref.epoch, ref.task) == ("latest", "pretrained", None, "task1")
    ref = parse_landscape_ref("landscape:/tmp/x:scratch:2:task2")
    assert (ref.folder, ref.init, ref.epoch, ref.task) == ("/tmp/x", "scratch", 2, "task2")


def test_random_init_is_seeded_and_leaves_the_global_rng_alone(tiny) -> None:
    state = torch.get_rng_state()
    # (seed 0 would rebuild the tiny model itself: tiny_bert draws its weights right after manual_seed(0))
    r0, r0_again, r1 = random_encoder(tiny, 5), random_encoder(tiny, 5), random_encoder(tiny, 6)
    assert torch.equal(torch.get_rng_state(), state)
    w = {
        name: dict(e.model.named_parameters())
        for name, e in (("base", tiny), ("r0", r0), ("r0b", r0_again), ("r1", r1))
    }
    key = "encoder.layer.0.attention.self.query.weight"
    assert torch.equal(w["r0"][key], w["r0b"][key])
    assert not torch.equal(w["r0"][key], w["r1"][key]) and not torch.equal(w["r0"][key], w["base"][key])
    assert r0.fingerprint == r0_again.fingerprint != r1.fingerprint != tiny.fingerprint
    assert type(r0.model) is type(tiny.model) and r0.num_layers == 3
    np.testing.assert_array_equal(encode(r0, TEXTS[:3]), encode(r0_again, TEXTS[:3]))


def test_build_spaces_one_pass_per_encoder(tiny) -> None:
    calls: list[str] = []

    def loader(name: str):
        calls.append(name)
        return tiny

    specs = [parse_space("pooling=mean"), parse_space("pooling=cls,calibrate=whitening:4"), parse_space("init=random")]
    stages: list[str] = []
    a, b, c = build_spaces(specs, TEXTS, layers=True, loader=loader, progress=lambda s: stages.append(s))
    assert calls == ["", ""]  # the pre-trained encoder once, and once as the random init's architecture
    assert [s for s in stages if s.startswith("embed")] == [f"embed {tiny.name}", f"embed {c.model_name}"]
    want = encode_many(tiny, TEXTS, ["mean", "cls"])
    np.testing.assert_array_equal(a.vectors, want["mean"])
    np.testing.assert_array_equal(b.raw, want["cls"])
    assert b.vectors.shape == (len(TEXTS), 4) and b.warnings == []
    np.testing.assert_allclose(np.cov(b.vectors.T.astype(np.float64)), np.eye(4), atol=1e-4)  # whitened
    assert a.layer_names == ["layer:0", "layer:1", "layer:2", "layer:3"]
    np.testing.assert_array_equal(a.layers[-1], a.vectors)  # layer:L mean-pooled is the mean pooling
    assert "random init" in c.model_name and not np.allclose(c.vectors, a.vectors)


def test_build_spaces_refuses_what_the_model_lacks(tiny) -> None:
    with pytest.raises(InputError, match="K must be between 0 and 3"):
        build_spaces([parse_space("pooling=layer:5")], TEXTS, loader=lambda name: tiny)
    with pytest.raises(InputError, match="at least 2 texts"):
        build_spaces([SpaceSpec()], TEXTS[:1], loader=lambda name: tiny)


def test_space_vectors_is_one_space_whatever_it_comes_from(tiny, tmp_path: Path) -> None:
    """A model space embeds (its pooling resolved, its run in words, the same fingerprint as ``build_spaces``), the
    encoder loaded once per readers; a vectors file gives the rows of the texts by its text column; no kind asked."""
    import pandas as pd

    from isoscope.encode.embed import describe_run

    calls: list[str] = []
    readers = SourceReaders()

    def loader(name: str):
        calls.append(name)
        return tiny

    model = space_vectors(SpaceSpec(), TEXTS, readers=readers, loader=loader)
    again = space_vectors(SpaceSpec(), TEXTS[:4], readers=readers, loader=loader)
    assert calls == [""]  # the readers keep the encoder
    built = build_spaces([SpaceSpec()], TEXTS, loader=loader)[0]
    np.testing.assert_array_equal(model.raw, encode(tiny, TEXTS, model.spec.pooling))
    np.testing.assert_array_equal(again.raw, model.raw[:4])
    assert model.spec.pooling == built.spec.pooling and model.fingerprint == built.fingerprint
    assert model.model_name == tiny.name and model.recipe == describe_run(tiny, model.spec.pooling)
    rows = np.arange(len(TEXTS) * 3, dtype=np.float32).reshape(len(TEXTS), 3)
    pd.DataFrame({"text": TEXTS, "emb": list(rows)}).to_parquet(tmp_path / "v.parquet")
    given = space_vectors(SpaceSpec(vectors=str(tmp_path / "v.parquet"), column="emb"), TEXTS[::-1][:5])
    np.testing.assert_array_equal(given.raw, rows[::-1][:5])  # looked up by text
    assert given.recipe == "" and given.origin is not None and given.spec.pooling is None


# ---------------------------------------------------------------- landscape checkpoints


@pytest.fixture(scope="module")
def landscape_run(tiny, tmp_path_factory) -> Path:
    """A real, small loss-landscape experiment on the tiny BERT (same entry point as python -m isoscope landscape)."""
    from isoscope.landscape import LandscapeConfig, TrainConfig, load_task, run_landscape

    out = tmp_path_factory.mktemp("landscape") / "landscape" / "tiny-run"
    train = TrainConfig(lr=1e-3, epochs=2, batch_size=8, n_train=24, max_length=48, seed=0)
    config = LandscapeConfig(train=train, eval_size=8, eval_chunk=8, grid=3, points_1d=3, hessian_iters=0)
    run_landscape(tiny, load_task("demo-topic", 0), load_task("demo-pairs", 0), config=config, out_dir=out)
    return out


def _landscape_encoder(folder: Path, init: str, epoch: int | str, tiny):
    return load_space_encoder(parse_space(f"model=landscape:{folder}:{init}:{epoch}"), lambda name: tiny)


def test_epoch_zero_is_the_pretrained_model(landscape_run: Path, tiny) -> None:
    start = _landscape_encoder(landscape_run, "pretrained", 0, tiny)
    np.testing.assert_array_equal(encode(start, TEXTS), encode(tiny, TEXTS))
    assert start.fingerprint != tiny.fingerprint  # its own embedding-cache entries


def test_fine_tuned_weights_are_the_landscape_classifiers_encoder(landscape_run: Path, tiny) -> None:
    """Checked against the landscape's own model: its classifier with the checkpoint loaded by FlatLayout."""
    from isoscope.landscape.classifier import build_classifier
    from isoscope.landscape.flat import FlatLayout
    from isoscope.landscape.store import read_tensors

    tuned = _landscape_encoder(landscape_run, "pretrained", "last", tiny)
    path = next(landscape_run.glob("checkpoints/pretrained-task1-*/epoch_002.safetensors"))
    theta = read_tensors(path)[0]["theta"]
    reference = build_classifier(tiny, DEMO_TOPICS, init="pretrained", seed=0)  # demo-topic: one class per topic
    FlatLayout.from_module(reference).load_into(reference, theta)
    mine = dict(tuned.model.named_parameters())
    for name, p in reference.encoder.named_parameters():
        assert torch.equal(mine[name], p), name
    assert not np.allclose(encode(tuned, TEXTS), encode(tiny, TEXTS))
    assert "fine-tuned (pretrained, task1, epoch 2)" in tuned.name


def test_scratch_start_and_latest(landscape_run: Path, tiny, monkeypatch: pytest.MonkeyPatch) -> None:
    from isoscope.landscape.classifier import build_classifier

    scratch0 = _landscape_encoder(landscape_run, "scratch", 0, tiny)
    reference = build_classifier(tiny, DEMO_TOPICS, init="scratch", seed=0)
    mine = dict(scratch0.model.named_parameters())
    for name, p in reference.encoder.named_parameters():
        assert torch.equal(mine[name], p), name
    monkeypatch.setenv("ISOSCOPE_CACHE", str(landscape_run.parent.parent))
    latest = load_space_encoder(parse_space("model=landscape:latest"), lambda name: tiny)
    by_name = load_space_encoder(parse_space("model=landscape:tiny-run:pretrained:2:task1"), lambda name: tiny)
    assert latest.fingerprint == by_name.fingerprint


def test_landscape_refusals(landscape_run: Path, tiny, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(InputError, match="no epoch 7 checkpoint; epochs 0 to 2 exist"):
        _landscape_encoder(landscape_run, "pretrained", 7, tiny)
    with pytest.raises(InputError, match="wrong base model"):
        load_space_encoder(parse_space(f"model=landscape:{landscape_run}"), lambda name: tiny_bert(0, hidden_size=16))
    with pytest.raises(InputError, match="no finished landscape experiment"):
        load_space_encoder(parse_space(f"model=landscape:{tmp_path}"), lambda name: tiny)
    monkeypatch.setenv("ISOSCOPE_CACHE", str(tmp_path))
    with pytest.raises(InputError, match="no finished landscape experiment under"):
        load_space_encoder(parse_space("model=landscape:latest"), lambda name: tiny)


def test_the_checkpoints_a_page_can_offer(landscape_run: Path, tiny, tmp_path: Path) -> None:
    from isoscope.sources.checkpoints import checkpoint_epochs, landscape_checkpoints

    assert checkpoint_epochs(landscape_run, "pretrained") == [0, 1, 2]
    assert checkpoint_epochs(landscape_run, "scratch", "task2") == [0, 1, 2]
    assert checkpoint_epochs(tmp_path, "pretrained") == []
    (listed,) = landscape_checkpoints(landscape_run.parent)
    assert listed["out_dir"] == str(landscape_run) and listed["epochs"] == {
        "pretrained": [0, 1, 2],
        "scratch": [0, 1, 2],
    }
    assert listed["label"].startswith("demo-topic · ")
    # every epoch offered loads, and is the checkpoint of that epoch
    last = _landscape_encoder(landscape_run, "scratch", listed["epochs"]["scratch"][-1], tiny)
    assert last.fingerprint == _landscape_encoder(landscape_run, "scratch", "last", tiny).fingerprint
    assert landscape_checkpoints(tmp_path) == []
