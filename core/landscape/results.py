"""Reading finished landscape results back as typed objects (for the dashboard, the seed summary and re-runs).

Layout of a result folder (default ``~/.cache/isoscope/landscape/<key>``)::

    summary.json                    what ``python -m isoscope landscape`` printed, plus paths
    <init>/results.json             axes, coordinates, trajectories, rollback, flatness, metrics, and the
                                    optional filter_normalized and learning_curve sections
    <init>/curve_1d.npz             alpha, train_loss, train_acc, heldout_loss, heldout_acc, heldout_error
    <init>/surface.npz              alpha (n_a,), beta (n_b,), the same metrics as (n_a, n_b) grids
    <init>/filter_curves.npz        alpha (n,), the metrics as (k, n): one row per filter-normalised direction
    <init>/filter_surface.npz       alpha, beta, the metrics on the plane of the first two directions
    seeds/seed-<s>/                 the same layout for every further seed of ``--seeds N``
    checkpoints/<run>/epoch_*.safetensors   flat parameter vectors (+ JSON sidecars)

``<init>`` is ``pretrained`` or ``scratch``. Everything is JSON, npz or safetensors: nothing is unpickled.

Schema. The JSON records are ``isoscope.landscape.records``: the pipeline writes them with the same typed
classes this module reads them with. Every field the page needs is required: a missing or renamed field,
or a value of the wrong type, raises ``ResultsSchemaError`` naming the field and the file (a NaN in the
page would hide it). A field that is present but null is a number that was not defined (NaN in JSON), and
reads as NaN. Results written before the filter-normalised view, learning curves and seeds existed still
load: those optional sections are None.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from isoscope.cache import default_cache_dir
from isoscope.errors import InputError
from isoscope.landscape.records import (
    GRID_METRICS,
    METRICS,
    Axes,
    Coords,
    FilterDirections,
    Hessian,
    LearningCurve,
    Metrics,
    RollbackRow,
    RunInfo,
    SeedSummary,
    Sharpness,
    TrajectoryPoint,
    metric_columns,
)
from isoscope.landscape.schema import RERUN, Fields, ResultsSchemaError, arrays
from isoscope.landscape.store import read_json
from isoscope.paths import inside

__all__ = ["GRID_METRICS", "METRICS", "ResultsSchemaError"]

SUMMARY = "summary.json"
RESULTS = "results.json"
CURVE = "curve_1d.npz"
SURFACE = "surface.npz"
FILTER_CURVES = "filter_curves.npz"
FILTER_SURFACE = "filter_surface.npz"
FILTER_JSON = "filter_normalized.json"
SEEDS_DIR = "seeds"


def default_root() -> Path:
    """Folder holding one sub-folder per landscape experiment."""
    return default_cache_dir() / "landscape"


def seed_dir(out_dir: Path, seed: int) -> Path:
    """Folder of a further seed's results inside an experiment folder."""
    return Path(out_dir) / SEEDS_DIR / f"seed-{seed}"


@dataclass(frozen=True)
class GridCurvature:
    """Curvature of a task-plane grid around theta1 per unit parameter length (not scale-invariant)."""

    ok: bool
    reason: str
    eigenvalues_param: tuple[float, ...]
    fit_rmse: float

    @property
    def max(self) -> float:
        return max(self.eigenvalues_param) if self.eigenvalues_param else float("nan")

    @property
    def min(self) -> float:
        return min(self.eigenvalues_param) if self.eigenvalues_param else float("nan")

    @classmethod
    def parse(cls, f: Fields) -> GridCurvature:
        if not f.flag("ok"):
            return cls(False, f.text("reason"), (), float("nan"))
        return cls(True, "", tuple(f.nums("eigenvalues_param")), f.num("fit_rmse"))


@dataclass(frozen=True)
class Flatness:
    grid_train_loss: GridCurvature
    grid_heldout_loss: GridCurvature
    hessian: Hessian | None  # None: skipped (--hessian-iters 0)

    @classmethod
    def parse(cls, f: Fields) -> Flatness:
        return cls(
            GridCurvature.parse(f.obj("grid_train_loss")),
            GridCurvature.parse(f.obj("grid_heldout_loss")),
            Hessian.parse(f.obj("hessian")),
        )


