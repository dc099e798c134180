"""``python -m isoscope geometry``: JSON keys for pairs and corpora, calibration, layers, and bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from isoscope.paths import DEMO_CORPUS, DEMO_PAIRS
from tests.core.commands.cli_checks import exit_status, one_error_line
from tests.data_helpers import demo_head

METRICS = {"avg_cosine", "isoscore", "partition_isotropy", "effective_rank"}


@pytest.fixture()
def small_pairs(repo_root: Path, tmp_path: Path) -> Path:
    return demo_head(DEMO_PAIRS, 60, tmp_path / "pairs.csv")


@pytest.fixture()
def small_corpus(repo_root: Path, tmp_path: Path) -> Path:
    return demo_head(DEMO_CORPUS, 50, tmp_path / "corpus.csv")


def _run(cli, capsys, *argv: str) -> dict:
    assert cli(["geometry", *argv, "--json", "--quiet"]) == 0
    return json.loads(capsys.readouterr().out)


def test_pairs_raw_json_keys(cli, small_pairs: Path, capsys) -> None:
    out = _run(cli, capsys, "--input", str(small_pairs), "--pooling", "cls", "--frequency", "static")
    assert out["kind"] == "pairs" and out["n_texts"] == 120 and out["pooling"] == "cls"
    assert METRICS <= set(out["raw"])
    assert "calibrated" not in out and out["calibrate"] is None
    freq = out["frequency"]
    assert freq["labels"] == ["0-100", "100-500", "500-5k", "5k+"]
    assert [b["bucket"] for b in freq["buckets"]] == freq["labels"]
    assert {"space", "stage", "n_tokens", "mean_norm", "mean_knn_dist", "rel_norm"} <= set(freq["buckets"][0])
    assert sum(b["n_tokens"] for b in freq["buckets"]) == freq["n_distinct_tokens"]
    assert freq["correlations"][0]["space"] == "static"
    overlap = out["overlap"]
    assert set(overlap["spearman"]) == {"gold", "raw"}
    assert overlap["n_pairs"] == 60 and overlap["level"] == "word"
    assert set(out["sts"]) == {"raw"}


def test_pairs_calibrated_and_layers(cli, encoder, small_pairs: Path, capsys) -> None:
    out = _run(
        cli,
        capsys,
        *("--input", str(small_pairs), "--pooling", "mean", "--calibrate", "whitening:32", "--layers"),
        *("--frequency", "contextual", "--per-token", "2", "--rank-edges", "0,50,200"),
    )
    assert METRICS <= set(out["raw"]) and METRICS <= set(out["calibrated"])
    assert out["calibrate"] == "whitening:32"
    assert out["calibrated"]["isoscore"] > out["raw"]["isoscore"]
    assert set(out["overlap"]["spearman"]) == {"gold", "raw", "calibrated"}
    assert set(out["sts"]) == {"raw", "calibrated"}
    assert [row["layer"] for row in out["layers"]] == list(range(encoder.num_layers + 1))
    assert out["layers"][-1]["isoscore"] == pytest.approx(out["raw"]["isoscore"], rel=1e-4)  # mean = last layer
    stages = {(b["space"], b["stage"]) for b in out["frequency"]["buckets"]}
    assert stages == {("contextual", "raw"), ("contextual", "calibrated")}
    assert out["frequency"]["labels"] == ["0-50", "50-200", "200+"]


def test_corpus_input_has_no_overlap(cli, small_corpus: Path, capsys) -> None:
    out = _run(cli, capsys, "--input", str(small_corpus), "--frequency", "none")
    assert out["kind"] == "corpus" and out["n_texts"] == 50
    assert METRICS <= set(out["raw"])
    assert "overlap" not in out and "frequency" not in out


def test_text_output(cli, small_corpus: Path, capsys) -> None:
    assert cli(["geometry", "--input", str(small_corpus), "--frequency", "static", "--quiet"]) == 0
    text = capsys.readouterr().out
    assert "isoscore" in text and "spearman x100 static/raw" in text


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--input", "no-such-file.csv"], "file not found"),
        (["--input", "{pairs}", "--calibrate", "bogus"], "unknown calibration method"),
        (["--input", "{pairs}", "--rank-edges", "500,100"], "strictly increasing"),
        (["--input", "{pairs}", "--knn-k", "0"], "--knn-k"),
        (["--input", "{pairs}", "--pooling", "nope"], "unknown pooling"),
    ],
)
def test_bad_input_exit_2_one_line(cli, small_pairs: Path, capsys, argv: list[str], message: str) -> None:
    argv = [a.replace("{pairs}", str(small_pairs)) for a in argv]
    assert exit_status(cli, ["geometry", *argv, "--json", "--quiet", "--frequency", "none"]) == 2
    assert message in one_error_line(capsys)


def test_subprocess_missing_file(repo_root: Path) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "isoscope", "geometry", "--input", "missing.csv", "--json"],
        cwd=repo_root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.strip().splitlines() == ["error: file not found: missing.csv"]
