"""isoscope.atlas.costs: an atlas's kNN graph (exact or NN-descent) and its layout (full UMAP or landmarks)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from isoscope.atlas import costs
from isoscope.costs import FREE
from isoscope.neighbours.costs import UmapRate


def test_a_knn_graph_costs_n_squared_d_exact_and_n_log_n_through_nndescent():
    from isoscope.atlas.graph import EXACT_MAX_ROWS

    rate = costs.KnnRate(exact=1e-11, approx=1e-5)
    exact = costs.knn_cost(10_000, 384, k=16, rate=rate)
    assert exact.seconds == pytest.approx(1e8 * 384 * 1e-11) and exact.disk_bytes == 10_000 * 16 * 8
    assert costs.knn_cost(EXACT_MAX_ROWS, 384, k=16, rate=rate).seconds == pytest.approx(EXACT_MAX_ROWS**2 * 384e-11)
    n = EXACT_MAX_ROWS + 1  # NN-descent from here on
    assert costs.knn_cost(n, 384, k=16, rate=rate).seconds == pytest.approx(n * math.log2(n) * 1e-5)
    assert costs.knn_cost(1_000_000, 384, k=16, rate=rate).seconds == pytest.approx(1e6 * math.log2(1e6) * 1e-5)
    assert costs.knn_cost(1, 384, k=16, rate=rate) == FREE


def test_the_landmark_layout_costs_its_sample_and_the_refinement():
    from isoscope.atlas.layout import REFINE_EPOCHS

    umap, knn = UmapRate(2e-6, 0.0), costs.KnnRate(1e-11, 1e-5)
    full = costs.layout_cost(50_000, 384, k=16, landmarks=0, umap=umap, knn=knn)
    assert full.seconds == pytest.approx(50_000 * 200 * 2e-6)
    assert (
        costs.layout_cost(50_000, 384, k=16, landmarks=100_000, umap=umap, knn=knn) == full
    )  # fewer rows than landmarks: full UMAP
    big = costs.layout_cost(1_000_000, 384, k=16, landmarks=100_000, umap=umap, knn=knn)
    sample = costs.knn_cost(100_000, 384, k=16, rate=knn).seconds + 100_000 * 200 * 2e-6
    assert big.seconds == pytest.approx(sample + 1_000_000 * REFINE_EPOCHS * 2e-6)
    # at 1M rows the sample's 200 epochs over a tenth of the rows plus REFINE_EPOCHS over all of them beat
    # full UMAP's 200 over all: (0.1 * 200 + REFINE_EPOCHS) / 200 of its point-epochs, plus the sample's graph
    full_1m = costs.layout_cost(1_000_000, 384, k=16, landmarks=0, umap=umap, knn=knn).seconds
    assert big.seconds < full_1m * ((0.1 * 200 + REFINE_EPOCHS) / 200 + 0.1)
    assert big.seconds < full_1m


def test_the_knn_probe_measures_both_indexes():
    rate = costs.measure_knn(8)  # 4,000 probe rows of 8 dimensions: milliseconds
    assert rate.exact > 0 and rate.approx > 0
    x = costs.knn_probe_vectors(500, 64)
    assert x.shape == (500, 64) and x.dtype == np.float32
    assert np.linalg.svd(x, compute_uv=False)[costs.KNN_PROBE_RANK] < 0.1 * np.linalg.svd(x, compute_uv=False)[0]


def test_the_one_machine_peak_is_fitted_to_the_measured_million():
    peak = costs.one_machine_peak(1_000_000, 384, k=15, spaces=2)
    assert peak / 2**30 == pytest.approx(6.44, abs=0.01)  # bench/RESULTS.md, issue 27's quiet run
    holds = costs.one_machine_rows(24 * 2**30, 384, k=15, spaces=2)
    assert 3_000_000 < holds < 4_500_000  # the "a 24 GiB machine tops out near three million"
    assert costs.one_machine_peak(holds, 384, k=15, spaces=2) - costs.PEAK_BASE_BYTES <= 24 * 2**30


def test_a_build_without_a_graph_is_priced_by_its_measured_peak():
    """A raw-only PCA map makes no graph: its peak is the texts and layout arrays, fitted to the measured 10M x 8
    build (4.47 GiB, bench/RESULTS.md), not the graph's edges (which refused that build as 24 GB)."""
    peak = costs.one_machine_peak(10_000_000, 8, k=15, spaces=1, graph=False)
    assert peak / 2**30 == pytest.approx(4.47, abs=0.01)
    assert peak < costs.one_machine_peak(10_000_000, 8, k=15, spaces=1) / 4
    costs.check_fits(10_000_000, 8, k=15, spaces=1, graph=False, available=8 * 2**30)


