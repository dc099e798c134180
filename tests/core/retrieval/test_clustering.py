"""isoscope.retrieval.clustering: V-measure of mini-batch k-means over seeds, fixes fitted without the labels."""

from __future__ import annotations

import numpy as np
import pytest

from isoscope.errors import InputError
from isoscope.retrieval.clustering import cluster_scores


def _blobs(seed: int = 0, spread: float = 0.2):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(4, 16)) * 3
    labels = np.repeat(np.arange(4), 50)  # (200,)
    X = (centres[labels] + rng.normal(scale=spread, size=(200, 16)) + 10).astype(np.float32)  # a shared offset
    return X, [f"topic {i}" for i in labels]


def test_separated_blobs_score_100_and_the_table_has_every_seed() -> None:
    X, labels = _blobs()
    got = cluster_scores(X, labels, variants=("raw", "centre"), seeds=(0, 1, 2))
    table = got.table()
    assert list(table["variant"]) == ["raw", "centre"] and list(table.columns[-3:]) == ["seed 0", "seed 1", "seed 2"]
    assert got.rows[1].mean == pytest.approx(100.0)  # centred, four tight blobs are found whatever the seed
    assert got.n_labels == 4 and got.to_dict()["variants"][0]["per_seed"] == list(got.rows[0].v_measure)


def test_the_labels_reach_only_the_score() -> None:
    """Shuffled labels change V-measure, never the fitted fix: k-means clusters the same vectors."""
    X, labels = _blobs(spread=2.0)
    shuffled = list(np.random.default_rng(0).permutation(labels))
    a = cluster_scores(X, labels, variants=("whitening:8",), seeds=(0,))
    b = cluster_scores(X, shuffled, variants=("whitening:8",), seeds=(0,))
    assert b.rows[1].mean < 10 < a.rows[1].mean  # the labels matter to the score ...
    from isoscope.calibrate import make_calibrator
    from isoscope.retrieval.clustering import kmeans_v_measure

    Z = make_calibrator("whitening:8").fit(X).transform(X)  # ... and the fix is the one fitted on X alone
    assert kmeans_v_measure(Z, np.asarray(labels, dtype=object), 0) == pytest.approx(a.rows[1].mean)


def test_what_clustering_refuses() -> None:
    X, labels = _blobs()
    with pytest.raises(InputError, match="changes a search"):
        cluster_scores(X, labels, variants=("csls",))
    with pytest.raises(InputError, match="no queries"):
        cluster_scores(X, labels, variants=("whitening@queries",))
    with pytest.raises(InputError, match="at least 2 different labels"):
        cluster_scores(X, ["one"] * len(X))
    with pytest.raises(InputError, match="one label per vector"):
        cluster_scores(X, labels[:-1])
