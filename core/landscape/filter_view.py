"""The filter-normalised view around theta1: 1D curves along several random directions, a 2D surface on the
first two, and the sharpness (Li et al. 2018; the math is in ``isoscope.landscape.directions``).

Both initialisations use the same alpha range, the same number of directions and the same sharpness
alphas, so their curves and surfaces compare by eye and their sharpness numbers compare directly. Each
direction's curve and each surface row is saved as it finishes, so an interrupted run resumes.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from isoscope.cache import make_key
from isoscope.landscape.cached import Counted, cached_arrays, cached_json
from isoscope.landscape.directions import (
    DirectionPlane,
    curve_alphas,
    direction_seed,
    filter_normalized_direction,
    sharpness,
)
from isoscope.landscape.flat import FlatLayout
from isoscope.landscape.records import METRICS, FilterDirections
from isoscope.landscape.results import FILTER_CURVES, FILTER_JSON, FILTER_SURFACE
from isoscope.landscape.store import RowStore
from isoscope.landscape.surface import check_grid, curve_1d, interpolate, surface_2d

log = logging.getLogger(__name__)

EvalFn = Callable[[torch.Tensor], dict[str, float]]
ProgressFn = Callable[[int, int], None]
Bar = Callable[[str], ProgressFn | None]
VERSION = "filter-view-1"
NORMALISATION = "filter (rows of weight matrices and embedding tables); 1-D parameters zero"


@dataclass
class FilterConfig:
    """How the filter-normalised view is measured (the same for both initialisations)."""

    directions: int = 4  # random directions for the 1D curves and the sharpness (the first two span the 2D surface)
    range: tuple[float, float] = (-1.0, 1.0)  # alpha range of the curves and of both surface axes
    points_1d: int = 9  # evenly spaced points of each 1D curve (plus 0 and the sharpness alphas)
    grid: int | None = None  # points per axis of the 2D surface; None: the task-plane grid size
    alphas: tuple[float, ...] = (0.1, 0.25)  # sharpness at +-alpha (below where a fine-tuned MiniLM reaches chance)

    def validate(self) -> FilterConfig:
        from isoscope.errors import InputError

        if self.directions < 2:
            raise InputError("need at least 2 filter-normalised directions (the 2D surface uses two)")
        if not self.range[0] < 0.0 < self.range[1]:
            raise InputError(
                f"the filter-normalised range must contain 0 (theta1), got {self.range[0]} {self.range[1]}"
            )
        if self.points_1d < 3:
            raise InputError("need at least 3 points per filter-normalised curve")
        if self.grid is not None:
            check_grid(self.grid)
        if not self.alphas or any(not 0.0 < a <= max(-self.range[0], self.range[1]) for a in self.alphas):
            raise InputError("sharpness alphas must be > 0 and inside the filter-normalised range")
        return self

    @property
    def signed_alphas(self) -> list[float]:
        """The sharpness alphas with both signs, so the first-order term cancels."""
        return sorted({-a for a in self.alphas} | set(self.alphas))

    def curve_alphas(self) -> np.ndarray:
        return curve_alphas(self.range, self.points_1d, self.signed_alphas)


def measure(
    evaluate: EvalFn,
    layout: FlatLayout,
    theta: torch.Tensor,
    *,
    theta_digest: str,
    config: FilterConfig,
    grid: int,
    seed: int,
    eval_key: str,
    folder: Path,
    reuse: bool,
    bar: Bar,
) -> dict:
    """The filter-normalised section of one initialisation's results (cached under a content key)."""
    seeds = [direction_seed(seed, k) for k in range(config.directions)]
    alphas = config.curve_alphas()  # (n,)
    n = config.grid or grid
    grid_alphas = np.linspace(*config.range, n)  # (n,)
    base = make_key(VERSION, theta_digest, layout.digest(), eval_key, *seeds)
    curve_key = make_key(base, "curves", alphas.tobytes().hex())
    surface_key = make_key(base, "surface", grid_alphas.tobytes().hex())
    key = make_key(curve_key, surface_key, *config.signed_alphas)
    directions: dict[int, torch.Tensor] = {}

    def direction(k: int) -> torch.Tensor:
        if k not in directions:
            directions[k] = filter_normalized_direction(layout, theta, seeds[k])
        return directions[k]

    def compute() -> dict:
        t = time.perf_counter()
        curves = _cached_curves(
            evaluate, theta, direction, config.directions, alphas, curve_key, folder, reuse, bar("filter 1D")
        )
        seconds_curves = time.perf_counter() - t
        t = time.perf_counter()
        plane = DirectionPlane(theta, direction(0), direction(1))
        surface, calls = _cached_surface(evaluate, plane, grid_alphas, surface_key, folder, reuse, bar)
        seconds_surface = time.perf_counter() - t
        return {
            "directions": FilterDirections(
                n_directions=config.directions,
                seeds=tuple(seeds),
                normalisation=NORMALISATION,
                range=(float(config.range[0]), float(config.range[1])),
                **plane.summary(),
            ).to_json(),
            "curve_1d": curve_summary(curves),
            "surface": filter_surface_summary(surface),
            "sharpness": sharpness(alphas, curves["train_loss"], config.signed_alphas).summary(),
            "heldout_sharpness": sharpness(alphas, curves["heldout_loss"], config.signed_alphas).summary(),
            "seconds_curves": seconds_curves,
            "seconds_surface": seconds_surface,
            "surface_points_computed": calls,
        }

    return cached_json(folder / FILTER_JSON, key, reuse=reuse, compute=compute)


