"""The measuring steps of one initialisation, after its two training runs (``isoscope.landscape.pipeline``).

Each step reads the trained runs on the task plane (``InitRun``), adds its entries and its seconds to the
initialisation's results, and caches its work under the initialisation's folder by content keys.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from isoscope.cache import make_key
from isoscope.landscape import filter_view, task_view
from isoscope.landscape.cached import Counted, cached_json
from isoscope.landscape.classifier import Evaluator
from isoscope.landscape.curvature import grid_curvature, hessian_top_eigenvalue
from isoscope.landscape.flat import FlatLayout
from isoscope.landscape.learning import learning_curve, overfitting
from isoscope.landscape.records import Hessian, LearningCurve, Metrics
from isoscope.landscape.rollback import rollback_table
from isoscope.landscape.train import Checkpoint

if TYPE_CHECKING:
    from isoscope.landscape.pipeline import LandscapeConfig


@dataclass
class InitRun:
    """One initialisation's trained runs on the task plane: what every measuring step reads."""

    init: str
    model: torch.nn.Module
    layout: FlatLayout
    ckpts1: list[Checkpoint]
    ckpts2: list[Checkpoint]
    n_enc: int  # length of the encoder block, which leads the flat vector
    theta0: torch.Tensor
    theta1: torch.Tensor
    theta2: torch.Tensor  # the task-2 encoder with the task-1 head at its initial value
    plane: Any  # isoscope.landscape.axes.Plane
    p1: Any  # theta1's coordinates on the plane
    p2: Any
    evaluate: Evaluator
    digests: dict
    folder: Path


def to_task1_space(theta_task2: torch.Tensor, theta0: torch.Tensor, n_encoder: int) -> torch.Tensor:
    """Task-2 encoder weights with the task-1 head at its initial value (see the pipeline's docstring)."""
    return torch.cat([theta_task2[:n_encoder], theta0[n_encoder:]])


def task_view_step(run: InitRun, res: dict, eval_set, *, alphas, betas, config: LandscapeConfig, stage) -> dict:
    """The 1D curve along delta1 and the surface on the plane; returns the surface."""
    t = time.perf_counter()
    curve = task_view.cached_curve(
        run.evaluate,
        run.plane,
        alphas=config.alphas_1d,
        eval_key=eval_set.key,
        digests=run.digests,
        folder=run.folder,
        reuse=config.reuse,
        bar=stage.bar("1D curve", run.init),
    )
    res["curve_1d"] = task_view.curve_summary(curve)
    res["seconds_curve"] = time.perf_counter() - t
    t = time.perf_counter()
    counted = Counted(run.evaluate)
    surface = task_view.cached_surface(
        counted,
        run.plane,
        alphas=alphas,
        betas=betas,
        eval_key=eval_set.key,
        digests=run.digests,
        folder=run.folder,
        reuse=config.reuse,
        bar=stage.bar("surface", run.init),
    )
    res["seconds_surface"] = time.perf_counter() - t
    res["surface_points_computed"] = counted.calls
    res["surface_seconds_per_point"] = res["seconds_surface"] / counted.calls if counted.calls else None
    res["surface"] = task_view.surface_summary(surface)
    return surface


def trajectory_step(run: InitRun, res: dict, surface: dict | None, *, reuse: bool) -> None:
    """Both runs' checkpoints on the plane, and the metrics at theta0, theta1 and theta2."""
    t = time.perf_counter()
    ckpts1, ckpts2 = run.ckpts1, run.ckpts2
    traj_key = make_key(
        "trajectory",
        str(surface["key"]) if surface is not None else "no-surface",
        *(c.digest for c in ckpts1),
        "|",
        *(c.digest for c in ckpts2),
    )
    known = {
        ("task1", 0): (run.theta0, None),
        ("task1", ckpts1[-1].epoch): (run.theta1, run.p1),
        ("task2", ckpts2[-1].epoch): (run.theta2, run.p2),
    }
    res["trajectory"] = cached_json(
        run.folder / "trajectory.json",
        traj_key,
        reuse=reuse,
        compute=lambda: task_view.trajectories(
            run.evaluate,
            run.plane,
            surface,
            ckpts1=ckpts1,
            ckpts2=ckpts2,
            to_task1_space=lambda th: to_task1_space(th, run.theta0, run.n_enc),
            known=known,
        ),
    )
    by_epoch = {(r["run"], r["epoch"]): r for r in res["trajectory"]}
    res["theta0"] = Metrics.of(by_epoch[("task1", 0)]).to_json()
    res["theta1"] = Metrics.of(by_epoch[("task1", ckpts1[-1].epoch)]).to_json()
    res["theta2"] = Metrics.of(by_epoch[("task2", ckpts2[-1].epoch)]).to_json()
    res["seconds_trajectory"] = time.perf_counter() - t


