"""Paired vectors and per-pair scores: the cosine of row i of one matrix with row i of another, and the rank and
linear correlation (x100, NaN when undefined) of two per-pair scores. The primitives STS
(``isoscope.evaluate.similarity``), the lexical-overlap bias and the pooling explorer share.
"""

from __future__ import annotations

import numpy as np


def l2_normalize(x: np.ndarray, eps: float = 1e-12) -> np.ndarray:
    """Rows scaled to unit length. (n, d) -> (n, d)."""
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), eps)


def cosine_pairs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine of row i of ``a`` with row i of ``b``. (n, d), (n, d) -> (n,)."""
    if a.shape != b.shape:
        raise ValueError(f"shapes differ: {a.shape} vs {b.shape}")
    return np.sum(l2_normalize(a.astype(np.float64)) * l2_normalize(b.astype(np.float64)), axis=-1)


def _undefined(x: np.ndarray, y: np.ndarray) -> bool:
    """True when a correlation of ``x`` with ``y`` is undefined: fewer than 3 values or either side constant."""
    return len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0


def spearman_x100(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman rank correlation x100; NaN when fewer than 3 values or either side is constant."""
    from scipy.stats import spearmanr

    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    if _undefined(x, y):
        return float("nan")
    return float(spearmanr(x, y).statistic * 100)


def correlations(pred: np.ndarray, gold: np.ndarray) -> dict[str, float]:
    """Spearman and Pearson correlation x100 (the STS convention)."""
    pred, gold = np.asarray(pred, np.float64), np.asarray(gold, np.float64)
    if len(pred) != len(gold):
        raise ValueError(f"{len(pred)} predictions for {len(gold)} gold scores")
    if _undefined(pred, gold):
        return {"spearman": float("nan"), "pearson": float("nan")}
    from scipy.stats import pearsonr

    return {
        "spearman": spearman_x100(pred, gold),
        "pearson": float(pearsonr(pred, gold).statistic * 100),
    }
