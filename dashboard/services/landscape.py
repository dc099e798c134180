"""Loss-surface experiments: run one live (cached, resumable on disk) and read finished ones back.

A live run is one ``isoscope.landscape.live.LiveRun`` from the page to ``run_live``; finished runs are read
as ``isoscope.landscape.tables.ResultTables`` (typed results and every table the page shows).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import streamlit as st

from isoscope.costs import FREE, Cost
from isoscope.dashboard.services.models import ModelKey, fp32_encoder, trainable_encoder, training_device
from isoscope.errors import InputError
from isoscope.landscape.costs import LandscapeRates, landscape_cost
from isoscope.landscape.live import LiveRun

if TYPE_CHECKING:  # isoscope.landscape imports torch: only inside the functions that run or read an experiment
    from isoscope.landscape.tables import ResultTables

RATES_TTL_S = 600  # the rates are measured again after this: the machine's load when the run starts is what counts


def landscape_root() -> Path:
    """Folder of the landscape experiments (``$ISOSCOPE_CACHE/landscape``), read at every call."""
    from isoscope.landscape.results import default_root

    return default_root()


def landscape_runs() -> list[dict]:
    """Summaries of the finished experiments under ``landscape_root()``, newest first (not cached: a finished
    run must appear at once)."""
    from isoscope.landscape.results import list_results

    return list_results(landscape_root())


@st.cache_data(show_spinner=False, max_entries=16)
def _landscape_run(run: LiveRun, root: str) -> str:
    from isoscope.landscape.live import run_live

    bar = st.progress(0.0, text="Preparing the landscape run…")
    n_stages, stage = run.n_stages, [-1]

    def factory(desc: str):
        stage[0] += 1
        k = min(stage[0], n_stages - 1)

        def update(done: int, total: int) -> None:
            frac = min((k + done / max(total, 1)) / n_stages, 1.0)
            bar.progress(frac, text=f"Step {k + 1}/{n_stages} · {desc}: {done:,} / {total:,}")

        update(0, 1)
        return update

    try:  # float32 weights on the sidebar's device, whatever its precision and dtype (run.model: the sidebar's ModelKey)
        return run_live(trainable_encoder(run.model), run, root, progress=factory)
    finally:
        bar.empty()


def landscape_run(run: LiveRun) -> str:
    """``isoscope.landscape.live.run_live`` of ``run`` with its fp32 model; returns the result folder (cached;
    resumes from disk). Raises InputError (bad task, a run that did not move, ...) with one line to show."""
    out = _landscape_run(run, str(landscape_root()))
    if not (Path(out) / "summary.json").exists():  # the folder was deleted since: run again
        _landscape_run.clear()
        out = _landscape_run(run, str(landscape_root()))
    return out


@st.cache_data(show_spinner="Reading the landscape results…", max_entries=8)
def _landscape_view(out_dir: str, mtime: float) -> ResultTables:
    from isoscope.landscape.results import load_results
    from isoscope.landscape.tables import result_tables

    # InputError: nothing finished here; ResultsSchemaError: a bug, shown as one
    return result_tables(load_results(out_dir))


def landscape_view(out_dir: str) -> ResultTables:
    """A result folder read back (cached until its summary.json changes); InputError when it holds none."""
    summary = Path(out_dir) / "summary.json"
    if not summary.exists():
        raise InputError(f"{out_dir}: no landscape results here; run `python -m isoscope landscape` first")
    return _landscape_view(out_dir, summary.stat().st_mtime)


@st.cache_data(show_spinner=False, max_entries=8)
def parameter_count(model: ModelKey) -> int:
    """Parameters of ``model``'s fp32 encoder (what a live run trains and checkpoints)."""
    return sum(p.numel() for p in fp32_encoder(model).model.parameters())


@st.cache_resource(
    show_spinner="Timing a point, a training step and a Hessian product…", max_entries=8, ttl=RATES_TTL_S
)
def _rates(run: LiveRun) -> LandscapeRates:
    from isoscope.landscape.live import measure_rates

    return measure_rates(trainable_encoder(run.model), run)  # timed where it will run


@st.cache_data(show_spinner=False, max_entries=16)
def _result_folder(run: LiveRun, root: str) -> str:
    from isoscope.landscape.live import result_folder

    return str(result_folder(trainable_encoder(run.model), run, root))


def live_device(run: LiveRun) -> str:
    """Where ``landscape_run(run)`` trains and measures, in words: ``the CPU``, ``cuda:0``, ``mps``."""
    return training_device(run.model)


def live_cost(run: LiveRun) -> Cost:
    """What ``landscape_run(run)`` will cost on this machine, on the sidebar's device (``training_device``), where its
    rates are timed (``FREE`` when its result is on disk already)."""
    from isoscope.landscape.live import finished

    encoder = trainable_encoder(run.model)
    done = finished(run, _result_folder(run, str(landscape_root())))
    if done:
        return FREE
    return landscape_cost(run, n_params=parameter_count(run.model), num_layers=encoder.num_layers, rates=_rates(run))