def test_a_build_that_cannot_fit_is_refused_in_one_line():
    from isoscope.errors import InputError

    costs.check_fits(10_000, 384, k=15, spaces=2, available=2**30)
    with pytest.raises(InputError) as err:
        costs.check_fits(1_000_000, 384, k=15, spaces=2, available=2 * 2**30)
    text = str(err.value)
    assert (
        "\n" not in text and "--engine ray" in text and "room for about 337,230 rows" in text
    )  # 2 GiB / (384 x 4 + 16 x 151 x 2) bytes


def test_the_ray_plan_bounds_each_task_by_its_shard():
    plan = costs.atlas_plan(
        10_000_000, 384, k=15, spaces=2, landmarks=100_000, engine="ray", shard_rows=100_000, workers=32
    )
    assert plan.shards == 100 and plan.shard_rows == 100_000
    small = costs.ray_task_bytes(100_000, 384, k=15)
    assert plan.task_bytes == small and small < 1.5 * 2**30  # not n x d: 10M x 384 x 4 is 14.3 GiB
    bigger = costs.atlas_plan(
        100_000_000, 384, k=15, spaces=2, landmarks=100_000, engine="ray", shard_rows=100_000, workers=32
    )
    assert (bigger.task_bytes, bigger.driver_bytes) == (plan.task_bytes, plan.driver_bytes)  # flat in n
    lines = plan.lines()
    assert "100 shard(s) of 100,000 rows on 32 worker CPU(s)" in lines[1]
    local = costs.atlas_plan(50_000, 384, k=15, spaces=2, landmarks=100_000, engine="local", shard_rows=1, workers=1)
    assert local.holds_rows > 0 and "this machine holds about" in local.lines()[1]


def test_the_ray_drivers_peak_is_a_constant_stated_in_the_plan():
    """Issue 54.1: the driver's bound is the same at 1M and 100M rows, and is the arithmetic of its terms: the base
    and the largest stage; here (384 dims, k 15, 100,000 landmarks, shards of 100,000) the landmarks' UMAP."""
    from isoscope.atlas.ray_graph import MAX_LISTS

    plans = [
        costs.atlas_plan(n, 384, k=15, spaces=1, landmarks=100_000, engine="ray", shard_rows=100_000, workers=2)
        for n in (1_000_000, 3_000_000, 100_000_000)
    ]
    assert len({p.driver_bytes for p in plans}) == 1
    landmarks = 100_000 * (4 * 384 + 16 * costs.EDGE_BYTES)  # 395,200,000 bytes
    assert landmarks > MAX_LISTS * 384 * 20 > 100_000 * (16 * 12 + 16)  # k-means 251,658,240; a shard 20,800,000
    assert plans[0].driver_bytes == costs.RAY_DRIVER_BASE_BYTES + landmarks == 1_200_506_368  # 1.12 GiB
    assert "the driver at most 1.1 GB whatever the rows" in plans[0].lines()[1]
    full = costs.atlas_plan(50_000, 384, k=15, spaces=1, landmarks=0, engine="ray", shard_rows=10_000, workers=2)
    assert "(UMAP of every row on the driver)" in full.lines()[1]


def test_the_one_machine_plan_times_graphs_and_layouts_at_the_measured_rates():
    """Issue 50: the one-machine plan priced 300 rows' graphs and layouts at 0.15 s (a per-row constant fitted to a
    million rows); 14 s were taken. With this machine's rates it is each space's exact graph (n^2 d) and full
    UMAP (n x 500 epochs); a raw-only PCA map has neither."""
    from isoscope.neighbours.costs import UmapRate

    knn, umap = (
        costs.KnnRate(exact=1e-9, approx=float("nan")),
        UmapRate(seconds_per_point_epoch=1e-5, compile_seconds=9),
    )
    args = {"k": 15, "landmarks": 100_000, "engine": "local", "shard_rows": 1, "workers": 1}
    plan = costs.atlas_plan(300, 384, spaces=2, **args, knn=knn, umap=umap)
    assert plan.seconds == pytest.approx(2 * 300 * 300 * 384 * 1e-9 + 2 * 300 * 500 * 1e-5)
    assert costs.atlas_plan(300, 384, spaces=1, **args, graph=False).seconds == 0  # PCA of the raw space only
    assert not costs.needs_approx(300, 100_000) and costs.needs_approx(30_000, 0)
