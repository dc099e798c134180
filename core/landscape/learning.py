"""Learning curves and the overfitting test: held-out loss and accuracy after every epoch of the task-1 run.

Hao et al. (2019) claim that fine-tuning from pre-trained weights is robust to overfitting: trained far past
convergence, its held-out loss barely rises, where training from scratch overfits. Measured here, not
assumed: every epoch's checkpoint of the task-1 run (epoch 0 = theta0) is evaluated on the fixed training
examples of the evaluation set and on a larger fixed held-out sample, for both initialisations under the
same schedule (run with ``--epochs`` well past convergence). The summary gives, per run, the epoch of the
lowest held-out loss and how much the held-out loss rose from there to the last epoch (the overfitting gap).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import numpy as np
import torch

from isoscope.landscape.records import LearningRow, Metrics, Overfitting
from isoscope.landscape.train import Checkpoint

log = logging.getLogger(__name__)

EvalFn = Callable[[torch.Tensor], dict[str, float]]
ProgressFn = Callable[[int, int], None]


def learning_curve(
    evaluate: EvalFn,
    ckpts: list[Checkpoint],
    *,
    progress: ProgressFn | None = None,
    known: dict[int, torch.Tensor] | None = None,
) -> list[LearningRow]:
    """One row per checkpoint: epoch, the training run's mean loss over that epoch, and the four metrics.

    ``known`` maps epochs to thetas already in memory (they are not read from disk again).
    """
    known = known or {}
    rows = []
    for k, c in enumerate(ckpts):
        theta = known[c.epoch] if c.epoch in known else c.load()
        rows.append(LearningRow(c.epoch, c.train_loss, Metrics.of(evaluate(theta))))
        if progress is not None:
            progress(k + 1, len(ckpts))
    return rows


def overfitting(rows: Sequence[LearningRow]) -> Overfitting:
    """Best and final held-out numbers of a learning curve, and the overfitting gap (final - lowest held-out loss)."""
    if not rows:
        raise ValueError("a learning curve needs at least one checkpoint")
    epochs = np.array([r.epoch for r in rows], np.int64)  # (E+1,)
    held = np.array([r.metrics.heldout_loss for r in rows], np.float64)
    acc = np.array([r.metrics.heldout_acc for r in rows], np.float64)
    best, best_acc = int(np.nanargmin(held)), int(np.nanargmax(acc))
    final = rows[-1].metrics
    return Overfitting(
        best_epoch=int(epochs[best]),
        min_heldout_loss=float(held[best]),
        final_epoch=int(epochs[-1]),
        final_heldout_loss=float(held[-1]),
        overfit_gap=float(held[-1] - held[best]),  # >= 0; 0 when the last epoch is the best
        best_acc_epoch=int(epochs[best_acc]),
        max_heldout_acc=float(acc[best_acc]),
        final_heldout_acc=float(acc[-1]),
        acc_drop=float(acc[best_acc] - acc[-1]),  # >= 0
        final_train_loss=float(final.train_loss),
        final_generalisation_gap=float(final.heldout_loss - final.train_loss),
    )
