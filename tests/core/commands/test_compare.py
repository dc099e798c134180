"""``python -m isoscope compare`` end to end on the real model: JSON keys, self-comparison known answers, refusals."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from isoscope.paths import DEMO_CORPUS
from tests.core.commands.cli_checks import one_error_line

N_TEXTS = 60


@pytest.fixture()
def run_cli(cli_main, capsys):
    """``run_cli([...])`` -> parsed JSON of ``python -m isoscope compare ... --json`` in-process, on the session's
    encoder (random-init encoders are built from it)."""

    def run(argv: list[str], expect: int = 0) -> dict | None:
        status = cli_main(["compare", *argv, "--quiet", "--json"])
        assert status == expect
        return json.loads(capsys.readouterr().out) if expect == 0 else None

    return run


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """The first texts of the demo corpus, plus a repeated one."""
    with open(DEMO_CORPUS, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))[:N_TEXTS]
    path = tmp_path_factory.mktemp("compare") / "corpus.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["text"])
        w.writerows([[r["text"]] for r in rows] + [[rows[0]["text"]]])
    return path


def test_self_comparison_known_answers(run_cli, corpus: Path) -> None:
    out = run_cli(["--input", str(corpus), "--k", "5", "--layers", "--map-points", "40"])
    for key in ("cka_linear", "cka_debiased", "overlap_at_k", "hubness", "procrustes_disparity", "cka_layers"):
        assert key in out, key
    assert out["n_read"] == N_TEXTS + 1 and out["n_texts"] == N_TEXTS  # the repeated text is kept once
    assert out["cka_linear"] == pytest.approx(1.0, abs=1e-12)
    assert out["cka_debiased"] == pytest.approx(1.0, abs=1e-12)
    assert out["overlap_at_k"] == 1.0
    assert out["procrustes_disparity"] == pytest.approx(0.0, abs=1e-9)
    assert out["hubness"]["a"] == out["hubness"]["b"]
    assert set(out["hubness"]["a"]) >= {"skewness", "antihub_share", "top"}
    assert sum(h["k_occurrence"] for h in out["hubness"]["a"]["top"]) <= 5 * N_TEXTS
    layers = np.array(out["cka_layers"])
    assert layers.shape == (7, 7) and out["layers_a"][0] == "layer:0"
    np.testing.assert_array_equal(np.diag(layers), 1.0)
    np.testing.assert_array_equal(layers, layers.T)
    assert (layers[~np.eye(7, dtype=bool)] < 1).all()


def test_mean_vs_cls_whitened(run_cli, corpus: Path) -> None:
    out = run_cli(["--input", str(corpus), "--a", "pooling=mean", "--b", "pooling=cls,calibrate=whitening:16"])
    assert out["a"]["dims"] == 384 and out["b"]["dims"] == 16
    assert 0.0 < out["cka_linear"] < 1.0 and out["cka_debiased"] < out["cka_linear"]
    assert 0.0 < out["overlap_at_k"] < 1.0
    worst = out["most_changed"][0]
    assert worst["overlap"] == min(r["overlap"] for r in out["most_changed"])
    assert len(worst["neighbours_a"]) == len(worst["neighbours_b"]) == 10
    assert {"id", "cosine", "text"} <= set(worst["neighbours_a"][0])
    assert sum(r["texts"] for r in out["overlap_histogram"]) == N_TEXTS
    assert 0.0 <= out["map"]["trustworthiness_a"] <= 1.0 and 0.0 <= out["map"]["continuity_b"] <= 1.0


def test_trained_vs_random_init_layers(run_cli, corpus: Path) -> None:
    out = run_cli(["--input", str(corpus), "--b", "init=random", "--layers", "--map", "none"])
    layers = np.array(out["cka_layers"])
    assert layers.shape == (7, 7) and out["procrustes_disparity"] is None and out["map"] is None
    assert "random init" in out["b"]["model"]
    assert out["cka_linear"] < 0.9 and out["overlap_at_k"] < 0.5


def test_text_output(cli_main, capsys, corpus: Path) -> None:
    assert cli_main(["compare", "--input", str(corpus), "--b", "pooling=cls", "--quiet", "--top", "2"]) == 0
    text = capsys.readouterr().out
    assert "CKA linear" in text and "overlap@10" in text and "most changed neighbourhoods" in text


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--b", "pooling=average"], "unknown pooling 'average'"),
        (["--a", "size=3"], "unknown key 'size'"),
        (["--b", "pooling=layer:12"], "K must be between 0 and 6"),
        (["--k", "0"], "--k must be >= 1"),
        (["--k", "60"], "needs at least 61 distinct texts"),
        (["--b", "model=landscape:no-such-run"], "no finished landscape experiment"),
    ],
)
def test_refusals_are_one_line(run_cli, corpus: Path, capsys, argv: list[str], message: str) -> None:
    run_cli(["--input", str(corpus), *argv], expect=2)
    assert message in one_error_line(capsys)
