"""Token counting, rank buckets, norm/kNN on hand-made matrices and the real-model token spaces."""

from __future__ import annotations

import math
from collections import Counter
from typing import ClassVar

import numpy as np
import pytest
from scipy.spatial.distance import cdist

from isoscope.encode.embed import token_vectors
from isoscope.errors import InputError
from isoscope.geometry.frequency import (
    DEFAULT_EDGES,
    FrequencyConfig,
    TokenPoints,
    assign_buckets,
    bucket_labels,
    calibrate_points,
    contextual_token_points,
    count_tokens,
    frequency_analysis,
    frequency_table,
    knn_mean_distance,
    parse_edges,
    static_embeddings,
    static_token_points,
    token_geometry,
)
from isoscope.paths import DEMO_CORPUS


class TinyWhitening:
    """Reference whitening for tests: z = (x - mu) U diag(1 / sqrt(lambda + eps))."""

    def fit(self, X: np.ndarray) -> TinyWhitening:
        X = np.asarray(X, np.float64)
        self.mu = X.mean(0)
        lam, U = np.linalg.eigh(np.cov(X - self.mu, rowvar=False))
        self.W = U / np.sqrt(np.clip(lam, 0, None) + 1e-6)
        return self

    def transform(self, X: np.ndarray) -> np.ndarray:
        return (np.asarray(X, np.float64) - self.mu) @ self.W


class Identity:
    def fit(self, X: np.ndarray) -> Identity:
        return self

    def transform(self, X: np.ndarray) -> np.ndarray:
        return np.asarray(X)


# ---------------------------------------------------------------- counting


def test_count_tokens_exact_on_hand_corpus(encoder) -> None:
    tok = encoder.tokenizer
    the, cat, sat = tok.convert_tokens_to_ids(["the", "cat", "sat"])
    counts = count_tokens(tok, ["The cat sat", "the cat", "THE"])
    assert counts == Counter({the: 3, cat: 2, sat: 1})
    assert not set(counts) & set(tok.all_special_ids)  # [CLS]/[SEP] never counted


def test_count_tokens_excludes_unknown_and_respects_max_length(encoder) -> None:
    tok = encoder.tokenizer
    counts = count_tokens(tok, ["the [UNK] the"])
    assert counts == Counter({tok.convert_tokens_to_ids("the"): 2})
    truncated = count_tokens(tok, ["the cat sat on the mat"], max_length=4)  # [CLS] the cat [SEP]
    assert sum(truncated.values()) == 2


def test_frequency_table_ranks_by_count_then_id() -> None:
    table = frequency_table(Counter({7: 2, 3: 5, 9: 2, 1: 1}))
    assert table["token_id"].tolist() == [3, 7, 9, 1]
    assert table["rank"].tolist() == [0, 1, 2, 3]
    assert table["count"].tolist() == [5, 2, 2, 1]


# ---------------------------------------------------------------- buckets


def test_default_bucket_labels_and_assignment() -> None:
    assert bucket_labels(DEFAULT_EDGES) == ["0-100", "100-500", "500-5k", "5k+"]
    ranks = np.array([0, 99, 100, 499, 500, 4999, 5000, 10**6])
    assert assign_buckets(ranks).tolist() == [0, 0, 1, 1, 2, 2, 3, 3]


def test_parse_edges_forms_and_errors() -> None:
    assert parse_edges("100,500,5k") == (0, 100, 500, 5000)
    assert parse_edges([0, 10]) == (0, 10)
    assert bucket_labels((0, 2, 1500)) == ["0-2", "2-1.5k", "1.5k+"]
    for bad in ("100,50", "a,b", [0, 0, 5]):
        with pytest.raises(InputError):
            parse_edges(bad)


# ---------------------------------------------------------------- kNN and norms


BACKENDS = ("numpy", "faiss")


@pytest.mark.parametrize("backend", BACKENDS)
def test_knn_hand_line(backend: str) -> None:
    X = np.array([[0.0], [1.0], [3.0], [6.0]])
    np.testing.assert_allclose(knn_mean_distance(X, k=1, backend=backend), [1, 1, 2, 3], rtol=1e-6)
    np.testing.assert_allclose(knn_mean_distance(X, k=2, backend=backend), [2, 1.5, 2.5, 4], rtol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_knn_excludes_same_group(backend: str) -> None:
    X = np.array([[0.0], [1.0], [3.0], [6.0]])
    groups = np.array([0, 0, 1, 2])
    np.testing.assert_allclose(knn_mean_distance(X, k=1, groups=groups, backend=backend), [3, 2, 2, 3], rtol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_knn_matches_brute_force(backend: str) -> None:
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 7)) * 3 + 5
    groups = rng.integers(0, 120, size=300)  # several points per group, as in occurrence mode
    D = cdist(X, X)
    D[groups[:, None] == groups[None, :]] = np.inf
    expected = np.sort(D, axis=1)[:, :3].mean(1)
    np.testing.assert_allclose(knn_mean_distance(X, k=3, groups=groups, backend=backend), expected, rtol=1e-5)


