"""Synthetic vectors with known structure for the calibrator tests."""

from __future__ import annotations

import numpy as np

from isoscope.calibrate import Whitening

D = 8
# Flow schedule for the 8-d synthetic data (the default schedule is tuned for 384-d sentence vectors).
SYNTH_FLOW = {"epochs": 30, "lr": 1e-3, "hidden": 64, "linear": "lu", "coupling": "affine", "batch_size": 512}


def distorted_gaussian(n: int, seed: int) -> np.ndarray:
    """z ~ N(0, I_8) -> u = z + 0.15 z^3 (heavy-tailed, non-Gaussian) -> skewed anisotropic map + offset."""
    z = np.random.default_rng(seed).standard_normal((n, D))  # (n, 8)
    u = z + 0.15 * z**3
    fixed = np.random.default_rng(123)
    q1, _ = np.linalg.qr(fixed.standard_normal((D, D)))
    q2, _ = np.linalg.qr(fixed.standard_normal((D, D)))
    A = q1 @ np.diag(np.geomspace(5, 0.05, D)) @ q2  # condition number 100
    return u @ A + 3.0 * fixed.standard_normal(D)  # (n, 8)


def embedding_like(n: int, d: int = 48, seed: int = 0) -> np.ndarray:
    """Sentence-vector-like cloud: low-rank factors, a LayerNorm (exactly rank d-1), gain, offset (a cone)."""
    rng = np.random.default_rng(seed)
    h = rng.standard_normal((n, 12)) @ rng.standard_normal((12, d)) + 0.3 * rng.standard_normal((n, d))
    h = np.tanh(h) + 0.2 * h**2  # non-linear
    h = (h - h.mean(1, keepdims=True)) / h.std(1, keepdims=True)  # LayerNorm: one direction has zero variance
    gain = np.geomspace(3.0, 0.05, d)
    return (h * gain + 2.0 * rng.standard_normal(d)).astype(np.float32)  # (n, d)


def gaussian_nll(whitening: Whitening, X: np.ndarray) -> float:
    """Mean held-out NLL (nats) of X under the Gaussian that whitening fits."""
    z = whitening.transform(X).astype(np.float64)
    return float(np.mean(0.5 * (z * z).sum(1) + 0.5 * D * np.log(2 * np.pi)) - whitening.log_abs_det())


def excess_kurtosis(Z: np.ndarray) -> float:
    """Mean over dimensions of |E[z^4] - 3| (0 for a standard normal)."""
    return float(np.mean(np.abs((Z.astype(np.float64) ** 4).mean(0) - 3.0)))
