"""isoscope.landscape.costs: a live run's work of each kind (points, steps, Hessian products, vectors written) times
the seconds of each, measured."""

from __future__ import annotations

import pytest

from isoscope.landscape import costs
from isoscope.landscape.live import LiveRun


def _run(**over) -> LiveRun:
    base = {"model": "", "task": "demo-topic", "n_train": 64, "epochs": 2, "lr": 5e-5, "grid": 5, "max_length": 64}
    return LiveRun(**{**base, "eval_size": 16, **over})


RATES = costs.LandscapeRates(point=0.1, step=0.5, hvp=2.0, write=0.3, warmup=1.0)


def test_a_live_run_costs_more_with_every_knob_and_writes_its_checkpoints():
    def seconds(rates=RATES, **over) -> float:
        return costs.landscape_cost(_run(**over), n_params=22_000_000, num_layers=6, rates=rates).seconds

    base = seconds()
    for knob in ({"grid": 7}, {"n_train": 128}, {"epochs": 3}, {"hessian_iters": 10}):  # eval_size: in the point
        assert seconds(**knob) > base, knob
    doubled = costs.LandscapeRates(**{k: 2 * v for k, v in RATES.as_dict().items()})
    assert seconds(doubled) == pytest.approx(2 * base)
    assert costs.landscape_cost(_run(), n_params=22_000_000, num_layers=6, rates=RATES).disk_bytes == int(
        _run().disk_mb(22_000_000) * 2**20
    )
    work = costs.landscape_work(_run(), 6)
    assert work["step"] == 2 * 2 * 2 * 4  # both inits x 2 tasks x 2 epochs x 4 steps of 16 examples
    assert work["hvp"] == 2 * 5 and work["write"] == 4 * (3 + 2 * 2) and work["warmup"] == 4
    # 11 + 25 task-plane points, 3 checkpoints, 9 rollback groups, 10 + 25 filter-view points
    assert work["point"] == pytest.approx(2 * (11 + 25 + 3 + 9 + 10 + 25 + 3 * (16 + 32) / 32))
    assert base == pytest.approx(sum(work[k] * v for k, v in RATES.as_dict().items()))