def test_knn_needs_more_groups_than_k() -> None:
    with pytest.raises(InputError, match="more than k=3"):
        knn_mean_distance(np.eye(3), k=3)
    with pytest.raises(InputError, match="auto, faiss, numpy"):
        knn_mean_distance(np.eye(5), k=1, backend="annoy")  # type: ignore[arg-type]


def test_token_geometry_hand_matrix() -> None:
    # 5 token ids; frequent tokens have small norms; rank order 10, 11, 12, 13, 14.
    counts = Counter({10: 50, 11: 20, 12: 5, 13: 2, 14: 1})
    vectors = np.array([[1.0, 0], [0, 2.0], [3.0, 0], [0, 4.5], [6.0, 0]])
    tokens, buckets, corr = token_geometry(TokenPoints(np.arange(10, 15), vectors), counts, k=1, edges=(0, 2, 4))
    np.testing.assert_allclose(tokens["norm"], [1, 2, 3, 4.5, 6])
    # nearest other point: 10 -> 12 (2), 11 -> 10 (sqrt 5), 12 -> 10 (2), 13 -> 11 (2.5), 14 -> 12 (3)
    np.testing.assert_allclose(tokens["knn_dist"], [2, math.sqrt(5), 2, 2.5, 3], rtol=1e-6)
    assert tokens["token_id"].tolist() == [10, 11, 12, 13, 14]
    assert tokens["rank"].tolist() == [0, 1, 2, 3, 4]
    assert tokens["bucket"].tolist() == ["0-2", "0-2", "2-4", "2-4", "4+"]
    assert buckets["n_tokens"].tolist() == [2, 2, 1]
    assert buckets["occurrences"].tolist() == [70, 7, 1]
    np.testing.assert_allclose(buckets["mean_norm"], [1.5, 3.75, 6])
    np.testing.assert_allclose(buckets["mean_knn_dist"], [(2 + math.sqrt(5)) / 2, 2.25, 3], rtol=1e-6)
    np.testing.assert_allclose(buckets["rel_norm"], np.array([1.5, 3.75, 6]) / 3.3)
    assert corr["n_tokens"] == 5
    assert corr["spearman_norm_count"] == pytest.approx(-100.0)  # frequent -> small norm
    assert corr["spearman_knn_count"] < 0  # frequent -> denser neighbourhood


def test_spearman_sign_flips_when_frequent_tokens_are_large() -> None:
    counts = Counter({1: 100, 2: 10, 3: 5, 4: 1})
    vectors = np.diag([4.0, 3.0, 2.0, 1.0])
    _, _, corr = token_geometry(TokenPoints(np.arange(1, 5), vectors), counts, k=1)
    assert corr["spearman_norm_count"] == pytest.approx(100.0)


def test_token_geometry_averages_occurrences_per_token() -> None:
    counts = Counter({1: 9, 2: 3, 3: 1})
    ids = np.array([1, 1, 2, 3])
    vectors = np.array([[1.0, 0], [3.0, 0], [0, 2.0], [0, -2.0]])
    tokens, buckets, _ = token_geometry(TokenPoints(ids, vectors), counts, k=1, edges=(0, 1))
    row = tokens.set_index("token_id")
    assert row.loc[1, "n_points"] == 2
    assert row.loc[1, "norm"] == pytest.approx(2.0)  # mean of norms 1 and 3, not the norm of the mean
    # the two occurrences of token 1 are not each other's neighbours: 1 -> (0, 2) at sqrt 5, 3 -> sqrt 13
    assert row.loc[1, "knn_dist"] == pytest.approx((math.sqrt(5) + math.sqrt(13)) / 2)
    assert row.loc[2, "knn_dist"] == pytest.approx(math.sqrt(5))
    assert buckets["bucket"].tolist() == ["0-1", "1+"]


def test_token_geometry_empty_bucket_and_missing_ids() -> None:
    counts = Counter({1: 3, 2: 2, 3: 1})
    pts = TokenPoints(np.array([1, 2, 3]), np.eye(3))
    _, buckets, _ = token_geometry(pts, counts, k=1, edges=(0, 100))
    assert buckets["n_tokens"].tolist() == [3, 0]
    assert math.isnan(buckets["mean_norm"].iloc[1])
    with pytest.raises(InputError, match="absent"):
        token_geometry(TokenPoints(np.array([1, 2, 4]), np.eye(3)), counts, k=1)


def test_calibrate_points_with_factory_whitens() -> None:
    X = np.random.default_rng(1).standard_normal((500, 4)) * [10, 1, 1, 0.1] + 3
    out = calibrate_points(TokenPoints(np.arange(500), X), TinyWhitening)
    np.testing.assert_allclose(np.cov(out.vectors, rowvar=False), np.eye(4), atol=1e-3)
    np.testing.assert_array_equal(out.token_ids, np.arange(500))


class CountingIdentity(Identity):
    fitted_rows: ClassVar[list[int]] = []

    def fit(self, X: np.ndarray) -> CountingIdentity:
        CountingIdentity.fitted_rows.append(len(X))
        return self


