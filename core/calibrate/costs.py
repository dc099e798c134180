"""What training a flow costs here: optimiser steps x the seconds of one step, measured on this machine by
training the same architecture for two short epochs on random vectors of the same dimension
(``measure_flow_step``). The linear calibrators fit in well under a second: they cost nothing worth saying.

The value is ``isoscope.costs.Cost``. Light to import: numpy and torch are imported inside ``measure_flow_step``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from isoscope.costs import Cost

if TYPE_CHECKING:
    from isoscope.calibrate.flow import Flow


def measure_flow_step(dim: int, flow: Flow | None = None) -> float:
    """Seconds per optimiser step of ``flow`` (an unfitted ``Flow``; default ``Flow()``) on ``dim``-dimensional
    vectors: two epochs of one batch on seeded random vectors, the second timed (the flow's own ``history_``
    seconds: the first step pays the optimiser's lazy set-up)."""
    import numpy as np
    from sklearn.base import clone

    from isoscope.calibrate.flow import Flow

    probe = clone(flow if flow is not None else Flow()).set_params(epochs=2)
    x = np.random.default_rng(0).standard_normal((max(probe.batch_size, 2), dim)).astype(np.float32)  # (b, d)
    probe.fit(x)
    return max(float(probe.history_[-1]["seconds"]) if probe.history_ else 0.0, 1e-6)


def flow_cost(n_rows: int, flow: Flow, step_seconds: float) -> Cost:
    """Training a flow on ``n_rows`` vectors: every epoch passes each row once, at ``step_seconds`` per full
    batch (a smaller last batch, or a fit set smaller than one batch, costs its share; its saved parameters
    are a few MB, not worth naming)."""
    return Cost(flow.epochs * max(n_rows, 1) / flow.batch_size * step_seconds)
