"""Similarity and STS evaluation: cosine per pair, Spearman and Pearson (x100) against gold scores."""

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


def sts_scores(emb1: np.ndarray, emb2: np.ndarray, gold: np.ndarray) -> dict[str, float]:
    """The one STS score in Isoscope: Spearman and Pearson (x100) of each pair's cosine against the gold scores.
    (n, d), (n, d), (n,) -> {"spearman", "pearson"}. Every page, command and benchmark scores pairs with it."""
    return correlations(cosine_pairs(emb1, emb2), gold)


def sts_evaluate(emb1: np.ndarray, emb2: np.ndarray, gold: np.ndarray | None) -> dict[str, object]:
    """Cosines of the pairs and, when gold scores exist, their ``sts_scores``."""
    cos = cosine_pairs(emb1, emb2)
    result: dict[str, object] = {"cosine": cos, "n_pairs": len(cos)}
    if gold is not None:
        result.update(correlations(cos, gold))
    return result


def rank_shift(before: np.ndarray, after: np.ndarray) -> np.ndarray:
    """How many places each pair moved in the similarity ranking (positive: moved up)."""
    r_before = np.argsort(np.argsort(-before, kind="stable"), kind="stable")
    r_after = np.argsort(np.argsort(-after, kind="stable"), kind="stable")
    return r_before - r_after
