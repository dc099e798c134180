"""Fitting a calibrator: how many vectors a method needs for the dimensions it whitens (the one too-small rule,
and the one warning every page and command gives in its words), the safe default a page picks instead, and a
timed fit.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

    from isoscope.calibrate.base import Calibrator, EpochProgressFn


SAFE_COMPONENTS = 64  # whitening:K's default K, lowered to what a small fit set supports (safe_components)


def fit_too_small(calibrator: Calibrator, n_fit: int, d: int) -> bool:
    """Whether ``n_fit`` vectors are too few for the dimensions ``calibrator`` whitens (n < 2k)."""
    k = calibrator.whitened_dims(d)
    return bool(k) and n_fit < 2 * k


def safe_components(n_fit: int, d: int) -> int:
    """The K of whitening:K that ``n_fit`` vectors of dimension ``d`` support with room to spare (n >= 4K):
    ``SAFE_COMPONENTS``, fewer on a small fit set, at least 2 and at most ``d``."""
    return max(2, min(SAFE_COMPONENTS, d, n_fit // 4))


def safe_method(method: str, n_fit: int, d: int) -> str:
    """``method`` when ``n_fit`` vectors suffice for it, else ``whitening:K`` with ``safe_components``: the
    default a page picks instead of showing a degenerate fit as a success (``fit_size_warning`` says why)."""
    from isoscope.calibrate.factory import make_calibrator

    if method == "none" or not fit_too_small(make_calibrator(method), n_fit, d):
        return method
    return f"whitening:{safe_components(n_fit, d)}"


def fit_size_warning(calibrator: Calibrator, n_fit: int, d: int) -> str | None:
    """The one warning (every page and command says it in these words) when there are too few fit vectors for
    the dimensions a calibrator whitens (n < 2k)."""
    k = calibrator.whitened_dims(d)
    if fit_too_small(calibrator, n_fit, d):
        advice = "fit on a larger corpus"
        if not calibrator.trains_for_epochs:
            advice += f" or use whitening:K with K well below {n_fit // 2} (e.g. whitening:{safe_components(n_fit, d)})"
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