@dataclass(frozen=True)
class Grid:
    """A 1D curve (``beta`` None, values (n,) or (k, n)) or a 2D surface (values (n_a, n_b)) of metrics."""

    alpha: np.ndarray
    beta: np.ndarray | None
    values: dict[str, np.ndarray]

    def __getitem__(self, name: str) -> np.ndarray:
        """``alpha``, ``beta`` or a metric's array (KeyError naming the choices otherwise)."""
        if name == "alpha":
            return self.alpha
        if name == "beta" and self.beta is not None:
            return self.beta
        if name in self.values:
            return self.values[name]
        raise KeyError(
            f"{name!r}: this grid has alpha{', beta' if self.beta is not None else ''}, {', '.join(self.values)}"
        )

    def __contains__(self, name: object) -> bool:
        return name == "alpha" or (name == "beta" and self.beta is not None) or name in self.values

    @classmethod
    def read(cls, path: Path, two_d: bool) -> Grid:
        """The grid in ``path``, its arrays' shapes checked against its axes (ResultsSchemaError otherwise)."""
        got = arrays(path, ("alpha", *(("beta",) if two_d else ()), *GRID_METRICS))
        alpha, beta = got.pop("alpha"), got.pop("beta") if two_d else None
        if alpha.ndim != 1 or (beta is not None and beta.ndim != 1):
            raise ResultsSchemaError(f"{path}: the grid's axes are not 1-D; {RERUN}")
        for name, values in got.items():
            shape = values.shape
            ok = (
                shape == (len(alpha), len(beta)) if beta is not None else shape[-1:] == alpha.shape and values.ndim <= 2
            )
            if not ok or values.dtype.kind not in "fiub":
                raise ResultsSchemaError(f"{path}: array {name} of shape {shape} does not fit the grid's axes; {RERUN}")
        return cls(alpha, beta, got)


@dataclass(frozen=True)
class FilterNormalized:
    """The filter-normalised view around theta1: curves along k directions, a surface on the first two."""

    n_directions: int
    range: tuple[float, float]
    cos_d1_d2: float
    sharpness: Sharpness
    heldout_sharpness: Sharpness
    curves: Grid  # values (k, n)
    surface: Grid  # values (n, n); theta1 at (0, 0)

    @classmethod
    def parse(cls, f: Fields, folder: Path) -> FilterNormalized:
        d = FilterDirections.parse(f.obj("directions"))
        return cls(
            d.n_directions,
            d.range,
            d.cos_d1_d2,
            Sharpness.parse(f.obj("sharpness")),
            Sharpness.parse(f.obj("heldout_sharpness")),
            Grid.read(folder / FILTER_CURVES, two_d=False),
            Grid.read(folder / FILTER_SURFACE, two_d=True),
        )


@dataclass(frozen=True)
class InitResults:
    """Everything computed for one initialisation (pre-trained or scratch)."""

    init: str
    n_params: int
    axes: Axes
    theta1_coords: Coords
    theta2_coords: Coords
    theta0: Metrics
    theta1: Metrics
    theta2: Metrics
    trajectory: tuple[TrajectoryPoint, ...]
    rollback: tuple[RollbackRow, ...]
    flatness: Flatness
    curve: Grid | None  # task-plane 1D curve along delta1 (None: --directions filter)
    surface: Grid | None  # task-plane 2D surface
    filter_normalized: FilterNormalized | None  # None: older results, or --directions task
    learning_curve: LearningCurve | None  # None: older results

    @property
    def filter_surface(self) -> Grid | None:
        """The filter-normalised surface, or None when this result has no filter-normalised view."""
        return self.filter_normalized.surface if self.filter_normalized is not None else None

    def trajectory_frame(self) -> pd.DataFrame:
        t = self.trajectory
        return pd.DataFrame(
            {
                "run": [p.run for p in t],
                "epoch": [p.epoch for p in t],
                **{k: [getattr(p.coords, k) for p in t] for k in ("a", "b", "residual", "distance")},
                **metric_columns([p.metrics for p in t]),
                "surface_train_loss": [p.surface_train_loss for p in t],
                "surface_heldout_loss": [p.surface_heldout_loss for p in t],
                "epoch_train_loss": [p.epoch_train_loss for p in t],
            }
        )

    def rollback_frame(self) -> pd.DataFrame:
        r = self.rollback
        return pd.DataFrame(
            {
                "group": [x.group for x in r],
                "layers": [" ".join(map(str, x.layers)) for x in r],
                "n_params": [x.n_params for x in r],
                **metric_columns([x.metrics for x in r]),
                "change_norm": [x.change_norm for x in r],
                "relative_change": [x.relative_change for x in r],
            }
        )


