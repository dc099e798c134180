"""STS with a calibrator: fit it without labels, score the pairs before and after (like sentence-transformers'
``EmbeddingSimilarityEvaluator``, with the calibration step made explicit).

result = calibrated_sts(emb1, emb2, gold, make_calibrator("whitening"))  # Spearman x100 raw and calibrated
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from isoscope.calibrate import Calibrator, EpochProgressFn, check_array, whitened_dims
from isoscope.errors import InputError
from isoscope.evaluate.similarity import sts_scores


def avg_cosine_or_nan(X: np.ndarray, n_pairs: int = 10_000, seed: int = 0) -> float:
    """Mean cosine of random pairs (isoscope.geometry.metrics.avg_cosine); NaN when undefined (e.g. an all-zero row)."""
    from isoscope.geometry.metrics import avg_cosine

    try:
        return avg_cosine(X, n_pairs=n_pairs, seed=seed)
    except InputError:
        return float("nan")


def fit_size_warning(calibrator: Calibrator, n_fit: int, d: int) -> str | None:
    """A warning when there are too few fit vectors for the dimensions a calibrator whitens (n < 2k)."""
    k = whitened_dims(calibrator, d)
    if k and n_fit < 2 * k:
        advice = "fit on a larger corpus"
        if "flow" not in calibrator.method:
            advice += f" or use whitening:K with K well below {n_fit // 2}"
        return (
            f"{calibrator.method} was fitted on {n_fit} vectors for {k} whitened dimensions; it needs many more "
            f"vectors than dimensions (amplified noise directions make cosine unreliable): {advice}"
        )
    return None


def fit_timed(calibrator: Calibrator, X: np.ndarray, progress: EpochProgressFn | None = None) -> float:
    """Fit ``calibrator`` on ``X`` (a flow reports each epoch to ``progress``); returns the fit seconds."""
    start = time.perf_counter()
    calibrator.fit(X, progress=progress)
    return time.perf_counter() - start


def calibrated_sts(
    emb1: np.ndarray,
    emb2: np.ndarray,
    gold: np.ndarray,
    calibrator: Calibrator,
    fit_vectors: np.ndarray | None = None,
    progress: EpochProgressFn | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """Fit ``calibrator`` (on ``fit_vectors``, default all sentences of the pairs) and score the pairs.

    Returns ``{"method", "spearman", "pearson", "fit_seconds", "bits_per_dim", "avg_cosine_before",
    "avg_cosine_after", "n_fit", "diverged", "raw_spearman", "raw_pearson", "warnings"}``; correlations x100,
    ``bits_per_dim`` is None except for a flow. Average cosines are over random pairs of the evaluated
    sentences (seeded), before and after calibration.
    """
    emb1, emb2 = check_array(emb1, "emb1"), check_array(emb2, "emb2")
    if emb1.shape != emb2.shape:
        raise InputError(f"emb1 and emb2 must have the same shape; got {emb1.shape} and {emb2.shape}")
    both = np.concatenate([emb1, emb2])  # (2n, d)
    fit_on = both if fit_vectors is None else check_array(fit_vectors, "fit_vectors", min_rows=2)
    fit_seconds = fit_timed(calibrator, fit_on, progress)
    n = len(emb1)
    out = calibrator.transform(both)  # (2n, k)
    raw = sts_scores(emb1, emb2, gold)
    cal = sts_scores(out[:n], out[n:], gold)
    return {
        "method": calibrator.method,
        "spearman": cal["spearman"],
        "pearson": cal["pearson"],
        "fit_seconds": fit_seconds,
        "bits_per_dim": getattr(calibrator, "bits_per_dim_", None),
        "avg_cosine_before": avg_cosine_or_nan(both, seed=seed),
        "avg_cosine_after": avg_cosine_or_nan(out, seed=seed),
        "n_fit": len(fit_on),
        "diverged": bool(getattr(calibrator, "diverged_", False)),
        "raw_spearman": raw["spearman"],
        "raw_pearson": raw["pearson"],
        "warnings": [w for w in [fit_size_warning(calibrator, len(fit_on), both.shape[1])] if w],
    }
