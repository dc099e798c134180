"""Flat tables (pandas) of typed landscape results, for the page, its downloads and the README.

Everything here reads ``isoscope.landscape.results`` objects, whose fields are checked when the files are
read, so no table has a silently missing column: a schema change fails in ``load_results``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from isoscope.landscape.results import METRICS, Grid, InitResults, LandscapeResults, Summary
from isoscope.landscape.seeds import HEADLINE_BY_NAME


def axes_row(r: InitResults) -> dict[str, object]:
    """One initialisation's axes, theta2 coordinates, flatness and metrics at theta1."""
    fl, hess = r.flatness, r.flatness.hessian
    fn = r.filter_normalized
    return {
        "init": r.init,
        "norm_delta1": r.axes.norm_delta1,
        "norm_delta2": r.axes.norm_delta2,
        "cos_delta1_delta2": r.axes.cos_delta1_delta2,
        "kept_fraction_delta2": r.axes.kept_fraction,
        "cos_e1_e2": r.axes.cos_e1_e2,
        "theta2_a": r.theta2_coords.a,
        "theta2_b": r.theta2_coords.b,
        "theta2_residual": r.theta2_coords.residual,
        "hessian_top_eigenvalue": hess.eigenvalue if hess else float("nan"),
        "hessian_converged": hess.converged if hess else None,
        "hessian_iterations": hess.iterations if hess else None,
        "hessian_examples": hess.n_examples if hess else None,
        "grid_curvature_max": fl.grid_train_loss.max,
        "grid_curvature_min": fl.grid_train_loss.min,
        "grid_heldout_curvature_max": fl.grid_heldout_loss.max,
        "grid_fit_rmse": fl.grid_train_loss.fit_rmse,
        "filter_sharpness": fn.sharpness.mean if fn else float("nan"),
        "filter_sharpness_sd": fn.sharpness.sd if fn else float("nan"),
        "filter_sharpness_heldout": fn.heldout_sharpness.mean if fn else float("nan"),
        "filter_directions": fn.n_directions if fn else 0,
        **{f"theta1_{m}": getattr(r.theta1, m) for m in METRICS},
        "n_params": r.n_params,
    }


def _grid_frame(init: str, grid: Grid | None, **extra: object) -> pd.DataFrame | None:
    if grid is None:
        return None
    if grid.beta is not None:  # 2D: one row per (alpha, beta)
        a, b = np.meshgrid(grid.alpha, grid.beta, indexing="ij")  # (n_a, n_b)
        cols = {k: np.asarray(v).ravel() for k, v in grid.values.items()}
        return pd.DataFrame({"init": init, **extra, "alpha": a.ravel(), "beta": b.ravel(), **cols})
    values = {k: np.asarray(v) for k, v in grid.values.items()}
    if next(iter(values.values())).ndim == 1:
        return pd.DataFrame({"init": init, **extra, "alpha": grid.alpha, **values})
    k, n = next(iter(values.values())).shape  # (directions, alphas): one row per (direction, alpha)
    return pd.DataFrame(
        {
            "init": init,
            **extra,
            "direction": np.repeat(np.arange(k), n),
            "alpha": np.tile(grid.alpha, k),
            **{m: v.ravel() for m, v in values.items()},
        }
    )


def _cat(frames: list[pd.DataFrame | None]) -> pd.DataFrame:
    kept = [f for f in frames if f is not None and not f.empty]
    return pd.concat(kept, ignore_index=True) if kept else pd.DataFrame()


def trajectory_table(res: LandscapeResults) -> pd.DataFrame:
    frames = []
    for init, r in res.inits.items():
        t = r.trajectory_frame()
        t.insert(0, "init", init)
        t["surface_minus_true_train_loss"] = t["surface_train_loss"] - t["train_loss"]
        t["surface_minus_true_heldout_loss"] = t["surface_heldout_loss"] - t["heldout_loss"]
        frames.append(t)
    return _cat(frames)


def rollback_table(res: LandscapeResults) -> pd.DataFrame:
    frames = []
    for init, r in res.inits.items():
        rb = r.rollback_frame()
        rb.insert(0, "init", init)
        frames.append(rb)
    return _cat(frames)


def grid_tables(res: LandscapeResults) -> dict[str, pd.DataFrame]:
    """Long tables of the task-plane curve and surface and of the filter-normalised curves and surface."""
    out = {}
    for name, get in (
        ("curves", lambda r: r.curve),
        ("surfaces", lambda r: r.surface),
        ("filter_curves", lambda r: r.filter_normalized.curves if r.filter_normalized else None),
        ("filter_surfaces", lambda r: r.filter_normalized.surface if r.filter_normalized else None),
    ):
        out[name] = _cat([_grid_frame(init, get(r)) for init, r in res.inits.items()])
    return out


def filter_bands(filter_curves: pd.DataFrame) -> pd.DataFrame:
    """Filter-normalised curves (a ``grid_tables`` frame) as mean and sample sd over directions per (init, alpha)."""
    if filter_curves.empty:
        return pd.DataFrame()
    g = filter_curves.groupby(["init", "alpha"], sort=False)[list(METRICS)]
    return g.mean().add_suffix("_mean").join(g.std(ddof=1).add_suffix("_sd")).reset_index()