def rollback_step(run: InitRun, res: dict, eval_key: str, num_layers: int, *, reuse: bool, stage) -> None:
    """The layer rollback table from theta1 back towards theta0 (after the trajectory: it reuses theta1's row)."""
    t = time.perf_counter()
    res["rollback"] = cached_json(
        run.folder / "rollback.json",
        make_key("rollback", run.digests["origin"], run.ckpts1[-1].digest, eval_key, num_layers),
        reuse=reuse,
        compute=lambda: rollback_table(
            run.evaluate,
            run.layout,
            theta0=run.theta0,
            theta1=run.theta1,
            num_layers=num_layers,
            progress=stage.bar("rollback", run.init),
            at_theta1=res["theta1"],  # the trajectory evaluated theta1 already
        ),
    )
    res["seconds_rollback"] = time.perf_counter() - t


def flatness_step(
    run: InitRun, res: dict, surface: dict | None, grid: tuple, *, config: LandscapeConfig, eval_key: str, stage
) -> None:
    """Curvature of the task-plane grids at theta1 (``grid`` = (alphas, betas)) and the top Hessian eigenvalue."""
    t = time.perf_counter()
    alphas, betas = grid
    res["flatness"] = {
        "grid_train_loss": _grid_curvature(alphas, betas, surface, "train_loss", run.plane.gram),
        "grid_heldout_loss": _grid_curvature(alphas, betas, surface, "heldout_loss", run.plane.gram),
        "hessian": _cached_hessian(run, config=config, eval_key=eval_key, stage=stage),
    }
    res["seconds_flatness"] = time.perf_counter() - t


def filter_step(run: InitRun, res: dict, eval_key: str, n: int, *, config: LandscapeConfig, stage) -> None:
    """The filter-normalised view around theta1 on an ``n``-point grid."""
    t = time.perf_counter()
    res["filter_normalized"] = filter_view.measure(
        run.evaluate,
        run.layout,
        run.theta1,
        theta_digest=run.ckpts1[-1].digest,
        config=config.filter_config,
        grid=n,
        seed=config.train.seed,
        eval_key=eval_key,
        folder=run.folder,
        reuse=config.reuse,
        bar=stage.factory(run.init),
    )
    res["seconds_filter_normalized"] = time.perf_counter() - t


def learning_step(run: InitRun, res: dict, curve_set, *, reuse: bool, stage) -> None:
    """Every task-1 checkpoint on the learning-curve set, and the overfitting summary."""
    t = time.perf_counter()
    evaluate = Evaluator(run.model, run.layout, curve_set)
    ckpts1 = run.ckpts1
    key = make_key("learning", curve_set.key, *(c.digest for c in ckpts1))

    def compute() -> dict:
        known = {0: run.theta0, ckpts1[-1].epoch: run.theta1}
        rows = learning_curve(evaluate, ckpts1, progress=stage.bar("learning curve", run.init), known=known)
        return LearningCurve(curve_set.n_train, curve_set.n_heldout, tuple(rows), overfitting(rows)).to_json()

    res["learning_curve"] = cached_json(run.folder / "learning_curve.json", key, reuse=reuse, compute=compute)
    res["seconds_learning_curve"] = time.perf_counter() - t


def _grid_curvature(alphas, betas, surface: dict | None, metric: str, gram) -> dict:
    """Curvature of a task-plane grid at theta1 = (1, 0), per unit parameter length; not scale-invariant."""
    if surface is None:
        out: dict = {"ok": False, "reason": "no task-plane surface (directions: filter)"}
    else:
        out = grid_curvature(alphas, betas, surface[metric], at=(1.0, 0.0), gram=gram)
    out["scale_invariant"] = False
    return out


def _cached_hessian(run: InitRun, *, config: LandscapeConfig, eval_key: str, stage) -> dict:
    """Top Hessian eigenvalue at theta1, keyed by its checkpoint's digest."""
    if config.hessian_iters == 0:
        return dict(Hessian.SKIPPED)
    evaluate = run.evaluate
    size = min(config.hessian_size, evaluate.eval_set.n_train)
    key = make_key(
        "hessian", run.ckpts1[-1].digest, eval_key, size, config.hessian_iters, config.hessian_tol, config.train.seed
    )

    def compute() -> dict:
        t = time.perf_counter()
        found = hessian_top_eigenvalue(
            lambda theta: evaluate.train_loss(theta, size),
            run.theta1,
            iters=config.hessian_iters,
            tol=config.hessian_tol,
            seed=config.train.seed,
            progress=stage.bar("hessian", run.init),
        )
        return Hessian(
            eigenvalue=found.eigenvalue,
            iterations=found.iterations,
            converged=found.converged,
            relative_change=found.relative_change,
            n_examples=size,
            history=tuple(found.history),
            seconds=time.perf_counter() - t,
        ).to_json()

    # field "result": hessian.json files written before keep hitting the cache (those lack scale_invariant:
    # an eigenvalue in raw parameter units changes when a layer is rescaled, so it is never scale-invariant)
    result = cached_json(run.folder / "hessian.json", key, reuse=config.reuse, compute=compute, field="result")
    return {**result, "scale_invariant": Hessian.scale_invariant}
