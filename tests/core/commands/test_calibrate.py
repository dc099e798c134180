"""CLI: ``sts --calibrate`` and ``calibrate`` (JSON keys, saved calibrators, exit 2 with one line on bad input)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from isoscope.cache import ArrayCache
from isoscope.calibrate import Flow, Whitening, load_calibrator
from isoscope.data import load_corpus, load_pairs
from isoscope.encode.embed import encode
from isoscope.geometry.metrics import avg_cosine
from isoscope.geometry.pairs import correlations, cosine_pairs
from isoscope.paths import DEMO_CORPUS, DEMO_PAIRS, ROOT
from tests.core.commands.cli_checks import one_error_line

CALIBRATED_KEYS = {
    "method",
    "spearman",
    "pearson",
    "fit_seconds",
    "bits_per_dim",
    "avg_cosine_before",
    "avg_cosine_after",
}


@pytest.fixture()
def pairs_file(tmp_path: Path) -> Path:
    """A small pairs CSV: the first 60 demo pairs."""
    path = tmp_path / "pairs.csv"
    path.write_bytes(load_pairs(DEMO_PAIRS).to_frame().head(60).to_csv(index=False).encode())
    return path


@pytest.fixture()
def corpus_file(tmp_path: Path) -> Path:
    """One text per line: every other text of the demo corpus (168)."""
    path = tmp_path / "corpus.txt"
    texts = load_corpus(DEMO_CORPUS).texts[::2]
    path.write_text("\n".join(texts) + "\n")
    return path


def _json(capsys) -> dict:
    out = capsys.readouterr().out
    return json.loads(out.strip().splitlines()[-1])


def test_sts_calibrate_whitening_json(cli, encoder, pairs_file: Path, capsys) -> None:
    assert cli(["sts", "--pairs", str(pairs_file), "--calibrate", "whitening:16", "--json", "--quiet"]) == 0
    result = _json(capsys)
    assert {"spearman", "pearson", "n_pairs"} <= set(result)
    cal = result["calibrated"]
    assert CALIBRATED_KEYS <= set(cal)
    assert cal["method"] == "whitening:16" and cal["bits_per_dim"] is None and cal["fit_on"] == "target"
    # the numbers are the real ones: recompute them in-process
    pairs = load_pairs(pairs_file)
    n = len(pairs)
    vecs = encode(encoder, pairs.texts, None, cache=ArrayCache())  # the model's own pooling: its recipe
    assert result["n_pairs"] == n and cal["n_fit"] == 2 * n
    assert result["spearman"] == pytest.approx(correlations(cosine_pairs(vecs[:n], vecs[n:]), pairs.scores)["spearman"])
    z = Whitening(16).fit(vecs).transform(vecs)
    expected = correlations(cosine_pairs(z[:n], z[n:]), pairs.scores)
    assert cal["spearman"] == pytest.approx(expected["spearman"], abs=1e-6)
    assert abs(cal["avg_cosine_after"]) < abs(cal["avg_cosine_before"])


def test_sts_full_whitening_on_few_sentences_warns(cli, pairs_file: Path, capsys) -> None:
    assert cli(["sts", "--pairs", str(pairs_file), "--calibrate", "whitening", "--json", "--quiet"]) == 0
    result = _json(capsys)
    assert any("needs many more vectors than dimensions" in w for w in result["warnings"])


def test_sts_calibrate_flow_fit_on_corpus(cli, pairs_file: Path, corpus_file: Path, capsys) -> None:
    args = ["sts", "--pairs", str(pairs_file), "--calibrate", "flow", "--fit-on", str(corpus_file)]
    assert cli([*args, "--flow-epochs", "2", "--seed", "1", "--pooling", "cls", "--json", "--quiet"]) == 0
    cal = _json(capsys)["calibrated"]
    assert cal["method"] == "flow" and cal["fit_on"] == "corpus.txt"
    assert isinstance(cal["bits_per_dim"], float) and cal["n_fit"] == len(corpus_file.read_text().splitlines())
    assert np.isfinite(cal["spearman"]) and cal["avg_cosine_after"] < cal["avg_cosine_before"]


def test_calibrate_command_saves_a_loadable_calibrator(cli, encoder, corpus_file: Path, tmp_path, capsys) -> None:
    out = tmp_path / "cal"
    args = ["calibrate", "--input", str(corpus_file), "--method", "sn+abtt:3", "--out", str(out)]
    assert cli([*args, "--pooling", "cls", "--json", "--quiet"]) == 0
    result = _json(capsys)
    assert result["method"] == "sn+abtt:3" and result["dim"] == encoder.hidden_size
    loaded = load_calibrator(out)
    assert loaded.method == "sn+abtt:3"
    assert loaded.metadata_["pooling"] == "cls" and loaded.metadata_["model"] == encoder.name
    texts = corpus_file.read_text().splitlines()
    vecs = encode(encoder, texts, "cls", cache=ArrayCache())  # the cache the command filled
    z = loaded.transform(vecs)
    assert result["avg_cosine_after"] == pytest.approx(avg_cosine(z, seed=0))
    assert result["avg_cosine_before"] == pytest.approx(avg_cosine(vecs, seed=0))
    assert abs(result["avg_cosine_after"]) < 0.05 < result["avg_cosine_before"]


def test_calibrate_command_flow_text_output(cli, corpus_file: Path, tmp_path, capsys) -> None:
    out = tmp_path / "flow"
    assert cli(["calibrate", "--input", str(corpus_file), "--out", str(out), "--flow-epochs", "1", "--quiet"]) == 0
    text = capsys.readouterr().out
    assert "flow fitted in" in text and "bits/dim" in text
    flow = load_calibrator(out)
    assert isinstance(flow, Flow) and len(flow.history_) == 1


@pytest.mark.parametrize(
    "argv",
    [
        ["sts", "--calibrate", "foo"],
        ["sts", "--calibrate", "whitening:abc"],
        ["sts", "--calibrate", "flow", "--fit-on", "missing-corpus.txt"],
        ["sts", "--calibrate", "flow", "--flow-epochs", "-1"],
        ["calibrate", "--method", "abtt:0", "--out", "x"],
        ["calibrate", "--input", "missing-corpus.txt", "--out", "x"],
    ],
)
def test_bad_input_exits_2_with_one_line(cli, pairs_file: Path, corpus_file: Path, argv, capsys, tmp_path) -> None:
    argv = list(argv)
    if argv[0] == "sts":
        argv += ["--pairs", str(pairs_file)]
    elif "--input" not in argv:
        argv += ["--input", str(corpus_file)]
    argv = [str(tmp_path / a) if a in ("missing-corpus.txt", "x") else a for a in argv]
    assert cli(argv) == 2
    one_error_line(capsys)


def test_calibrate_out_is_a_file(cli, corpus_file: Path, tmp_path, capsys) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    argv = ["calibrate", "--input", str(corpus_file), "--method", "sn", "--out", str(blocker)]
    assert cli(argv) == 2
    assert "is a file" in one_error_line(capsys)


def test_subprocess_bad_method_is_one_line(pairs_file: Path) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "isoscope", "sts", "--pairs", str(pairs_file), "--calibrate", "foo"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "valid choices" in proc.stderr
