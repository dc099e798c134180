"""Loss-surface experiments: run one live (cached, resumable on disk) and read finished ones back."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
import streamlit as st

from isoscope.dashboard.services.models import fp32_encoder
from isoscope.errors import InputError
from isoscope.paths import stsb_dir

if TYPE_CHECKING:  # isoscope.landscape imports torch: only inside the functions that run or read an experiment
    from isoscope.landscape.results import InitResults, LandscapeResults, Summary


LIVE_FILTER_DIRECTIONS = 2  # a live run is a sketch on 2 cores: two directions span the surface, sd needs two
LIVE_LEARNING_HELDOUT = 32


@dataclass(frozen=True)
class LandscapeView:
    """A finished landscape experiment read back (typed: a schema change fails loudly), with its tables."""

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
    disk_mb: float

    @property
    def summary(self) -> Summary:
        return self.results.summary

    @property
    def inits(self) -> dict[str, InitResults]:
        return self.results.inits


def landscape_root() -> Path:
    """Folder of the landscape experiments (``$ISOSCOPE_CACHE/landscape``), read at every call."""
    from isoscope.landscape.results import default_root

    return default_root()


def landscape_runs() -> list[dict]:
    """Summaries of the finished experiments under ``landscape_root()``, newest first (not cached: a finished
    run must appear at once)."""
    from isoscope.landscape.results import list_results

    return list_results(landscape_root())


def landscape_tasks() -> tuple[str, ...]:
    """Built-in tasks runnable here: the demo tasks, and STS-B when its files are present."""
    folder = stsb_dir()
    has_stsb = (folder / "stsb-en-train.csv").exists() and (folder / "stsb-en-dev.csv").exists()
    return ("demo-topic", "demo-pairs") + (("stsb",) if has_stsb else ())


def landscape_task2(task: str) -> str:
    from isoscope.landscape.options import default_task2

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
    from isoscope.landscape import FilterConfig, LandscapeConfig, TrainConfig, load_task, run_landscape
    from isoscope.landscape.options import INITS
    from isoscope.landscape.pipeline import experiment_key

    task1, task2 = load_task(task, seed), load_task(landscape_task2(task), seed)
    config = LandscapeConfig(
        train=TrainConfig(lr=lr, epochs=epochs, batch_size=16, n_train=n_train, max_length=max_length, seed=seed),
        eval_size=eval_size,
        eval_chunk=16,  # attention blocks of 16 length-sorted examples (the packed BERT forward pads nothing else)
        grid=grid,
        points_1d=points_1d,
        hessian_iters=hessian_iters,
        hessian_size=min(16, eval_size),
        directions="both",
        filter_config=FilterConfig(directions=LIVE_FILTER_DIRECTIONS, points_1d=5, grid=grid),
        learning_heldout=LIVE_LEARNING_HELDOUT,
    ).validate()
    enc = fp32_encoder(model)  # training needs fp32 weights, whatever the sidebar's precision
    out = Path(root) / experiment_key(enc, task1, task2, config)
    # per init: train x2, 1D curve, surface, rollback, Hessian, filter curves, filter surface, learning curve
    n_stages = len(INITS) * (8 + (hessian_iters > 0))
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
    recipe and measure both views (task plane; two filter-normalised directions on the same alpha range),
    one seed; returns the result folder (cached; resumes from disk).

    Raises InputError (bad task, a run that did not move, ...) with one line to show.
    """
    args = (model, task, n_train, epochs, lr, grid, max_length, eval_size, points_1d, hessian_iters, seed)
    out = _landscape_run(*args, str(landscape_root()))
    if not (Path(out) / "summary.json").exists():  # the folder was deleted since: run again
        _landscape_run.clear()
        out = _landscape_run(*args, str(landscape_root()))
    return out


@st.cache_data(show_spinner="Reading the landscape results…", max_entries=8)
def _landscape_view(out_dir: str, mtime: float) -> LandscapeView:
    from isoscope.landscape import tables
    from isoscope.landscape.results import load_results

    res = load_results(out_dir)  # InputError: nothing finished here; ResultsSchemaError: a bug, shown as one
    size = sum(f.stat().st_size for f in Path(out_dir).rglob("*") if f.is_file())
    grids = tables.grid_tables(res)
    return LandscapeView(
        out_dir,
        res,
        axes=pd.DataFrame([tables.axes_row(r) for r in res.inits.values()]),
        trajectory=tables.trajectory_table(res),
        rollback=tables.rollback_table(res),
        **grids,
        filter_bands=tables.filter_bands(grids["filter_curves"]),
        sharpness=tables.sharpness_table(res),
        learning=tables.learning_table(res),
        seeds=tables.seed_table(res),
        disk_mb=size / 2**20,
    )


def landscape_view(out_dir: str) -> LandscapeView:
    """A result folder read back (cached until its summary.json changes); InputError when it holds none."""
    summary = Path(out_dir) / "summary.json"
    if not summary.exists():
        raise InputError(f"{out_dir}: no landscape results here; run `python -m isoscope landscape` first")
    return _landscape_view(out_dir, summary.stat().st_mtime)


@st.cache_data(show_spinner=False, max_entries=8)
def landscape_disk_estimate(model: str, epochs: int) -> float:
    """Approximate MB of checkpoints a live run keeps: 4 runs x (epochs + 1) float32 parameter vectors."""
    n = sum(p.numel() for p in fp32_encoder(model).model.parameters())
    return 4 * (epochs + 1) * n * 4 / 2**20
