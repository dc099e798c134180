"""isoscope.landscape.costs: a live run's work in evaluation points, times the seconds of one point."""

from __future__ import annotations

import pytest

from isoscope.landscape import costs
from isoscope.landscape.live import LiveRun


def _run(**over) -> LiveRun:
    base = {"model": "", "task": "demo-topic", "n_train": 64, "epochs": 2, "lr": 5e-5, "grid": 5, "max_length": 64}
    return LiveRun(**{**base, "eval_size": 16, **over})


def test_a_live_run_costs_more_with_every_knob_and_writes_its_checkpoints():
    def seconds(**over) -> float:
        return costs.landscape_cost(_run(**over), n_params=22_000_000, num_layers=6, point_seconds=0.1).seconds

    base = seconds()
    for knob in ({"grid": 7}, {"n_train": 128}, {"epochs": 3}, {"hessian_iters": 10}):  # eval_size: in the point
        assert seconds(**knob) > base, knob
    assert costs.landscape_cost(_run(), n_params=22_000_000, num_layers=6, point_seconds=0.2).seconds == pytest.approx(
        2 * base
    )
    assert costs.landscape_cost(_run(), n_params=22_000_000, num_layers=6, point_seconds=0.1).disk_bytes == int(
        _run().disk_mb(22_000_000) * 2**20
    )
    work = costs.landscape_points(_run(), 6)
    # both inits: 2 tasks x 2 epochs x 4 steps of 16 examples, each 3 forwards of 16 against a point's 32
    assert work["train"] == pytest.approx(2 * 2 * 2 * 4 * costs.STEP_FACTOR * 16 / 32)
    # 11 + 25 task-plane points, 3 checkpoints, 9 rollback groups, 10 + 25 filter-view points
    assert work["evaluate"] == pytest.approx(2 * (11 + 25 + 3 + 9 + 10 + 25 + 3 * (16 + 32) / 32))
