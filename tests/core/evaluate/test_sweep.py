"""isoscope.evaluate.sweep: the variants and their measures, with known answers on constructed data, and the encoding helper."""

from __future__ import annotations

import numpy as np
import pytest

from isoscope.errors import InputError
from isoscope.evaluate.sweep import (
    PCABasis,
    ScalarInt8,
    SweepConfig,
    SweepPairs,
    binary_signs,
    default_dims,
    encode_for_sweep,
    parse_dims,
    run_sweep,
)
from tests.tiny_models import tiny_bert

EPS32 = float(np.finfo(np.float32).eps)


def _cloud(n: int = 200, d: int = 16, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, d)).astype(np.float32)  # (n, d)


def test_default_and_parsed_dims() -> None:
    assert default_dims(384) == (32, 64, 128, 256, 384)
    assert default_dims(32) == (32,) and default_dims(16) == (16,)
    assert parse_dims("64, 32,32", 384) == (32, 64)
    assert parse_dims("", 100) == (32, 64, 100) and parse_dims(None, 100) == (32, 64, 100)
    for bad in ("0", "385", "a,b"):
        with pytest.raises(InputError):
            parse_dims(bad, 384)


def test_scalar_int8_round_trip_within_half_a_step() -> None:
    X = _cloud()
    q = ScalarInt8.fit(X)
    codes = q.codes(X)
    assert codes.dtype == np.int8 and codes.min() == -128 and codes.max() == 127  # corpus ends map to the ends
    err = np.abs(q(X) - X)  # (n, d)
    assert (err <= q.scale / 2 * (1 + 1e-5) + 4 * EPS32 * np.abs(X)).all()  # half a step, plus float32 rounding
    const = np.ones((5, 3), np.float32) * np.array([1.0, -2.0, 0.5], np.float32)
    np.testing.assert_array_equal(ScalarInt8.fit(const)(const), const)  # a constant dimension comes back exactly
    np.testing.assert_array_equal(q.codes(X * 10)[X > 0.5], 127)  # values beyond the corpus range clip


def test_binary_cosine_is_hamming() -> None:
    X = _cloud(n=20, d=64)
    B = binary_signs(X)
    hamming = (X[:, None, :] > 0) != (X[None, :, :] > 0)  # (20, 20, 64)
    cos = B @ B.T / 64  # +-1 rows all have norm sqrt(64)
    np.testing.assert_allclose(cos, 1 - 2 * hamming.sum(axis=2) / 64, atol=1e-6)


def test_pca_full_rank_is_a_rotation() -> None:
    X = _cloud()
    P = PCABasis.fit(X).project(X, X.shape[1])  # (n, d)
    np.testing.assert_allclose(P @ P.T, X.astype(np.float64) @ X.T, rtol=0, atol=1e-4 * np.abs(X @ X.T).max())


def test_truncation_of_zero_padded_dims_changes_nothing() -> None:
    """Known answer: vectors whose last 16 of 32 dimensions are 0 lose nothing when cut to 16."""
    Z = _cloud(n=150, d=16, seed=1)
    X = np.concatenate([Z, np.zeros_like(Z)], axis=1)  # (150, 32)
    table = run_sweep(X, config=SweepConfig(dims=(16, 32))).table.set_index("variant")
    assert table.loc["truncate:16", "overlap_at_k"] == 1.0
    # zero columns add no singular value: the same effective rank
    assert table.loc["truncate:16", "effective_rank"] == pytest.approx(table.loc["fp32", "effective_rank"], rel=1e-6)
    assert table.loc["truncate:16", "avg_cosine"] == pytest.approx(table.loc["fp32", "avg_cosine"], abs=1e-6)
    assert "truncate:32" not in table.index and "int8-model" not in table.index


def test_sweep_rows_and_measures() -> None:
    rng = np.random.default_rng(2)
    X = _cloud(n=300, d=64, seed=2)
    a = rng.normal(size=(80, 64))
    b = a + rng.normal(scale=0.8, size=a.shape)
    gold = -np.linalg.norm(a - b, axis=1)
    pairs = SweepPairs(a, b, gold, a.astype(np.float32), b.astype(np.float32))
    steps = []
    result = run_sweep(X, X.copy(), pairs, config=SweepConfig(dims=(8, 64)), progress=lambda d, t: steps.append((d, t)))
    t = result.table.set_index("variant")
    assert list(t.index) == ["fp32", "int8-model", "int8-vectors", "binary", "truncate:8", "pca:8", "pca:64"]
    assert steps[-1] == (7, 7)
    assert t.loc["fp32", "overlap_at_k"] == 1.0 and t.loc["int8-model", "overlap_at_k"] == 1.0  # same vectors
    assert t.loc["int8-model", "spearman"] == t.loc["fp32", "spearman"]
    assert list(t["bytes_per_vector"]) == [256, 256, 64, 8, 32, 32, 256]
    assert t.loc["int8-vectors", "overlap_at_k"] > t.loc["binary", "overlap_at_k"]  # 8 bits keep more than 1
    assert t.loc["truncate:8", "effective_rank"] <= 8 + 1e-9
    assert result.family("truncate")["dims"].tolist() == [8, 64]  # the fp32 row ends each dimension curve


def test_k_above_the_corpus_is_refused_never_lowered() -> None:
    """The one rule for k (isoscope.neighbours.exact.check_k): at most n - 1, refused above."""
    assert run_sweep(_cloud(n=6, d=8), config=SweepConfig(k=5, dims=(4,))).k == 5
    with pytest.raises(InputError, match=r"at most the number of texts minus one \(5\), got 10"):
        run_sweep(_cloud(n=6, d=8), config=SweepConfig(k=10, dims=(4,)))


def test_encode_for_sweep_tiny_bert(tmp_path) -> None:
    from isoscope.cache import ArrayCache
    from isoscope.data import Pairs

    enc = tiny_bert(seed=1)
    texts = ["one sentence here", "another one", "a third, longer sentence about cats", "dogs bark"]
    pairs = Pairs(["cats purr", "rain falls"], ["a cat purrs", "stocks rise"], np.array([4.5, 0.5]))
    done = []
    v = encode_for_sweep(enc, texts, pairs, cache=ArrayCache(tmp_path), progress=lambda d, t: done.append((d, t)))
    assert v.corpus_fp32.shape == v.corpus_int8.shape == (4, 32)
    assert v.pairs.a.shape == v.pairs.b_int8.shape == (2, 32) and v.pairs.gold.tolist() == [4.5, 0.5]
    assert done[-1] == (16, 16)  # (4 texts + 4 pair sentences) x 2 models
    cos = np.sum(v.corpus_fp32 * v.corpus_int8, axis=1) / (
        np.linalg.norm(v.corpus_fp32, axis=1) * np.linalg.norm(v.corpus_int8, axis=1)
    )
    assert cos.min() > 0.99  # see tests/core/encode/test_quantize.py for the int8 error bound
