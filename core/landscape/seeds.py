"""The experiment repeated over seeds: every headline number as mean +- sd, and learning-curve bands.

``--seeds N`` runs the whole experiment N times with seeds s, s+1, ..., s+N-1: the training sample, the
evaluation sample, the head init, the scratch init, the data order and dropout, and the filter-normalised
directions all follow the seed (the train / held-out split of a task stays the one of ``--seed``). Each
seed's results are read back from disk through the typed reader (``isoscope.landscape.results``), so the
summary is made from exactly what the page shows. The spread is the sample standard deviation (ddof 1)
over seeds; with one seed it is undefined (NaN, null in JSON).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from isoscope.landscape.records import METRICS, Stat
from isoscope.landscape.results import InitResults

Getter = Callable[[InitResults], float]
NAN = float("nan")


@dataclass(frozen=True)
class Headline:
    """One number reported per initialisation, with whether it is invariant to rescaling a layer."""

    name: str
    label: str
    get: Getter
    scale_invariant: bool | None = None  # None: not a curvature, the question does not apply


def _hessian(r: InitResults) -> float:
    return r.flatness.hessian.eigenvalue if r.flatness.hessian is not None else NAN


def _filter(attr: str) -> Getter:
    def get(r: InitResults) -> float:
        if r.filter_normalized is None:
            return NAN
        return getattr(r.filter_normalized, attr).mean

    return get


def _learning(attr: str) -> Getter:
    return lambda r: float(getattr(r.learning_curve.overfitting, attr)) if r.learning_curve is not None else NAN


def _epoch1_residual(r: InitResults) -> float:
    hits = [p.coords.residual for p in r.trajectory if p.run == "task1" and p.epoch == 1]
    return hits[0] if hits and max(p.epoch for p in r.trajectory if p.run == "task1") > 1 else NAN


def _rollback(group: str, attr: str) -> Getter:
    def get(r: InitResults) -> float:
        rows = [x for x in r.rollback if x.group == group]
        if not rows:
            return NAN
        return rows[0].metrics.train_loss if attr == "train_loss" else rows[0].relative_change

    return get


HEADLINES: tuple[Headline, ...] = (
    Headline("train_loss_theta0", "train loss at theta0", lambda r: r.theta0.train_loss),
    Headline("train_loss_theta1", "train loss at theta1", lambda r: r.theta1.train_loss),
    Headline("heldout_loss_theta1", "held-out loss at theta1 (evaluation set)", lambda r: r.theta1.heldout_loss),
    Headline("heldout_acc_theta1", "held-out accuracy at theta1 (evaluation set)", lambda r: r.theta1.heldout_acc),
    Headline("cos_delta1_delta2", "cos(delta1, delta2)", lambda r: r.axes.cos_delta1_delta2),
    Headline("kept_fraction", "share of delta2 kept by Gram-Schmidt", lambda r: r.axes.kept_fraction),
    Headline("epoch1_residual", "epoch-1 checkpoint off-plane residual", _epoch1_residual),
    Headline("hessian_top_eigenvalue", "top Hessian eigenvalue at theta1", _hessian, scale_invariant=False),
    Headline(
        "grid_curvature_max",
        "task-plane curvature at theta1 (max, per unit parameter length)",
        lambda r: r.flatness.grid_train_loss.max,
        scale_invariant=False,
    ),
    Headline("filter_sharpness", "filter-normalised sharpness (train loss)", _filter("sharpness"), True),
    Headline(
        "filter_sharpness_heldout", "filter-normalised sharpness (held-out loss)", _filter("heldout_sharpness"), True
    ),
    Headline("lc_best_epoch", "epoch of the lowest held-out loss", _learning("best_epoch")),
    Headline("lc_min_heldout_loss", "lowest held-out loss over epochs", _learning("min_heldout_loss")),
    Headline("lc_final_heldout_loss", "held-out loss at the last epoch", _learning("final_heldout_loss")),
    Headline("lc_overfit_gap", "overfitting gap (last - lowest held-out loss)", _learning("overfit_gap")),
    Headline("lc_max_heldout_acc", "best held-out accuracy over epochs", _learning("max_heldout_acc")),
    Headline("lc_final_heldout_acc", "held-out accuracy at the last epoch", _learning("final_heldout_acc")),
    *(
        Headline(f"rollback_{g}_train_loss", f"train loss after rolling back {g}", _rollback(g, "train_loss"))
        for g in ("embeddings", "lower", "middle", "upper")
    ),
    *(
        Headline(f"relative_change_{g}", f"relative change of {g}", _rollback(g, "relative_change"))
        for g in ("embeddings", "lower", "middle", "upper")
    ),
)
HEADLINE_BY_NAME = {h.name: h for h in HEADLINES}


def stat(values: list[float], scale_invariant: bool | None = None) -> Stat:
    """Mean and sample sd (ddof 1) of the finite values; NaN when there are none (sd: fewer than two)."""
    v = np.asarray(values, np.float64)
    ok = v[np.isfinite(v)]
    return Stat(
        mean=float(ok.mean()) if len(ok) else NAN,
        sd=float(ok.std(ddof=1)) if len(ok) > 1 else NAN,
        n=len(ok),
        values=tuple(v.tolist()),
        scale_invariant=scale_invariant,
    )


def headline_summary(per_seed: list[dict[str, InitResults]]) -> dict[str, dict[str, Stat]]:
    """init -> headline name -> its Stat over the seeds (in seed order), with its scale invariance."""
    inits = [i for i in per_seed[0] if all(i in s for s in per_seed)]
    return {
        init: {h.name: stat([h.get(s[init]) for s in per_seed], h.scale_invariant) for h in HEADLINES} for init in inits
    }


def learning_bands(per_seed: list[dict[str, InitResults]]) -> dict[str, dict[str, list[float]]]:
    """init -> {"epoch", "<metric>_mean", "<metric>_sd", "epoch_train_loss_mean", ...} over the seeds' learning curves."""
    out: dict[str, dict[str, list[float]]] = {}
    for init in per_seed[0]:
        curves = [s[init].learning_curve for s in per_seed if init in s and s[init].learning_curve is not None]
        if not curves or len({c.epochs for c in curves}) != 1:
            continue
        band: dict[str, list[float]] = {"epoch": [float(e) for e in curves[0].epochs]}
        columns = {m: [[getattr(x, m) for x in c.metrics] for c in curves] for m in METRICS}
        columns["epoch_train_loss"] = [list(c.epoch_train_loss) for c in curves]
        for name, rows in columns.items():
            v = np.asarray(rows, np.float64)  # (seeds, E+1)
            band[f"{name}_mean"] = v.mean(axis=0).tolist()
            band[f"{name}_sd"] = (v.std(axis=0, ddof=1) if len(curves) > 1 else np.full(v.shape[1], NAN)).tolist()
        out[init] = band
    return out
