"""What training a flow costs here: optimiser steps x the seconds of one step, plus the fit's setup, both measured
on this machine by training the same architecture for three short epochs on random vectors of the same dimension
(``measure_flow_rate``). The linear calibrators fit in well under a second: they cost nothing worth saying.

The value is ``isoscope.costs.Cost``. Light to import: numpy and torch are imported inside ``measure_flow_step``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from isoscope.costs import Cost

if TYPE_CHECKING:
    from isoscope.calibrate.flow import Flow


PROBE_EPOCHS = 3  # the first pays the optimiser's lazy set-up; the others are averaged
PROBE_BATCHES = 2  # batches an epoch of the probe: a one-batch epoch counts the epoch's own overhead as a step


@dataclass(frozen=True)
class FlowRate:
    """A flow's speed here: ``step`` seconds per optimiser step, and ``setup`` seconds of the work around the
    epochs (whitening, actnorm initialisation, the bits/dim summaries), about the same for any fit set (measured:
    a linear share of the rows priced a fit of 2,000 rows at 2.7x)."""

    step: float
    setup: float = 0.0


def measure_flow_rate(dim: int, flow: Flow | None = None) -> FlowRate:
    """``flow`` (an unfitted ``Flow``; default ``Flow()``) timed on ``dim``-dimensional seeded random vectors:
    ``PROBE_EPOCHS`` epochs of ``PROBE_BATCHES`` batches, the epochs after the first averaged into the step (the
    flow's own ``history_`` seconds), the rest of the fit's wall time its setup. Issue 41: one timed step was a
    single sample, and a fit's setup was not counted: 0.4x and 5x off on a shared machine."""
    import time

    import numpy as np
    from sklearn.base import clone

    from isoscope.calibrate.flow import Flow

    probe = clone(flow if flow is not None else Flow()).set_params(epochs=PROBE_EPOCHS)
    rows = PROBE_BATCHES * max(probe.batch_size, 2)
    x = np.random.default_rng(0).standard_normal((rows, dim)).astype(np.float32)  # (rows, d)
    start = time.perf_counter()
    probe.fit(x)
    wall = time.perf_counter() - start
    epochs = [float(h["seconds"]) for h in probe.history_]
    timed = epochs[1:] or epochs
    step = max(sum(timed) / max(len(timed), 1) / PROBE_BATCHES, 1e-6)
    return FlowRate(step=step, setup=max(wall - sum(epochs), 0.0))


def measure_flow_step(dim: int, flow: Flow | None = None) -> float:
    """Seconds per optimiser step of ``flow`` (``measure_flow_rate``'s step)."""
    return measure_flow_rate(dim, flow).step


def flow_cost(n_rows: int, flow: Flow, rate: FlowRate | float) -> Cost:
    """Training a flow on ``n_rows`` vectors: every epoch passes each row once, at ``rate.step`` seconds per full
    batch (a smaller last batch, or a fit set smaller than one batch, costs its share), plus the fit's setup
    (``FlowRate.setup``; a bare step time has none); its saved parameters are a few MB, not worth naming."""
    rate = rate if isinstance(rate, FlowRate) else FlowRate(step=float(rate))
    return Cost(flow.epochs * max(n_rows, 1) / flow.batch_size * rate.step + rate.setup)
