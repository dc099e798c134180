"""``python -m isoscope sweep`` and ``--precision int8`` through the commands that encode (real model, private cache)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from isoscope.geometry.pairs import l2_normalize
from isoscope.paths import DEMO_CORPUS, DEMO_PAIRS
from tests.core.commands.cli_checks import one_error_line
from tests.data_helpers import demo_head


@pytest.fixture()
def small_corpus(tmp_path: Path) -> Path:
    return demo_head(DEMO_CORPUS, 80, tmp_path / "corpus.csv")


@pytest.fixture()
def small_pairs(tmp_path: Path) -> Path:
    return demo_head(DEMO_PAIRS, 60, tmp_path / "pairs.csv")


def _json(cli, capsys, *argv: str) -> dict:
    assert cli([*argv, "--json", "--quiet"]) == 0
    return json.loads(capsys.readouterr().out)


def test_sweep_json(cli, capsys, small_corpus: Path, small_pairs: Path) -> None:
    out = _json(cli, capsys, "sweep", "--input", str(small_corpus), "--pairs", str(small_pairs), "--dims", "128,32,384")
    assert out["n_texts"] == 80 and out["n_pairs"] == 60 and out["k"] == 10 and out["dims"] == [32, 128, 384]
    rows = {r["variant"]: r for r in out["rows"]}
    assert list(rows) == [
        "fp32",
        "int8-model",
        "int8-vectors",
        "binary",
        "truncate:32",
        "pca:32",
        "truncate:128",
        "pca:128",
        "pca:384",
    ]
    assert rows["fp32"]["overlap_at_k"] == 1.0
    assert [rows[v]["bytes_per_vector"] for v in ("fp32", "int8-vectors", "binary", "pca:32")] == [1536, 384, 48, 128]
    assert rows["pca:384"]["overlap_at_k"] > 0.95  # a rotation: only float32 near-ties can swap
    assert abs(rows["pca:384"]["spearman"] - rows["fp32"]["spearman"]) < 1e-3
    for r in rows.values():
        assert 0 <= r["overlap_at_k"] <= 1 and math.isfinite(r["spearman"])
    # the int8 model and int8 vectors stay near fp32; a 32-dim cut of a model not trained for it does not
    assert rows["int8-model"]["overlap_at_k"] > rows["truncate:32"]["overlap_at_k"]
    assert abs(rows["int8-model"]["spearman"] - rows["fp32"]["spearman"]) < 2


def test_sweep_text_output(cli, capsys, small_corpus: Path) -> None:
    assert cli(["sweep", "--input", str(small_corpus), "--dims", "64", "--quiet"]) == 0
    text = capsys.readouterr().out
    assert "overlap@10" in text and "binary" in text and "pca:64" in text


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--dims", "0,32"], "between 1 and the model's 384"),
        (["--dims", "32,abc"], "whole numbers"),
        (["--dims", "1000"], "between 1 and the model's 384"),
        (["--k", "0"], "--k must be at least 1"),
    ],
)
def test_sweep_bad_options(cli, capsys, small_corpus: Path, argv: list[str], message: str) -> None:
    assert cli(["sweep", "--input", str(small_corpus), *argv]) == 2
    assert message in one_error_line(capsys)


def test_sweep_pairs_without_scores(cli, capsys, small_corpus: Path, tmp_path: Path) -> None:
    path = tmp_path / "unscored.csv"
    pd.DataFrame({"sentence1": ["a b", "c d"], "sentence2": ["a c", "d e"]}).to_csv(path, index=False)
    assert cli(["sweep", "--input", str(small_corpus), "--pairs", str(path)]) == 2
    assert "no score column" in one_error_line(capsys)


def test_sts_int8(cli, capsys) -> None:
    fp32 = _json(cli, capsys, "sts", "--pairs", str(DEMO_PAIRS))
    int8 = _json(cli, capsys, "sts", "--pairs", str(DEMO_PAIRS), "--precision", "int8")
    # all 165 demo pairs (fp32 Spearman 76): int8 moves cosines by ~1e-2, a few ranks; 1.5 points is ~3 of 165
    # pairs swapping far (as in tests/core/encode/test_quantize.py). The first 60 pairs are a poor check: their
    # fp32 Spearman is 27, so near-equal cosines swap under any perturbation (0.1 to 2 points, by batch make-up)
    assert int8["spearman"] != fp32["spearman"] and abs(int8["spearman"] - fp32["spearman"]) < 1.5


def test_embed_int8_file_and_cache(cli, capsys, small_corpus: Path, tmp_path: Path, tmp_cache) -> None:
    a, b = tmp_path / "fp32.npy", tmp_path / "int8.npy"
    _json(cli, capsys, "embed", "--input", str(small_corpus), "--out", str(a))
    entries = len(list(tmp_cache.root.glob("*.npy")))  # the pass and its companions (other poolings, layers)
    _json(cli, capsys, "embed", "--input", str(small_corpus), "--out", str(b), "--precision", "int8")
    va, vb = np.load(a), np.load(b)
    cos = np.sum(l2_normalize(va) * l2_normalize(vb), axis=1)  # (80,)
    assert cos.mean() > 0.99 and cos.min() > 0.95  # see tests/core/encode/test_quantize.py for the int8 error bound
    assert len(list(tmp_cache.root.glob("*.npy"))) == entries + 1  # int8 its own entry (its engine has no layers)


def test_precision_option_rejections(cli, capsys, small_corpus: Path, tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exit_:  # argparse refuses it before the command runs
        cli(["embed", "--input", str(small_corpus), "--precision", "int4", "--out", str(tmp_path / "x.npy")])
    assert exit_.value.code == 2 and "invalid choice: 'int4'" in capsys.readouterr().err
    argv = ["embed", "--input", str(small_corpus), "--precision", "int8", "--engine", "ray", "--shard-dir", "s"]
    assert cli(argv) == 2
    assert "--engine local only" in one_error_line(capsys)
    argv = ["compare", "--input", str(small_corpus), "--b", "init=random", "--precision", "int8"]
    assert cli(argv) == 2
    assert "pretrained models only" in one_error_line(capsys)


def test_landscape_has_no_precision_option() -> None:
    """landscape trains the model: fp32 only, and its help says so."""
    import argparse

    from isoscope.cli import build_parser

    parser = build_parser(["landscape"])
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices["landscape"]
    assert "--precision" not in sub._option_string_actions
    assert sub.get_default("precision") == "fp32"
    assert "always fp32" in sub.format_help()


def test_sweep_help_imports_no_heavy_library(tmp_path: Path) -> None:
    """``isoscope sweep --help`` lists --dims and answers without torch, transformers, faiss or sklearn."""
    import subprocess
    import sys

    code = (
        "import sys\nfrom isoscope.cli import main\ntry:\n    main(['sweep', '--help'])\nexcept SystemExit as e:\n"
        "    assert e.code == 0\nheavy = ('torch', 'transformers', 'faiss', 'sklearn', 'onnxruntime')\n"
        "print('LOADED:' + ','.join(m for m in heavy if m in sys.modules))"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    help_text, loaded = proc.stdout.rsplit("LOADED:", 1)
    assert "--dims" in help_text and loaded.strip() == ""