def _cached_surface(evaluate, plane, grid_alphas, surface_key: str, folder: Path, reuse: bool, bar: Bar):
    """The surface on the first two directions (rows saved as they finish) and the points it computed."""
    counted = Counted(evaluate)
    rows = RowStore(folder, surface_key, enabled=reuse)
    surface = cached_arrays(
        folder / FILTER_SURFACE,
        surface_key,
        reuse=reuse,
        compute=lambda: surface_2d(
            counted, plane, alphas=grid_alphas, betas=grid_alphas, progress=bar("filter surface"), rows=rows
        ),
    )
    rows.clear()
    return surface, counted.calls


def _cached_curves(
    evaluate: EvalFn,
    theta: torch.Tensor,
    direction: Callable[[int], torch.Tensor],
    n_directions: int,
    alphas: np.ndarray,
    key: str,
    folder: Path,
    reuse: bool,
    bar: ProgressFn | None,
) -> dict[str, np.ndarray]:
    """Metric arrays (k, n) along each of the k directions, one saved row per finished direction; ``alpha`` (n,)."""

    def compute() -> dict[str, np.ndarray]:
        rows = RowStore(folder, key, enabled=reuse)
        found: list[dict[str, np.ndarray]] = []
        for k in range(n_directions):
            row = rows.get(k)
            if row is None or any(v.shape != alphas.shape for v in row.values()):
                row = curve_1d(evaluate, theta, direction(k), alphas=alphas)
                row.pop("alpha")
                rows.put(k, row)
            found.append(row)
            if bar is not None:
                bar(k + 1, n_directions)
        rows.clear()
        out = {m: np.stack([r[m] for r in found]) for m in found[0]}  # each (k, n)
        out["alpha"] = alphas
        return out

    return cached_arrays(folder / FILTER_CURVES, key, reuse=reuse, compute=compute)


def curve_summary(curves: dict[str, np.ndarray]) -> dict[str, list[float]]:
    """Mean and sample sd over the directions at every alpha of the 1D curves (what ``--json`` prints)."""
    k = curves["train_loss"].shape[0]
    out: dict[str, list[float]] = {"alpha": np.asarray(curves["alpha"]).tolist()}
    for m in METRICS:
        v = np.asarray(curves[m], np.float64)  # (k, n)
        out[f"{m}_mean"] = v.mean(axis=0).tolist()
        out[f"{m}_sd"] = (v.std(axis=0, ddof=1) if k > 1 else np.full(v.shape[1], np.nan)).tolist()
    return out


def filter_surface_summary(surface: dict[str, np.ndarray]) -> dict[str, object]:
    """Range and extremes of the filter-normalised training-loss grid; theta1 is its origin (0, 0)."""
    a, b, loss, err = surface["alpha"], surface["beta"], surface["train_loss"], surface["heldout_error"]
    at0 = interpolate(a, b, loss, at=(0.0, 0.0))
    return {
        "grid": [len(a), len(b)],
        "alpha_range": [float(a[0]), float(a[-1])],
        "beta_range": [float(b[0]), float(b[-1])],
        "train_loss_at_theta1": at0,
        "heldout_error_at_theta1": interpolate(a, b, err, at=(0.0, 0.0)),
        "min_train_loss": float(np.nanmin(loss)),
        "max_train_loss": float(np.nanmax(loss)),
        "mean_train_loss_increase": float(np.nanmean(loss) - at0),
    }
