"""Acceptance: the embedded all-MiniLM-L6-v2 reproduces its published STS-B test Spearman (about 82)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from isoscope.data import load_pairs
from isoscope.encode.embed import EmbedConfig, encode_many
from isoscope.evaluate.similarity import sts_evaluate

PUBLISHED_SPEARMAN = 82.0  # all-MiniLM-L6-v2, mean pooling, STS-B test, x100


@pytest.mark.slow
def test_stsb_test_spearman(encoder, stsb_dir: Path) -> None:
    pairs = load_pairs(stsb_dir / "stsb-en-test.csv")
    assert len(pairs) == 1379
    n = len(pairs)
    vecs = encode_many(encoder, pairs.texts, ["mean", "cls"], config=EmbedConfig(batch_size=64, max_length=256))
    mean = sts_evaluate(vecs["mean"][:n], vecs["mean"][n:], pairs.scores)
    cls = sts_evaluate(vecs["cls"][:n], vecs["cls"][n:], pairs.scores)
    print(f"STS-B test spearman: mean {mean['spearman']:.2f}, cls {cls['spearman']:.2f}")
    assert abs(mean["spearman"] - PUBLISHED_SPEARMAN) <= 0.5, mean["spearman"]
    assert 75 < mean["pearson"] <= 100
    assert math.isfinite(cls["spearman"])
    assert cls["spearman"] < 80 and cls["spearman"] < mean["spearman"] - 2
