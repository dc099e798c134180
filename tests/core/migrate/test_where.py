"""Where an adapter fails (issue 53.3): the per-text error column and the per-cluster table, on known answers: an
identity adapter (B = A) maps every held-out text exactly (cosine 1), and where half the documents are moved by noise
in B, that half's cluster is the worst."""

from __future__ import annotations

import numpy as np
import pytest

from isoscope.errors import InputError
from isoscope.migrate.config import MigrationConfig
from isoscope.migrate.run import evaluate_migration
from isoscope.migrate.where import cluster_labels, error_by_cluster, error_column
from tests.core.migrate.synthetic import synthetic, unit

CONFIG = MigrationConfig(methods=("procrustes",), fit_fraction=0.5, curve=(), resamples=200)
# float32 search vectors of unit rows: a cosine of a vector with itself is 1 within d x 6e-8 (d = 16)
EXACT = 1e-5


@pytest.fixture(scope="module")
def same():
    s = synthetic(n=120, q=30)
    return s, evaluate_migration((s.Q, s.D), (s.Q, s.D), s.task, config=CONFIG)


def test_an_identity_adapter_has_cosine_one_on_every_held_out_text(same):
    s, result = same
    texts = list(s.task.documents)
    colour = error_column(result, texts, direction="old->new")
    held = np.isfinite(colour)
    fit = np.zeros(len(texts), bool)
    fit[result.fit_rows] = True
    assert held.sum() == len(texts) - len(result.fit_rows) and not (held & fit).any()  # fit pairs: NaN
    np.testing.assert_allclose(colour[held], 1.0, atol=EXACT)
    shared = error_column(result, texts, direction="old->new", measure="shared")
    np.testing.assert_allclose(shared[np.isfinite(shared)], 1.0)  # the same top 10 as the true vectors
    assert np.isnan(error_column(result, ["not in the run"])).all()


def test_the_noisy_cluster_is_the_worst_and_named(same):
    s, _ = same
    rng = np.random.default_rng(3)
    moved = np.arange(len(s.D)) % 2 == 1  # odd documents: moved by noise in B
    Db = s.D.copy()
    Db[moved] = unit(Db[moved] + 0.5 * rng.normal(size=Db[moved].shape) / 4)
    result = evaluate_migration((s.Q, s.D), (s.Q, Db), s.task, config=CONFIG)
    table = error_by_cluster(result, moved.astype(int), direction="old->new")
    assert list(table["cluster"]) == [1, 0]  # worst first
    assert table["mean cosine"].iloc[0] < table["mean cosine"].iloc[1] - 0.05
    assert (table["p10 cosine"] <= table["mean cosine"]).all()
    assert table["texts"].sum() == len(s.D) - len(result.fit_rows)
    assert "document" in table["top words"].iloc[0]
    assert table["worst text"].iloc[0] in {s.task.documents[i] for i in np.flatnonzero(moved)}


def test_kmeans_clusters_and_bad_inputs_are_one_line(same):
    s, result = same
    labels = cluster_labels(s.D, 4)
    assert labels.shape == (len(s.D),) and set(labels) == {0, 1, 2, 3}
    np.testing.assert_array_equal(labels, cluster_labels(s.D, 4))  # seeded
    assert len(error_by_cluster(result, labels)) == 4
    for call, fragment in (
        (lambda: error_by_cluster(result, labels[:-1]), "one cluster label per document"),
        (lambda: cluster_labels(np.full((5, 3), np.nan)), "NaN"),
        (lambda: cluster_labels(s.D, 0), "number of clusters"),
        (lambda: error_column(result, ["x"], measure="nope"), "unknown adapter error measure"),
    ):
        with pytest.raises(InputError, match=fragment):
            call()
