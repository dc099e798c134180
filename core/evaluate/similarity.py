"""STS evaluation: each pair's cosine against gold scores (Spearman and Pearson x100), and how a pair moves in the
similarity ranking. The per-pair primitives (``cosine_pairs``, ``correlations``) are ``isoscope.geometry.pairs``."""

from __future__ import annotations

import numpy as np

from isoscope.geometry.pairs import correlations, cosine_pairs


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
