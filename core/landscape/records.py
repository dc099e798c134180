"""The records of a landscape result folder: each is written (``to_json``) and read (``parse``) by the same
typed definition (``isoscope.landscape.schema.Record``), so the pipeline and the page cannot disagree on a key.

Where each record sits (see ``isoscope.landscape.results`` for the folder layout)::

    summary.json               RunInfo (+ the config, the grid, per-init sections); SeedSummary over the seeds
    <init>/results.json        Axes, Coords of theta1/theta2, Metrics at theta0/1/2, TrajectoryPoint rows,
                               RollbackRow rows, flatness (Hessian), filter_normalized (FilterDirections,
                               Sharpness), LearningCurve (LearningRow rows, Overfitting)

Fields that the current reader does not need and older files may lack are ``OPTIONAL`` (with a default).
Light to import (no torch): the dashboard reads results through these.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from isoscope.landscape.schema import INLINE, OPTIONAL, Fields, Record

NAN = math.nan


@dataclass(frozen=True)
class Metrics(Record):
    """The four numbers measured at every point: loss and accuracy on the training and held-out examples."""

    train_loss: float
    train_acc: float
    heldout_loss: float
    heldout_acc: float

    @classmethod
    def of(cls, values: Mapping[str, float]) -> Metrics:
        """The metrics of an evaluation (a mapping with at least these keys, as ``Evaluator`` returns)."""
        return cls(*(float(values[m]) for m in cls.fields()))


METRICS: tuple[str, ...] = Metrics.fields()
ERRORS: dict[str, str] = {"heldout_error": "heldout_acc", "train_error": "train_acc"}  # 1 - accuracy, on grids
GRID_METRICS: tuple[str, ...] = (*METRICS, *ERRORS)


def metric_columns(metrics: Sequence[Metrics]) -> dict[str, list[float]]:
    """One list per metric over ``metrics`` (columns of a table)."""
    return {m: [getattr(x, m) for x in metrics] for m in METRICS}


@dataclass(frozen=True)
class Axes(Record):
    """The task plane's axes: |delta1|, |delta2|, their cosine, the share of delta2 Gram-Schmidt kept, the
    measured cosine of the two axes, and the axes' lengths."""

    norm_delta1: float
    norm_delta2: float
    cos_delta1_delta2: float
    kept_fraction: float
    cos_e1_e2: float
    norm_e1: float = field(default=NAN, metadata=OPTIONAL)
    norm_e2: float = field(default=NAN, metadata=OPTIONAL)


@dataclass(frozen=True)
class Coords(Record):
    """Signed plane coordinates of a point and how far it lies off the plane."""

    a: float
    b: float
    residual: float  # |d - a e1 - b e2| / |d|, 0 for theta0 itself
    distance: float  # |d| = |theta - theta0|


@dataclass(frozen=True)
class Hessian(Record):
    """Top Hessian eigenvalue at theta1 (power iteration). Not scale-invariant. ``{"skipped": true}`` when
    the power iteration was skipped (``--hessian-iters 0``), which reads as None."""

    eigenvalue: float
    iterations: int
    converged: bool
    relative_change: float
    n_examples: int
    history: tuple[float, ...] = field(default=(), metadata=OPTIONAL)
    seconds: float = field(default=NAN, metadata=OPTIONAL)
    scale_invariant: bool = field(default=False, metadata=OPTIONAL)  # an eigenvalue in raw parameter units: never

    SKIPPED: ClassVar[dict[str, bool]] = {"skipped": True}

    @classmethod
    def parse(cls, f: Fields) -> Hessian | None:  # type: ignore[override]
        if f.has("skipped") and f.flag("skipped"):
            return None
        return super().parse(f)


@dataclass(frozen=True)
class TrajectoryPoint(Record):
    """A checkpoint of a run on the task plane: its coordinates, true metrics and the surface under it."""

    run: str
    epoch: int
    coords: Coords = field(metadata=INLINE)
    metrics: Metrics = field(metadata=INLINE)
    surface_train_loss: float  # NaN outside the grid, or without a task-plane surface
    surface_heldout_loss: float
    epoch_train_loss: float  # mean training loss over the epoch (NaN for epoch 0)


@dataclass(frozen=True)
class RollbackRow(Record):
    """theta1 with one group of layers put back to theta0 (``none``: theta1 as trained, no change)."""

    NONE: ClassVar[str] = "none"

    group: str
    layers: tuple[int, ...]
    n_params: int
    metrics: Metrics = field(metadata=INLINE)
    change_norm: float = field(default=NAN, metadata=OPTIONAL)  # NaN (absent in the file) for the row "none"
    relative_change: float = field(default=NAN, metadata=OPTIONAL)

    @classmethod
    def parse(cls, f: Fields) -> RollbackRow:
        row = super().parse(f)
        if row.group != cls.NONE:  # a group that moved must say how far
            f.num("change_norm"), f.num("relative_change")
        return row

    def to_json(self) -> dict[str, Any]:
        out = super().to_json()
        if self.group == self.NONE:
            del out["change_norm"], out["relative_change"]
        return out


@dataclass(frozen=True)
class Sharpness(Record):
    """Mean and sample sd over filter-normalised directions of the loss increase at fixed alphas."""

    mean: float
    sd: float
    alphas: tuple[float, ...]
    n_directions: int
    per_direction: tuple[float, ...]
    per_alpha_mean: tuple[float, ...]
    per_alpha_sd: tuple[float, ...]
    base_loss: float
    scale_invariant: bool
    definition: str = field(default="", metadata=OPTIONAL)


