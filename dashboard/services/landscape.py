"""Loss-surface experiments: run one live (cached, resumable on disk) and read finished ones back."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st

from core.errors import InputError
from core.paths import stsb_dir
from dashboard.services.models import encoder


@dataclass(frozen=True)
class LandscapeView:
    """A finished landscape experiment read back, with its tables ready to show and download."""

    out_dir: str
    summary: dict
    inits: dict  # init -> core.landscape.results.InitResults
    axes: pd.DataFrame  # one row per init: axes, theta1/theta2 coordinates, flatness, metrics at theta1
    trajectory: pd.DataFrame  # one row per (init, run, epoch): signed (a, b), residual, true vs surface loss
    rollback: pd.DataFrame  # one row per (init, group rolled back to theta0)
    curves: pd.DataFrame  # long: init, alpha, metrics of the 1D curve
    surfaces: pd.DataFrame  # long: init, alpha, beta, metrics of the 2D grid
    disk_mb: float


def landscape_root() -> Path:
    """Folder of the landscape experiments (``$ISOSCOPE_CACHE/landscape``), read at every call."""
    from core.landscape.results import default_root

    return default_root()


def landscape_runs() -> list[dict]:
    """Summaries of the finished experiments under ``landscape_root()``, newest first (not cached: a finished
    run must appear at once)."""
    from core.landscape.results import list_results

    return list_results(landscape_root())


def landscape_tasks() -> tuple[str, ...]:
    """Built-in tasks runnable here: the demo tasks, and STS-B when its files are present."""
    folder = stsb_dir()
    has_stsb = (folder / "stsb-en-train.csv").exists() and (folder / "stsb-en-dev.csv").exists()
    return ("demo-topic", "demo-pairs") + (("stsb",) if has_stsb else ())


def landscape_task2(task: str) -> str:
    from core.landscape.tasks import default_task2

    return default_task2(task)


@st.cache_data(show_spinner=False, max_entries=16)
def _landscape_run(
    model: str,
    task: str,
    n_train: int,
    epochs: int,
    lr: float,
    grid: int,
    max_length: int,
    eval_size: int,
    points_1d: int,
    hessian_iters: int,
    seed: int,
    root: str,
) -> str:
    from core.landscape import LandscapeConfig, TrainConfig, load_task, run_landscape
    from core.landscape.classifier import INITS
    from core.landscape.pipeline import experiment_key

    task1, task2 = load_task(task, seed), load_task(landscape_task2(task), seed)
    config = LandscapeConfig(
        train=TrainConfig(lr=lr, epochs=epochs, batch_size=16, n_train=n_train, max_length=max_length, seed=seed),
        eval_size=eval_size,
        eval_chunk=16,  # attention blocks of 16 length-sorted examples (the packed BERT forward pads nothing else)
        grid=grid,
        points_1d=points_1d,
        hessian_iters=hessian_iters,
        hessian_size=min(16, eval_size),
    ).validate()
    enc = encoder(model)
    out = Path(root) / experiment_key(enc, task1, task2, config)
    n_stages = len(INITS) * (5 + (hessian_iters > 0))  # train x2, 1D curve, surface, rollback, Hessian
    bar = st.progress(0.0, text="Preparing the landscape run…")
    stage = [-1]

    def factory(desc: str):
        stage[0] += 1
        k = min(stage[0], n_stages - 1)

        def update(done: int, total: int) -> None:
            frac = min((k + done / max(total, 1)) / n_stages, 1.0)
            bar.progress(frac, text=f"Step {k + 1}/{n_stages} · {desc}: {done:,} / {total:,}")

        update(0, 1)
        return update

    try:
        return run_landscape(enc, task1, task2, config, out, factory)["out_dir"]
    finally:
        bar.empty()


def landscape_run(
    model: str,
    task: str,
    n_train: int,
    epochs: int,
    lr: float,
    grid: int,
    max_length: int,
    eval_size: int,
    points_1d: int = 11,
    hessian_iters: int = 5,
    seed: int = 0,
) -> str:
    """Train pre-trained and scratch on ``task`` (second axis: a different demo task) with a small, fixed
    recipe and measure the landscape; returns the result folder (cached; resumes from disk).

    Raises InputError / ValueError (bad task, a run that did not move, ...) with one line to show.
    """
    args = (model, task, n_train, epochs, lr, grid, max_length, eval_size, points_1d, hessian_iters, seed)
    out = _landscape_run(*args, str(landscape_root()))
    if not (Path(out) / "summary.json").exists():  # the folder was deleted since: run again
        _landscape_run.clear()
        out = _landscape_run(*args, str(landscape_root()))
    return out


def _num(x: object) -> float:
    return float(x) if isinstance(x, int | float) else float("nan")


def _axes_row(init: str, r: dict) -> dict:
    ax, fl = r.get("axes", {}), r.get("flatness", {})
    hess, grid = fl.get("hessian", {}), fl.get("grid_train_loss", {})
    grid_h = fl.get("grid_heldout_loss", {})
    eig = [v for v in grid.get("eigenvalues_param") or [] if v is not None]
    eig_h = [v for v in grid_h.get("eigenvalues_param") or [] if v is not None]
    t1, t2 = r.get("theta1", {}), r.get("theta2_coords", {})
    return {
        "init": init,
        "norm_delta1": _num(ax.get("norm_delta1")),
        "norm_delta2": _num(ax.get("norm_delta2")),
        "cos_delta1_delta2": _num(ax.get("cos_delta1_delta2")),
        "kept_fraction_delta2": _num(ax.get("kept_fraction")),
        "cos_e1_e2": _num(ax.get("cos_e1_e2")),
        "theta2_a": _num(t2.get("a")),
        "theta2_b": _num(t2.get("b")),
        "theta2_residual": _num(t2.get("residual")),
        "hessian_top_eigenvalue": _num(hess.get("eigenvalue")),
        "hessian_converged": hess.get("converged"),
        "hessian_iterations": hess.get("iterations"),
        "hessian_examples": hess.get("n_examples"),
        "grid_curvature_max": max(eig) if eig else float("nan"),
        "grid_curvature_min": min(eig) if eig else float("nan"),
        "grid_heldout_curvature_max": max(eig_h) if eig_h else float("nan"),
        "grid_fit_rmse": _num(grid.get("fit_rmse")),
        "theta1_train_loss": _num(t1.get("train_loss")),
        "theta1_train_acc": _num(t1.get("train_acc")),
        "theta1_heldout_loss": _num(t1.get("heldout_loss")),
        "theta1_heldout_acc": _num(t1.get("heldout_acc")),
        "n_params": r.get("n_params"),
    }


def _landscape_tables(res) -> dict[str, pd.DataFrame]:
    """Flat tables of a core.landscape.results.LandscapeResults."""
    axes, traj, roll, curves, surfaces = [], [], [], [], []
    for init, ir in res.inits.items():
        axes.append(_axes_row(init, ir.results))
        t = ir.trajectory_frame()
        if not t.empty:
            t.insert(0, "init", init)
            t["surface_minus_true_train_loss"] = t["surface_train_loss"] - t["train_loss"]
            t["surface_minus_true_heldout_loss"] = t["surface_heldout_loss"] - t["heldout_loss"]
            traj.append(t)
        rb = ir.rollback_frame()
        if not rb.empty:
            rb.insert(0, "init", init)
            rb["layers"] = rb["layers"].map(lambda v: " ".join(map(str, v)) if isinstance(v, list) else "")
            roll.append(rb)
        c = {k: np.asarray(v) for k, v in ir.curve.items() if k != "key"}
        if "alpha" in c:
            curves.append(pd.DataFrame({"init": init, **c}))
        s = {k: np.asarray(v) for k, v in ir.surface.items() if k != "key"}
        if "alpha" in s and "beta" in s:
            a, b = np.meshgrid(s.pop("alpha"), s.pop("beta"), indexing="ij")  # (n_a, n_b)
            cols = {k: v.ravel() for k, v in s.items()}
            surfaces.append(pd.DataFrame({"init": init, "alpha": a.ravel(), "beta": b.ravel(), **cols}))

    def cat(frames: list[pd.DataFrame]) -> pd.DataFrame:
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    return {
        "axes": pd.DataFrame(axes),
        "trajectory": cat(traj),
        "rollback": cat(roll),
        "curves": cat(curves),
        "surfaces": cat(surfaces),
    }


@st.cache_data(show_spinner="Reading the landscape results…", max_entries=8)
def _landscape_view(out_dir: str, mtime: float) -> LandscapeView:
    from core.landscape.results import load_results

    res = load_results(out_dir)
    if not res.inits:
        raise InputError(f"{out_dir}: the run has no finished initialisation yet; run it again to resume")
    size = sum(f.stat().st_size for f in Path(out_dir).rglob("*") if f.is_file())
    return LandscapeView(out_dir, res.summary, res.inits, disk_mb=size / 2**20, **_landscape_tables(res))


def landscape_view(out_dir: str) -> LandscapeView:
    """A result folder read back (cached until its summary.json changes); InputError when it holds none."""
    summary = Path(out_dir) / "summary.json"
    if not summary.exists():
        raise InputError(f"{out_dir}: no landscape results here; run `python -m core landscape` first")
    return _landscape_view(out_dir, summary.stat().st_mtime)


@st.cache_data(show_spinner=False, max_entries=8)
def landscape_disk_estimate(model: str, epochs: int) -> float:
    """Approximate MB of checkpoints a live run keeps: 4 runs x (epochs + 1) float32 parameter vectors."""
    n = sum(p.numel() for p in encoder(model).model.parameters())
    return 4 * (epochs + 1) * n * 4 / 2**20