def test_calibrate_points_fits_on_subset_transforms_all() -> None:
    X = np.random.default_rng(2).standard_normal((50, 3))
    CountingIdentity.fitted_rows.clear()
    out = calibrate_points(TokenPoints(np.arange(50), X), CountingIdentity, fit_max=20)
    assert CountingIdentity.fitted_rows == [20]
    np.testing.assert_allclose(out.vectors, X, rtol=1e-6)  # every point transformed, in order (float32)


# ---------------------------------------------------------------- real model


def test_static_points_are_embedding_rows(encoder) -> None:
    W = static_embeddings(encoder)
    assert W.shape == (len(encoder.tokenizer), encoder.hidden_size)
    pts = static_token_points(encoder, [1996, 4937])
    np.testing.assert_array_equal(pts.vectors, W[[1996, 4937]])
    with pytest.raises(InputError):
        static_token_points(encoder, [W.shape[0]])


TEXTS = ["The cat sat on the mat.", "The dog sat on the log.", "A cat and a dog.", "The the the the the the."]


def test_contextual_occurrences_capped_and_special_free(encoder) -> None:
    pts = contextual_token_points(encoder, TEXTS, per_token=2, seed=0)
    counts = count_tokens(encoder.tokenizer, TEXTS)
    ids, n = np.unique(pts.token_ids, return_counts=True)
    assert set(ids.tolist()) == set(counts)
    assert all(k == min(2, counts[i]) for i, k in zip(ids.tolist(), n.tolist(), strict=True))
    # every sampled vector is one of the real occurrence vectors of its token
    tv = token_vectors(encoder, TEXTS)
    all_ids, all_vecs = np.concatenate(tv.token_ids), np.concatenate(tv.vectors)
    for tid, vec in zip(pts.token_ids, pts.vectors, strict=True):
        assert np.abs(all_vecs[all_ids == tid] - vec).max(axis=1).min() < 1e-5


def test_contextual_mean_mode_is_mean_of_occurrences(encoder) -> None:
    pts = contextual_token_points(encoder, TEXTS, mode="mean")
    tv = token_vectors(encoder, TEXTS)
    all_ids, all_vecs = np.concatenate(tv.token_ids), np.concatenate(tv.vectors)
    the = encoder.tokenizer.convert_tokens_to_ids("the")
    expected = all_vecs[all_ids == the].mean(0)
    np.testing.assert_allclose(pts.vectors[pts.token_ids == the][0], expected, rtol=1e-4, atol=1e-5)
    assert len(pts.token_ids) == len(set(pts.token_ids.tolist()))


def test_frequency_analysis_demo_corpus(encoder, repo_root) -> None:
    from isoscope.data import load_corpus

    texts = load_corpus(DEMO_CORPUS).texts[:80]
    cfg = FrequencyConfig(k=3, edges=(0, 50, 200), per_token=3)
    res = frequency_analysis(encoder, texts, calibrator=TinyWhitening, config=cfg)
    n_types = len(res.counts)
    assert set(res.buckets["space"]) == {"static", "contextual"}
    assert set(res.buckets["stage"]) == {"raw", "calibrated"}
    assert len(res.buckets) == 2 * 2 * 3
    for (_, _), grp in res.buckets.groupby(["space", "stage"]):
        assert grp["n_tokens"].sum() == n_types
        assert grp["occurrences"].sum() == res.counts["count"].sum()
    assert (res.correlations["n_tokens"] == n_types).all()
    raw_static = res.tokens[(res.tokens.space == "static") & (res.tokens.stage == "raw")]
    W = static_embeddings(encoder)
    np.testing.assert_allclose(raw_static["norm"], np.linalg.norm(W[raw_static["token_id"]], axis=1), rtol=1e-5)
    assert {"token", "token_id", "count", "rank", "norm", "knn_dist"} <= set(res.tokens.columns)
    # BERT-flow's observation holds for the static matrix here: frequent tokens are in denser regions
    knn = res.correlations.set_index(["space", "stage"]).loc[("static", "raw"), "spearman_knn_count"]
    assert knn < 0


def test_frequency_analysis_identity_calibration_changes_nothing(encoder) -> None:
    texts = TEXTS * 3 + ["Birds fly south in the winter.", "Rain fell on the quiet town."]
    res = frequency_analysis(encoder, texts, spaces=("static",), calibrator=Identity, config=FrequencyConfig(k=2))
    corr = res.correlations.set_index("stage")
    assert corr.loc["raw", "spearman_norm_count"] == pytest.approx(corr.loc["calibrated", "spearman_norm_count"])
    with pytest.raises(InputError, match="static, contextual"):
        frequency_analysis(encoder, texts, spaces=("nope",))


def test_frequency_analysis_with_registered_whitening(encoder) -> None:
    texts = TEXTS * 2 + ["Birds fly south in the winter.", "Rain fell on the quiet town."]
    res = frequency_analysis(encoder, texts, spaces=("static",), calibrator="whitening", config=FrequencyConfig(k=2))
    assert set(res.correlations["stage"]) == {"raw", "calibrated"}
    assert np.isfinite(res.tokens["knn_dist"]).all()
