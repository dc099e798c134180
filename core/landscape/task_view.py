"""The task-plane view: the 1D curve along delta1, the 2D surfaces on the plane, and the signed trajectories.

This view is for trajectories (where the checkpoints of both runs sit, and how far off the plane), not for
comparing flatness across initialisations: its axes are scaled to each initialisation's own |delta1|,
so one unit of ``a`` is a different distance for the two (see ``isoscope.landscape.directions`` for the
scale-invariant view). Every stage is cached under a content key.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from isoscope.cache import make_key
from isoscope.landscape.axes import Plane, Projection, project
from isoscope.landscape.cached import cached_arrays
from isoscope.landscape.records import Metrics, TrajectoryPoint
from isoscope.landscape.results import CURVE, SURFACE
from isoscope.landscape.store import RowStore
from isoscope.landscape.surface import curve_1d, interpolate, surface_2d

Known = dict[tuple[str, int], tuple[torch.Tensor, Projection | None]]  # (run, epoch) -> (theta, projection)


def cached_curve(evaluate, plane: Plane, *, alphas: np.ndarray, eval_key, digests, folder: Path, reuse, bar) -> dict:
    key = make_key("curve", digests["origin"], digests["e1"], eval_key, alphas.tobytes().hex())
    return cached_arrays(
        folder / CURVE,
        key,
        reuse=reuse,
        compute=lambda: curve_1d(evaluate, plane.origin, plane.e1, alphas=alphas, progress=bar),
    )


def cached_surface(evaluate, plane, *, alphas, betas, eval_key, digests, folder: Path, reuse, bar) -> dict:
    key = make_key(
        "surface",
        digests["origin"],
        digests["e1"],
        digests["e2"],
        eval_key,
        alphas.tobytes().hex(),
        betas.tobytes().hex(),
    )
    rows = RowStore(folder, key, enabled=reuse)
    surface = cached_arrays(
        folder / SURFACE,
        key,
        reuse=reuse,
        compute=lambda: surface_2d(evaluate, plane, alphas=alphas, betas=betas, progress=bar, rows=rows),
    )
    rows.clear()  # the full grid is saved (also drops rows left by a run stopped right after saving it)
    return surface


def trajectories(
    evaluate, plane: Plane, surface: dict | None, *, ckpts1, ckpts2, to_task1_space, known: Known | None = None
) -> list[dict]:
    """Signed plane coordinates, off-plane residual, true metrics and the surface under every checkpoint.

    ``surface`` None (no task-plane surface measured): the surface values are NaN. ``to_task1_space`` maps
    a task-2 checkpoint's theta into task 1's parameter space. ``known`` holds thetas (task-1 space) already
    in memory, with their projections when computed, so those checkpoints are not read again. The task-2
    run starts from theta0 itself (same encoder, checked by the caller, and the task-1 head at its initial
    value), so its epoch 0 repeats task 1's epoch-0 row.
    """
    known = known or {}
    rows: list[TrajectoryPoint] = []
    for run, ckpts in (("task1", ckpts1), ("task2", ckpts2)):
        for c in ckpts:
            if run == "task2" and c.epoch == 0 and rows and rows[0].epoch == 0:
                rows.append(replace(rows[0], run=run, epoch_train_loss=c.train_loss))
                continue
            theta, p = known.get((run, c.epoch), (None, None))
            if theta is None:
                theta = c.load(plane.origin.device)  # beside the plane's vectors (their device)
                if run == "task2":
                    theta = to_task1_space(theta)
            if p is None:
                p = project(plane, theta)
            rows.append(
                TrajectoryPoint(
                    run,
                    c.epoch,
                    p,
                    Metrics.of(evaluate(theta)),
                    _under(surface, "train_loss", p),
                    _under(surface, "heldout_loss", p),
                    c.train_loss,
                )
            )
    return [r.to_json() for r in rows]


def _under(surface: dict | None, metric: str, p: Projection) -> float:
    if surface is None:
        return float("nan")
    return interpolate(surface["alpha"], surface["beta"], surface[metric], at=(p.a, p.b))


def curve_summary(curve: dict) -> dict:
    a = curve["alpha"]
    i0, i1 = int(np.argmin(np.abs(a))), int(np.argmin(np.abs(a - 1.0)))
    best = int(np.argmin(curve["train_loss"]))
    return {
        "alpha_min_train_loss": float(a[best]),
        "min_train_loss": float(curve["train_loss"][best]),
        "train_loss_at_0": float(curve["train_loss"][i0]),
        "train_loss_at_1": float(curve["train_loss"][i1]),
        "heldout_acc_at_1": float(curve["heldout_acc"][i1]),
        "alpha_max_heldout_acc": float(a[int(np.argmax(curve["heldout_acc"]))]),
        "max_heldout_acc": float(np.max(curve["heldout_acc"])),
    }


def surface_summary(surface: dict, at: tuple[float, float] = (1.0, 0.0)) -> dict:
    """Minima of the training-loss and held-out-error grids, and both values at the point ``at``."""
    a, b, loss, err = surface["alpha"], surface["beta"], surface["train_loss"], surface["heldout_error"]
    i, j = np.unravel_index(int(np.nanargmin(loss)), loss.shape)
    k, m = np.unravel_index(int(np.nanargmin(err)), err.shape)
    return {
        "grid": [len(a), len(b)],
        "alpha_range": [float(a[0]), float(a[-1])],
        "beta_range": [float(b[0]), float(b[-1])],
        "min_train_loss": float(loss[i, j]),
        "argmin_train_loss": [float(a[i]), float(b[j])],
        "min_heldout_error": float(err[k, m]),
        "argmin_heldout_error": [float(a[k]), float(b[m])],
        "train_loss_at_theta1": interpolate(a, b, loss, at=at),
        "heldout_error_at_theta1": interpolate(a, b, err, at=at),
    }
