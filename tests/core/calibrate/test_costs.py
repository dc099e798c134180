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