@dataclass(frozen=True)
class FilterDirections(Record):
    """The filter-normalised directions around theta1: how many, their seeds, the alpha range, the two that
    span the surface (norms and cosine)."""

    n_directions: int
    range: tuple[float, float]
    cos_d1_d2: float
    seeds: tuple[int, ...] = field(default=(), metadata=OPTIONAL)
    normalisation: str = field(default="", metadata=OPTIONAL)
    norm_d1: float = field(default=NAN, metadata=OPTIONAL)
    norm_d2: float = field(default=NAN, metadata=OPTIONAL)
    norm_theta: float = field(default=NAN, metadata=OPTIONAL)


@dataclass(frozen=True)
class LearningRow(Record):
    """One checkpoint of the task-1 run on the learning-curve set."""

    epoch: int
    epoch_train_loss: float  # the run's mean training loss over that epoch (NaN for epoch 0)
    metrics: Metrics = field(metadata=INLINE)


@dataclass(frozen=True)
class Overfitting(Record):
    """Best and final held-out numbers of a learning curve, and the overfitting gap."""

    best_epoch: int
    min_heldout_loss: float
    final_epoch: int
    final_heldout_loss: float
    overfit_gap: float  # final - lowest held-out loss: >= 0, 0 when the last epoch is the best
    best_acc_epoch: int
    max_heldout_acc: float
    final_heldout_acc: float
    acc_drop: float  # best - final held-out accuracy, >= 0
    final_train_loss: float
    final_generalisation_gap: float  # held-out - training loss at the last epoch


@dataclass(frozen=True)
class LearningCurve(Record):
    """Per-epoch metrics of the task-1 run on a larger held-out sample, and the overfitting summary."""

    n_train: int
    n_heldout: int
    rows: tuple[LearningRow, ...]
    overfitting: Overfitting

    @property
    def epochs(self) -> tuple[int, ...]:
        return tuple(r.epoch for r in self.rows)

    @property
    def epoch_train_loss(self) -> tuple[float, ...]:
        return tuple(r.epoch_train_loss for r in self.rows)

    @property
    def metrics(self) -> tuple[Metrics, ...]:
        return tuple(r.metrics for r in self.rows)

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(
            {"epoch": self.epochs, "epoch_train_loss": self.epoch_train_loss, **metric_columns(self.metrics)}
        )


@dataclass(frozen=True)
class Stat(Record):
    """One headline number over seeds: mean and sample sd (ddof 1, NaN for one seed) of the finite values."""

    mean: float
    sd: float
    n: int
    values: tuple[float, ...]
    scale_invariant: bool | None = field(
        default=None, metadata=OPTIONAL
    )  # None: not a curvature, the question does not apply

    def to_json(self) -> dict[str, Any]:
        out = super().to_json()
        if self.scale_invariant is None:
            del out["scale_invariant"]
        return out


@dataclass(frozen=True)
class SeedSummary:
    """The experiment repeated over seeds: per initialisation, every headline number's mean +- sd, and
    learning-curve bands (mean and sd per epoch). Sits at the top of summary.json under ``KEYS``."""

    KEYS: ClassVar[tuple[str, str, str]] = ("seed_values", "summary", "learning_curves")

    seeds: tuple[int, ...]
    stats: dict[str, dict[str, Stat]]  # init -> headline name -> stat
    learning: dict[str, dict[str, np.ndarray]]  # init -> "epoch" (E,), "<metric>_mean"/"<metric>_sd" (E,)

    @property
    def n_seeds(self) -> int:
        return len(self.seeds)

    @classmethod
    def parse(cls, f: Fields) -> SeedSummary:
        seeds, summary, bands = cls.KEYS
        stats, learning = f.obj(summary), f.obj(bands)
        return cls(
            tuple(f.ints(seeds)),
            {init: {k: Stat.parse(stats.obj(init).obj(k)) for k in stats.obj(init).keys()} for init in stats.keys()},
            {
                init: {k: np.asarray(learning.obj(init).nums(k)) for k in learning.obj(init).keys()}
                for init in learning.keys()
            },
        )

    def to_json(self) -> dict[str, Any]:
        seeds, summary, bands = self.KEYS
        return {
            seeds: list(self.seeds),
            summary: {init: {k: s.to_json() for k, s in st.items()} for init, st in self.stats.items()},
            bands: {init: {k: np.asarray(v).tolist() for k, v in b.items()} for init, b in self.learning.items()},
        }

    def frame(self) -> pd.DataFrame:
        """Long table: init, headline, mean, sd, n."""
        rows = [
            {"init": init, "headline": k, "mean": s.mean, "sd": s.sd, "n": s.n}
            for init, stats in self.stats.items()
            for k, s in stats.items()
        ]
        return pd.DataFrame(rows)


@dataclass(frozen=True)
class EvalCounts(Record):
    """Examples evaluated at every point: training and held-out."""

    train: int
    heldout: int


@dataclass(frozen=True)
class RunInfo(Record):
    """What one seed's run trained on, at the top of its summary.json."""

    model: str
    task: str
    task2: str
    n_train: tuple[int, int]  # training examples of task 1 and task 2
    n_eval: EvalCounts
    inits: tuple[str, ...]
    warnings: tuple[str, ...]
    model_fingerprint: str = field(default="", metadata=OPTIONAL)
    seed: int = field(default=0, metadata=OPTIONAL)
    n_classes: tuple[int, ...] = field(default=(), metadata=OPTIONAL)
    class_counts_train: tuple[int, ...] = field(default=(), metadata=OPTIONAL)
    n_learning_heldout: int = field(default=0, metadata=OPTIONAL)
    out_dir: str = field(default="", metadata=OPTIONAL)
