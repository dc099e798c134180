"""What the isotropy metrics of a space cost here (``isoscope.geometry.metrics.all_metrics``), in two parts counted
separately, each timed on a probe of the space's own dimension (``measure_metrics``):

- uniformity: every pair of up to ``UNIFORMITY_POINTS`` rows (a product and an exponential per pair), so
  pairs x the probe's seconds per pair;
- the rest (the covariance and its eigendecomposition, the partition function, the average cosine): passes over
  the rows, so rows x the probe's seconds per row. A linear calibrator's fit and transform (a covariance, an
  eigendecomposition, a product) is priced as one such pass (``linear_fit_cost``).

Issue 50: the Anisotropy page's first visit computes these for every space it shows and every layer of the
model (``all_metrics`` 10 times on the demo, ~3 s each on 2 cores), and its estimate counted the embedding alone:
25 s said, 61 s taken.

The value is ``isoscope.costs.Cost``. Light to import: numpy and the metrics are imported inside
``measure_metrics``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from isoscope.costs import FREE, Cost

UNIFORMITY_POINTS = 5_000  # ``isoscope.geometry.metrics.uniformity``'s default ``max_points``
PROBE_ROWS = 1_500  # rows of the probe: ~1.1M pairs, a fraction of a second on one core


@dataclass(frozen=True)
class MetricsRate:
    """``all_metrics``'s cost here for one dimension: seconds per pair of rows (uniformity) and per row (the
    rest)."""

    dim: int
    pair_seconds: float
    row_seconds: float


def _pairs(n_rows: int) -> float:
    m = min(n_rows, UNIFORMITY_POINTS)
    return m * (m - 1) / 2


def measure_metrics(dim: int) -> MetricsRate:
    """Time ``uniformity`` and ``all_metrics`` on ``PROBE_ROWS`` seeded random rows of ``dim`` dimensions (after a
    small warm-up call): uniformity's seconds over its pairs, the rest of ``all_metrics`` over the rows."""
    import numpy as np

    from isoscope.geometry.metrics import all_metrics, uniformity

    x = np.random.default_rng(0).standard_normal((PROBE_ROWS, dim)).astype(np.float32)  # (p, d)
    all_metrics(x[:64])  # warm-up: first calls into LAPACK and scipy
    start = time.perf_counter()
    uniformity(x)
    pairs = time.perf_counter() - start
    start = time.perf_counter()
    all_metrics(x)
    every = time.perf_counter() - start
    rest = max(every - pairs, 0.1 * every)  # the two timings are separate samples: never a negative share
    return MetricsRate(dim, max(pairs, 1e-6) / _pairs(PROBE_ROWS), rest / PROBE_ROWS)


def metrics_cost(n_rows: int, rate: MetricsRate, *, spaces: int = 1) -> Cost:
    """``all_metrics`` of ``spaces`` spaces of ``n_rows`` rows each, of ``rate.dim`` dimensions."""
    if n_rows < 2 or spaces < 1:
        return FREE
    return Cost(spaces * (_pairs(n_rows) * rate.pair_seconds + n_rows * rate.row_seconds))


def uniformity_cost(n_rows: int, rate: MetricsRate, *, spaces: int = 1) -> Cost:
    """``uniformity`` alone (its pairs of up to ``UNIFORMITY_POINTS`` rows) of ``spaces`` spaces of ``n_rows`` rows:
    what the Pooling explorer computes for every pooling and calibrator (``isoscope.anatomy.poolings``)."""
    if n_rows < 2 or spaces < 1:
        return FREE
    return Cost(spaces * _pairs(n_rows) * rate.pair_seconds)


def linear_fit_cost(n_rows: int, rate: MetricsRate, *, fits: int = 1) -> Cost:
    """Fitting ``fits`` linear calibrators (whitening, sn, abtt, their chains) on ``n_rows`` rows and mapping them:
    a pass over the rows each, priced as the rest of ``all_metrics``."""
    if n_rows < 2 or fits < 1:
        return FREE
    return Cost(fits * n_rows * rate.row_seconds)
