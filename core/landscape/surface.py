"""Loss along a line and over a plane, for any function of a flat parameter vector.

``evaluate(theta) -> {"metric": float}`` is all these functions know about the model: the landscape
pipeline passes a transformer evaluator, the tests an analytic quadratic, and both run the same code.
Points are written into one preallocated vector (no allocation per point) under ``torch.inference_mode``.
Grids are indexed ``[i, j] = (alphas[i], betas[j])``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np
import torch

from isoscope.landscape.store import RowStore

log = logging.getLogger(__name__)

EvalFn = Callable[[torch.Tensor], dict[str, float]]
ProgressFn = Callable[[int, int], None]  # (done, total)

MIN_GRID, MAX_GRID = 3, 61


class PlaneLike(Protocol):
    """origin + a * e1 + b * e2: the task plane (``axes.Plane``) or two random directions (``directions.DirectionPlane``)."""

    origin: torch.Tensor

    def point(self, a: float, b: float, out: torch.Tensor | None = None) -> torch.Tensor: ...


def curve_1d(
    evaluate: EvalFn,
    origin: torch.Tensor,
    direction: torch.Tensor,
    *,
    alphas: Sequence[float],
    progress: ProgressFn | None = None,
) -> dict[str, np.ndarray]:
    """Metrics at origin + a * direction for each a. Returns name -> (len(alphas),) and ``alpha``."""
    alphas = np.asarray(alphas, np.float64)
    rows: list[dict[str, float]] = []
    with torch.inference_mode():
        work = torch.empty_like(origin)  # (p,)
        for k, a in enumerate(alphas):
            torch.add(origin, direction, alpha=float(a), out=work)
            rows.append(evaluate(work))
            if progress is not None:
                progress(k + 1, len(alphas))
    out = {name: np.array([r[name] for r in rows], np.float64) for name in rows[0]} if rows else {}
    out["alpha"] = alphas
    return out


def surface_2d(
    evaluate: EvalFn,
    plane: PlaneLike,
    *,
    alphas: Sequence[float],
    betas: Sequence[float],
    progress: ProgressFn | None = None,
    rows: RowStore | None = None,
) -> dict[str, np.ndarray]:
    """Metrics on theta0 + a e1 + b e2 over the grid. Returns name -> (n_a, n_b) plus ``alpha``, ``beta``.

    With a RowStore, each finished row (fixed a) is saved as it completes and rows already saved are
    read back, so an interrupted run resumes where it stopped.
    """
    alphas = np.asarray(alphas, np.float64)
    betas = np.asarray(betas, np.float64)
    n_a, n_b = len(alphas), len(betas)
    total = n_a * n_b
    done = 0
    grid: dict[str, np.ndarray] = {}
    with torch.inference_mode():
        work = torch.empty_like(plane.origin)  # (p,)
        for i, a in enumerate(alphas):
            row = rows.get(i) if rows is not None else None
            if row is None or any(v.shape != (n_b,) for v in row.values()):
                values: list[dict[str, float]] = []
                for b in betas:
                    values.append(evaluate(plane.point(float(a), float(b), out=work)))
                    if progress is not None:
                        progress(done + len(values), total)
                row = {name: np.array([v[name] for v in values], np.float64) for name in values[0]}
                if rows is not None:
                    rows.put(i, row)
            for name, v in row.items():
                grid.setdefault(name, np.full((n_a, n_b), np.nan))[i] = v
            done += n_b
            if progress is not None:
                progress(done, total)
    grid["alpha"], grid["beta"] = alphas, betas
    return grid


def grid_size_for_budget(seconds_per_point: float, budget_seconds: float, *, lo: int = 5, hi: int = 41) -> int:
    """Largest odd n with n * n points inside the budget, clipped to [lo, hi]."""
    if seconds_per_point <= 0 or budget_seconds <= 0:
        raise ValueError("seconds_per_point and budget_seconds must be > 0")
    n = int(np.floor(np.sqrt(budget_seconds / seconds_per_point)))
    n = max(lo, min(hi, n))
    return n if n % 2 == 1 else n - 1 if n - 1 >= lo else n + 1


def check_grid(n: int) -> int:
    if not MIN_GRID <= n <= MAX_GRID:
        raise ValueError(f"grid size must be between {MIN_GRID} and {MAX_GRID}, got {n}")
    return n


def interpolate(alphas: np.ndarray, betas: np.ndarray, values: np.ndarray, *, at: tuple[float, float]) -> float:
    """Bilinear interpolation of a grid ``values[i, j] = f(alphas[i], betas[j])`` at the point ``at`` = (alpha,
    beta); NaN outside the grid."""
    a, b = at
    alphas, betas = np.asarray(alphas), np.asarray(betas)
    if not (alphas[0] <= a <= alphas[-1] and betas[0] <= b <= betas[-1]):
        return float("nan")
    i = int(np.clip(np.searchsorted(alphas, a, side="right") - 1, 0, len(alphas) - 2))
    j = int(np.clip(np.searchsorted(betas, b, side="right") - 1, 0, len(betas) - 2))
    ta = (a - alphas[i]) / (alphas[i + 1] - alphas[i])
    tb = (b - betas[j]) / (betas[j + 1] - betas[j])
    v = values[i : i + 2, j : j + 2]  # (2, 2)
    return float((1 - ta) * (1 - tb) * v[0, 0] + ta * (1 - tb) * v[1, 0] + (1 - ta) * tb * v[0, 1] + ta * tb * v[1, 1])
