"""What the isotropy metrics of a space cost here (``isoscope.geometry.metrics.all_metrics``), in two parts counted
separately, each timed on a probe of the space's own dimension (``measure_metrics``):

- uniformity: every pair of up to ``UNIFORMITY_POINTS`` rows (a product and an exponential per pair), so
  pairs x the probe's seconds per pair;
- the rest (the covariance and its eigendecomposition, the partition function, the average cosine): passes over
  the rows and a few d x d eigendecompositions, so rows x the probe's seconds per row plus its seconds per call
  (two probes of the rest, of ``PROBE_ROWS`` rows and a quarter of them, split into the two). A linear
  calibrator's fit and transform, or a spectrum (a covariance, an eigendecomposition, a product) is priced as one
  such rest (``covariance_cost``).

Issue 50: the Anisotropy page's first visit computes these for every space it shows and every layer of the
model (``all_metrics`` 10 times on the demo, ~3 s each on 2 cores), and its estimate counted the embedding alone:
25 s said, 61 s taken.

The value is ``isoscope.costs.Cost``. Light to import: numpy and the metrics are imported inside
``measure_metrics``.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

from isoscope.costs import FREE, Cost

UNIFORMITY_POINTS = 5_000  # ``isoscope.geometry.metrics.uniformity``'s default ``max_points``
PROBE_ROWS = 1_000  # rows of the probe: ~0.5M pairs, a fraction of a second on one core
MIN_ROW_SHARE = 0.1  # the least of the rest of all_metrics that a probe puts per row (measure_metrics)
REPEATS = 3  # each probe timed three times, the median kept: one sample of a shared machine is noise (issue 50)


@dataclass(frozen=True)
class MetricsRate:
    """``all_metrics``'s cost here for one dimension: seconds per pair of rows (uniformity), per row and per call
    (the rest: what does not grow with the rows, the d x d eigendecompositions)."""

    dim: int
    pair_seconds: float
    row_seconds: float
    call_seconds: float = 0.0


def _pairs(n_rows: int) -> float:
    m = min(n_rows, UNIFORMITY_POINTS)
    return m * (m - 1) / 2


def measure_metrics(dim: int) -> MetricsRate:
    """Time ``uniformity`` and ``all_metrics`` on ``PROBE_ROWS`` seeded random rows of ``dim`` dimensions and
    ``all_metrics`` on a quarter of them (after a small warm-up call; the median of ``REPEATS`` timings each):
    uniformity's seconds over its pairs; the rest of ``all_metrics`` (its time less uniformity's) at the two
    sizes, split into seconds per row and per call (issue 50: all of it per row priced 300 rows' metrics at a
    third of their time), the per-row part within [``MIN_ROW_SHARE``, 1] of all of it."""
    import numpy as np

    from isoscope.geometry.metrics import all_metrics, uniformity

    x = np.random.default_rng(0).standard_normal((PROBE_ROWS, dim)).astype(np.float32)  # (p, d)
    all_metrics(x[:64])  # warm-up: first calls into LAPACK and scipy
    pairs = max(_median(lambda: uniformity(x)), 1e-6) / _pairs(PROBE_ROWS)
    rests = []
    for rows in (PROBE_ROWS, PROBE_ROWS // 4):
        every = _median(lambda rows=rows: all_metrics(x[:rows]))
        rests.append(max(every - pairs * _pairs(rows), 0.1 * every))  # separate samples: never a negative share
    return MetricsRate(dim, pairs, *split_rest(rests[0], rests[1]))


def split_rest(full: float, quarter: float) -> tuple[float, float]:
    """(seconds per row, seconds per call) of the rest of ``all_metrics`` from its seconds on ``PROBE_ROWS`` rows
    (``full``) and on a quarter of them (``quarter``): the slope between the two sizes, kept within
    [``MIN_ROW_SHARE``, 1] of ``full`` per row, the rest per call. Noise (the smaller took as long or longer) gives
    the least per-row share, not all of it per row: that priced 300 rows' metrics at a third of their time on a
    loaded machine (issue 50; bench/costs.py's Anisotropy page at 0.3-0.4)."""
    every_row = full / PROBE_ROWS
    slope = (full - quarter) / (PROBE_ROWS - PROBE_ROWS // 4)
    per_row = min(max(slope, MIN_ROW_SHARE * every_row), every_row)
    return per_row, full - per_row * PROBE_ROWS


def _median(fn) -> float:
    """The median of ``REPEATS`` timings of ``fn()``."""
    seconds = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        fn()
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds)


def metrics_cost(n_rows: int, rate: MetricsRate, *, spaces: int = 1) -> Cost:
    """``all_metrics`` of ``spaces`` spaces of ``n_rows`` rows each, of ``rate.dim`` dimensions."""
    if n_rows < 2 or spaces < 1:
        return FREE
    return Cost(spaces * (_pairs(n_rows) * rate.pair_seconds + n_rows * rate.row_seconds + rate.call_seconds))


def uniformity_cost(n_rows: int, rate: MetricsRate, *, spaces: int = 1) -> Cost:
    """``uniformity`` alone (its pairs of up to ``UNIFORMITY_POINTS`` rows) of ``spaces`` spaces of ``n_rows`` rows:
    what the Pooling explorer computes for every pooling and calibrator (``isoscope.anatomy.poolings``)."""
    if n_rows < 2 or spaces < 1:
        return FREE
    return Cost(spaces * _pairs(n_rows) * rate.pair_seconds)


def covariance_cost(n_rows: int, rate: MetricsRate, *, passes: int = 1) -> Cost:
    """``passes`` passes of a covariance, its eigendecomposition and a product over ``n_rows`` rows: a linear
    calibrator's fit and transform (whitening, sn, abtt, their chains), a singular-value spectrum; each priced
    as the rest of ``all_metrics``."""
    if n_rows < 2 or passes < 1:
        return FREE
    return Cost(passes * (n_rows * rate.row_seconds + rate.call_seconds))
