"""isoscope.geometry.costs: the isotropy metrics' cost, uniformity's pairs and the passes over the rows counted
apart, each at its probe's rate."""

from __future__ import annotations

import pytest

from isoscope.costs import FREE
from isoscope.geometry.costs import (
    MIN_ROW_SHARE,
    PROBE_ROWS,
    UNIFORMITY_POINTS,
    MetricsRate,
    covariance_cost,
    measure_metrics,
    metrics_cost,
    split_rest,
    uniformity_cost,
)


def test_pairs_stop_growing_at_uniformity_s_sample_rows_do_not() -> None:
    pairs, rows = MetricsRate(8, 1.0, 0.0), MetricsRate(8, 0.0, 1.0)
    assert metrics_cost(10, pairs).seconds == 45  # 10 rows: 45 pairs
    m = UNIFORMITY_POINTS
    assert metrics_cost(m, pairs).seconds == metrics_cost(3 * m, pairs).seconds == m * (m - 1) / 2
    assert metrics_cost(3 * m, rows).seconds == 3 * metrics_cost(m, rows).seconds == 3 * m
    assert metrics_cost(100, pairs, spaces=7).seconds == 7 * metrics_cost(100, pairs).seconds
    assert covariance_cost(100, rows, passes=2).seconds == 200 and covariance_cost(100, pairs).seconds == 0
    assert metrics_cost(1, rows) == FREE and metrics_cost(100, rows, spaces=0) == FREE
    both = MetricsRate(8, 1.0, 1.0)
    assert uniformity_cost(10, both, spaces=3).seconds == 3 * 45  # the pairs alone
    calls = MetricsRate(8, 0.0, 0.0, call_seconds=2.0)  # the d x d eigendecompositions: the same at any size
    assert metrics_cost(10, calls, spaces=3).seconds == metrics_cost(10_000, calls, spaces=3).seconds == 6
    assert covariance_cost(50, calls, passes=2).seconds == 4


def test_the_probe_times_both_parts_at_the_asked_dimension() -> None:
    rate = measure_metrics(16)
    assert rate.dim == 16 and rate.pair_seconds > 0 and rate.row_seconds > 0 and rate.call_seconds >= 0
    assert metrics_cost(2_000, rate).seconds == pytest.approx(
        2_000 * 1_999 / 2 * rate.pair_seconds + 2_000 * rate.row_seconds + rate.call_seconds
    )


@pytest.mark.parametrize("quarter", [1.0, 1.2, 3.0])
def test_a_noisy_probe_prices_a_small_corpus_near_the_probe_s_time(quarter) -> None:
    """Issue 50: the quarter-size probe as slow as the full one (noise on a loaded machine) put all of the rest per
    row, so 300 rows cost 0.3 of the 1,000-row probe's 1 s although the per-call part dominates; it is now at
    least 1 - 0.7 x MIN_ROW_SHARE of it, and the two parts add up to the full probe."""
    per_row, per_call = split_rest(1.0, quarter)
    assert per_row > 0 and per_call >= 0
    assert per_row * PROBE_ROWS + per_call == pytest.approx(1.0)
    assert per_row * 300 + per_call == pytest.approx(1 - 0.7 * MIN_ROW_SHARE)


def test_a_clean_probe_splits_at_the_slope() -> None:
    per_row, per_call = split_rest(1.0, 0.4)  # 0.6 s over 750 rows: 0.8 ms a row, 0.2 s a call
    assert per_row == pytest.approx(0.6 / 750) and per_call == pytest.approx(0.2)
