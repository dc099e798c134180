"""isoscope.landscape.task_view: summaries of the task-plane curve and surface, trajectories without a surface."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from isoscope.landscape.axes import make_plane
from isoscope.landscape.records import TrajectoryPoint
from isoscope.landscape.schema import Fields
from isoscope.landscape.task_view import curve_summary, surface_summary, trajectories
from isoscope.landscape.train import Checkpoint
from tests.core.landscape.helpers import Quadratic, points


def test_curve_and_surface_summaries_known_answers():
    a = np.array([-0.5, 0.0, 0.5, 1.0, 1.5])
    curve = {"alpha": a, "train_loss": (a - 1.2) ** 2, "heldout_acc": np.array([0.1, 0.2, 0.6, 0.5, 0.4])}
    s = curve_summary(curve)
    assert s["alpha_min_train_loss"] == 1.0 and s["train_loss_at_0"] == pytest.approx(1.44)
    assert s["alpha_max_heldout_acc"] == 0.5 and s["heldout_acc_at_1"] == 0.5
    b = np.array([-1.0, 0.0, 1.0])
    A, B = np.meshgrid(a, b, indexing="ij")
    surface = {"alpha": a, "beta": b, "train_loss": (A - 0.5) ** 2 + B**2, "heldout_error": np.abs(A) + np.abs(B - 1)}
    ss = surface_summary(surface)
    assert ss["argmin_train_loss"] == [0.5, 0.0] and ss["argmin_heldout_error"] == [0.0, 1.0]
    assert ss["train_loss_at_theta1"] == pytest.approx(0.25) and ss["grid"] == [5, 3]


def test_trajectories_without_a_surface_have_nan_surface_values(tmp_path):
    quad = Quadratic()
    theta0, theta1, theta2 = points(12, seed=7, dtype=torch.float64)
    plane = make_plane(theta0, theta1, theta2)
    ck = [Checkpoint(0, tmp_path / "0", "d0", math.nan), Checkpoint(1, tmp_path / "1", "d1", 0.5)]
    known = {("task1", 0): (theta0, None), ("task1", 1): (theta1, None), ("task2", 1): (theta2, None)}

    def evaluate(theta):  # every metric a trajectory point records (records.Metrics)
        return {**quad.evaluate(theta), "train_acc": 0.5, "heldout_loss": 1.0, "heldout_acc": 0.25}

    rows = trajectories(evaluate, plane, None, ckpts1=ck, ckpts2=ck, to_task1_space=lambda t: t, known=known)
    assert [(r["run"], r["epoch"]) for r in rows] == [("task1", 0), ("task1", 1), ("task2", 0), ("task2", 1)]
    parsed = [TrajectoryPoint.parse(Fields(r, tmp_path / "trajectory.json")) for r in rows]  # what the reader reads
    assert [p.to_json() for p in parsed] == rows and parsed[3].metrics.heldout_acc == 0.25
    assert all(math.isnan(r["surface_train_loss"]) for r in rows)
    assert rows[1]["a"] == pytest.approx(1.0, abs=1e-9) and rows[3]["residual"] < 1e-9
    assert rows[1]["train_loss"] == quad.evaluate(theta1)["train_loss"]