def parse_init(data: dict, folder: Path, task_view: bool = True) -> InitResults:
    """An initialisation's results.json (``data``) and its arrays in ``folder``; ResultsSchemaError when a field is off."""
    f = Fields(data, folder / RESULTS)
    fn, lc = f.opt("filter_normalized"), f.opt("learning_curve")
    return InitResults(
        f.text("init"),
        f.integer("n_params"),
        Axes.parse(f.obj("axes")),
        Coords.parse(f.obj("theta1_coords")),
        Coords.parse(f.obj("theta2_coords")),
        Metrics.parse(f.obj("theta0")),
        Metrics.parse(f.obj("theta1")),
        Metrics.parse(f.obj("theta2")),
        tuple(TrajectoryPoint.parse(p) for p in f.items("trajectory")),
        tuple(RollbackRow.parse(r) for r in f.items("rollback")),
        Flatness.parse(f.obj("flatness")),
        Grid.read(folder / CURVE, two_d=False) if task_view else None,
        Grid.read(folder / SURFACE, two_d=True) if task_view else None,
        FilterNormalized.parse(fn, folder) if fn is not None else None,
        LearningCurve.parse(lc) if lc is not None else None,
    )


@dataclass(frozen=True)
class Summary:
    """The run's summary.json: what was trained and measured."""

    model: str
    task: str
    task2: str
    n_train: tuple[int, int]
    n_eval_train: int
    n_eval_heldout: int
    epochs: int
    lr: float
    eval_size: int
    directions: str  # task, filter or both ("task" for results written before the filter view)
    inits: tuple[str, ...]
    wall_seconds: float
    grid: int
    warnings: tuple[str, ...]
    seeds: SeedSummary | None  # None: results written before --seeds existed

    @classmethod
    def parse(cls, data: dict, path: Path) -> Summary:
        f = Fields(data, path)
        info = RunInfo.parse(f)
        cfg, train = f.obj("config"), f.obj("config").obj("train")
        return cls(
            info.model,
            info.task,
            info.task2,
            info.n_train,
            info.n_eval.train,
            info.n_eval.heldout,
            train.integer("epochs"),
            train.num("lr"),
            cfg.integer("eval_size"),
            cfg.text("directions") if cfg.has("directions") else "task",
            info.inits,
            f.num("wall_seconds"),
            f.obj("grid").integer("grid"),
            info.warnings,
            SeedSummary.parse(f) if f.has("seeds") else None,
        )


@dataclass
class LandscapeResults:
    out_dir: Path
    summary: Summary
    inits: dict[str, InitResults]
    raw: dict  # summary.json as written (for downloads and the command line's own report)


def load_results(out_dir: str | Path) -> LandscapeResults:
    """Results of a finished run: InputError when the folder holds none (or no finished initialisation),
    ResultsSchemaError when a file lacks a field this version reads."""
    out_dir = Path(out_dir).expanduser()
    raw = read_json(out_dir / SUMMARY)
    if raw is None:
        raise InputError(f"{out_dir}: no landscape results here; run `python -m isoscope landscape` first")
    inits = raw.get("inits")
    listed = [str(i) for i in inits] if isinstance(inits, list) else []
    where = f"{SUMMARY} lists an initialisation"  # a name from a file: a folder inside out_dir, never a path out
    found = {init: read_json(inside(out_dir, init, what=where) / RESULTS) for init in listed}
    found = {init: data for init, data in found.items() if data is not None}
    if not found:
        raise InputError(f"{out_dir}: the run has no finished initialisation yet; run it again to resume")
    summary = Summary.parse(raw, out_dir / SUMMARY)
    task_view = summary.directions in ("task", "both")
    inits = {init: parse_init(data, out_dir / init, task_view) for init, data in found.items()}
    return LandscapeResults(out_dir, summary, inits, raw)


def list_results(root: str | Path | None = None) -> list[dict]:
    """Summaries of the finished runs under ``root`` (newest first), each with its ``out_dir``."""
    root = Path(root) if root is not None else default_root()
    found = []
    for path in root.glob(f"*/{SUMMARY}") if root.exists() else []:
        summary = read_json(path)
        if summary is not None:
            found.append({**summary, "out_dir": str(path.parent), "mtime": path.stat().st_mtime})
    return sorted(found, key=lambda s: -s["mtime"])
