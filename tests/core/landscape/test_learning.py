"""isoscope.landscape.learning: every checkpoint evaluated in order, and the overfitting summary's known answers."""

from __future__ import annotations

import math

import pytest
import torch

from isoscope.landscape.flat import vector_digest
from isoscope.landscape.learning import learning_curve, overfitting
from isoscope.landscape.records import LearningRow, Metrics
from isoscope.landscape.store import write_tensors
from isoscope.landscape.train import Checkpoint, _ckpt_path


def _checkpoints(folder, thetas: list[torch.Tensor]) -> list[Checkpoint]:
    out = []
    for epoch, theta in enumerate(thetas):
        path = _ckpt_path(folder, epoch)
        loss = math.nan if epoch == 0 else 1.0 / epoch
        write_tensors(path, {"theta": theta}, {"key": "k", "digest": vector_digest(theta), "train_loss": loss})
        out.append(Checkpoint(epoch, path, vector_digest(theta), loss))
    return out


def _metrics(theta: torch.Tensor) -> dict[str, float]:
    x = float(theta.sum())
    return {"train_loss": x, "train_acc": 0.5, "heldout_loss": 2 * x, "heldout_acc": 0.25}


def test_every_checkpoint_in_order_and_known_thetas_not_read(tmp_path):
    thetas = [torch.full((4,), float(e)) for e in range(4)]
    ckpts = _checkpoints(tmp_path, thetas)
    seen: list[tuple[int, int]] = []
    rows = learning_curve(_metrics, ckpts, progress=lambda done, total: seen.append((done, total)))
    assert [r.epoch for r in rows] == [0, 1, 2, 3] and seen[-1] == (4, 4)
    assert [r.metrics.train_loss for r in rows] == [0.0, 4.0, 8.0, 12.0]
    assert math.isnan(rows[0].epoch_train_loss) and rows[2].epoch_train_loss == 0.5
    ckpts[3].path.unlink()  # the last theta comes from memory: its file is not needed
    again = learning_curve(_metrics, ckpts, known={3: thetas[3]})
    assert [(r.epoch, r.metrics) for r in again] == [(r.epoch, r.metrics) for r in rows]
    assert again[3].metrics.heldout_loss == 24.0


def test_overfitting_summary_known_answer():
    held = [0.70, 0.50, 0.40, 0.45, 0.60]  # lowest at epoch 2, then rises by 0.2
    acc = [0.50, 0.70, 0.80, 0.75, 0.72]
    rows = [
        LearningRow(e, math.nan, Metrics(1.0 / (e + 1), 0.5, h, a))
        for e, (h, a) in enumerate(zip(held, acc, strict=True))
    ]
    o = overfitting(rows)
    assert (o.best_epoch, o.final_epoch, o.best_acc_epoch) == (2, 4, 2)
    assert o.min_heldout_loss == 0.40 and o.final_heldout_loss == 0.60
    assert o.overfit_gap == pytest.approx(0.20) and o.acc_drop == pytest.approx(0.08)
    assert o.final_generalisation_gap == pytest.approx(0.60 - 0.2)
    falling = [LearningRow(r.epoch, r.epoch_train_loss, Metrics(0.1, 0.5, 1.0 - 0.1 * r.epoch, 0.5)) for r in rows]
    monotone = overfitting(falling)
    assert monotone.overfit_gap == 0.0 and monotone.best_epoch == 4  # still improving: no overfitting
    with pytest.raises(ValueError, match="at least one"):
        overfitting([])
