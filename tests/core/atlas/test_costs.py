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
