"""isoscope.calibrate.costs: a flow's training costs its optimiser steps at the step time measured here."""

from __future__ import annotations

import pytest

from isoscope.calibrate import costs
from isoscope.calibrate.flow import Flow


def test_a_flow_costs_its_steps():
    flow = Flow(hidden=16, batch_size=32, epochs=3)
    step = costs.measure_flow_step(8, flow)
    assert step > 0
    one, two = costs.flow_cost(320, flow, step), costs.flow_cost(640, flow, step)
    assert two.seconds == pytest.approx(2 * one.seconds)  # 10 -> 20 batches per epoch
    longer = costs.flow_cost(320, Flow(hidden=16, batch_size=32, epochs=6), step)
    assert longer.seconds == pytest.approx(2 * one.seconds)
    assert costs.flow_cost(16, flow, step).seconds == pytest.approx(3 * step / 2)  # half a batch per epoch


def test_a_flows_setup_is_measured_once_per_fit():
    """Issue 41: the setup around the epochs (whitening, actnorm, bits/dim summaries) was not counted, and a
    small fit cost 2.4x its estimate; the probe measures it and every fit pays it once."""
    flow = Flow(hidden=16, batch_size=32, epochs=3)
    rate = costs.measure_flow_rate(8, flow)
    assert rate.step > 0 and rate.setup > 0
    for n in (320, 640):
        bare = costs.flow_cost(n, flow, rate.step).seconds
        assert costs.flow_cost(n, flow, rate).seconds == pytest.approx(bare + rate.setup)