def sharpness_table(res: LandscapeResults) -> pd.DataFrame:
    """Per initialisation: each flatness number, its spread over directions, and whether it is scale-invariant."""
    rows = []
    for init, r in res.inits.items():
        hess, fn = r.flatness.hessian, r.filter_normalized
        if fn is not None:
            for label, s in (("train loss", fn.sharpness), ("held-out loss", fn.heldout_sharpness)):
                rows.append(
                    {
                        "init": init,
                        "measure": f"filter-normalised sharpness ({label})",
                        "value": s.mean,
                        "sd": s.sd,
                        "spread_over": f"{s.n_directions} directions",
                        "alphas": " ".join(f"{a:g}" for a in s.alphas),
                        "scale_invariant": s.scale_invariant,
                    }
                )
        if hess is not None:
            rows.append(
                {
                    "init": init,
                    "measure": "top Hessian eigenvalue",
                    "value": hess.eigenvalue,
                    "sd": float("nan"),
                    "spread_over": "",
                    "alphas": "",
                    "scale_invariant": hess.scale_invariant,
                }
            )
    return pd.DataFrame(rows)


def learning_table(res: LandscapeResults) -> pd.DataFrame:
    """The learning curves: over seeds (mean and sd per epoch) when the summary has them, else the one run."""
    seeds = res.summary.seeds
    frames = []
    for init, r in res.inits.items():
        band = seeds.learning.get(init) if seeds is not None else None
        if band is not None:
            cols = {k: np.asarray(v) for k, v in band.items() if k != "epoch"}
            frames.append(pd.DataFrame({"init": init, "epoch": np.asarray(band["epoch"]).astype(int), **cols}))
        elif r.learning_curve is not None:
            f = r.learning_curve.frame()
            renamed = {c: f"{c}_mean" for c in f.columns if c != "epoch"}
            f = f.rename(columns=renamed)
            for c in renamed.values():
                f[c.replace("_mean", "_sd")] = np.nan
            f.insert(0, "init", init)
            frames.append(f)
    return _cat(frames)


def seed_table(res: LandscapeResults) -> pd.DataFrame:
    """Every headline number per initialisation: mean, sd and n over seeds, label and scale invariance."""
    seeds = res.summary.seeds
    if seeds is None:
        return pd.DataFrame()
    rows = []
    for init, stats in seeds.stats.items():
        for name, s in stats.items():
            h = HEADLINE_BY_NAME.get(name)
            rows.append(
                {
                    "init": init,
                    "headline": name,
                    "label": h.label if h else name,
                    "mean": s.mean,
                    "sd": s.sd,
                    "n": s.n,
                    "scale_invariant": h.scale_invariant if h else None,
                }
            )
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class ResultTables:
    """A finished experiment read back (typed: a schema change fails loudly) with every table the page shows."""

    out_dir: str
    results: LandscapeResults
    axes: pd.DataFrame  # one row per init: axes, theta1/theta2 coordinates, flatness, metrics at theta1
    trajectory: pd.DataFrame  # one row per (init, run, epoch): signed (a, b), residual, true vs surface loss
    rollback: pd.DataFrame  # one row per (init, group rolled back to theta0)
    curves: pd.DataFrame  # long: init, alpha, metrics of the task-plane 1D curve
    surfaces: pd.DataFrame  # long: init, alpha, beta, metrics of the task-plane 2D grid
    filter_curves: pd.DataFrame  # long: init, direction, alpha, metrics of the filter-normalised curves
    filter_surfaces: pd.DataFrame  # long: init, alpha, beta, metrics of the filter-normalised surface
    filter_bands: pd.DataFrame  # init, alpha, <metric>_mean, <metric>_sd over the directions
    sharpness: pd.DataFrame  # init, measure, value, sd, scale_invariant
    learning: pd.DataFrame  # init, epoch, <metric>_mean, <metric>_sd (sd over seeds; NaN for one seed)
    seeds: pd.DataFrame  # init, headline, label, mean, sd, n, scale_invariant (empty for older results)
    disk_mb: float  # everything in the folder, checkpoints included

    @property
    def summary(self) -> Summary:
        return self.results.summary

    @property
    def inits(self) -> dict[str, InitResults]:
        return self.results.inits


def result_tables(res: LandscapeResults) -> ResultTables:
    """Every table of ``res``, and the size of its folder on disk."""
    size = sum(f.stat().st_size for f in Path(res.out_dir).rglob("*") if f.is_file())
    grids = grid_tables(res)
    return ResultTables(
        str(res.out_dir),
        res,
        axes=pd.DataFrame([axes_row(r) for r in res.inits.values()]),
        trajectory=trajectory_table(res),
        rollback=rollback_table(res),
        **grids,
        filter_bands=filter_bands(grids["filter_curves"]),
        sharpness=sharpness_table(res),
        learning=learning_table(res),
        seeds=seed_table(res),
        disk_mb=size / 2**20,
    )
