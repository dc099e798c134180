"""isoscope.neighbours.index: the FAISS wrapper: exact search equals brute force, approximate recall, persistence, validation."""

from __future__ import annotations

import json

import numpy as np
import pytest

from isoscope.errors import InputError
from isoscope.neighbours.index import (
    FLAT_MAX_ROWS,
    HNSW_MAX_ROWS,
    INDEX_KINDS,
    IndexParams,
    VectorIndex,
    build_index,
    choose_kind,
    recall_at_k,
    recall_from_ids,
    sidecar_path,
)
from tests.data_helpers import assert_valid_topk, brute_force, clustered, cosines64, float32_dot_tolerance


@pytest.fixture(scope="module")
def data() -> np.ndarray:
    return clustered(3000, 48, 25, seed=0)


@pytest.fixture(scope="module")
def queries() -> np.ndarray:
    """New points around the same centres as ``data``."""
    return clustered(200, 48, 25, seed=0) + np.float32(0.05)


def test_flat_equals_numpy_brute_force(data, queries):
    index = build_index(data, "flat")
    scores, ids = index.search(queries, 10)
    ref_scores, _ = brute_force(data, queries, 10)
    assert scores.shape == ids.shape == (len(queries), 10)
    assert scores.dtype == np.float32 and ids.dtype == np.int64
    tol = float32_dot_tolerance(data.shape[1])  # FAISS ranks in float32: near-ties may swap on another CPU
    assert_valid_topk(ids, cosines64(data, queries), tol)
    np.testing.assert_allclose(scores, ref_scores, atol=tol)
    assert (np.diff(scores, axis=1) <= 1e-7).all()  # best first


def test_scale_invariance_cosine(data, queries):
    """Cosine search ignores vector lengths: scaling rows changes nothing."""
    scale = np.random.default_rng(3).uniform(0.1, 10, (len(data), 1)).astype(np.float32)
    _, ids_scaled = build_index(data * scale, "flat").search(queries * 7, 5)
    assert_valid_topk(ids_scaled, cosines64(data, queries), float32_dot_tolerance(data.shape[1]))


def test_hnsw_recall_on_clustered_data(data, queries):
    exact = build_index(data, "flat")
    hnsw = build_index(data, "hnsw", IndexParams(hnsw_m=16, ef_construction=100, ef_search=64))
    assert hnsw.kind == "hnsw" and hnsw.index.hnsw.efSearch == 64
    assert recall_at_k(hnsw, exact, queries, k=10) >= 0.9


def test_ivf_with_all_cells_probed_is_exact(data, queries):
    ivf = build_index(data, "ivf", IndexParams(nlist=16))
    ivf.set_search_params(nprobe=16)
    _, ref_ids = brute_force(data, queries, 10)
    _, ids = ivf.search(queries, 10)
    assert recall_from_ids(ids, ref_ids) == pytest.approx(1.0)


def test_ivfpq_builds_and_searches(data, queries):
    index = build_index(data, "ivfpq", IndexParams(nlist=16, nprobe=8, pq_m=12, pq_nbits=6))
    assert index.kind == "ivfpq" and index.params.pq_m == 12 and index.ntotal == len(data)
    scores, ids = index.search(queries, 10)
    assert ids.shape == (len(queries), 10) and ((ids >= 0) & (ids < len(data))).all()
    assert np.isfinite(scores).all()
    _, ref_ids = brute_force(data, queries, 10)
    assert recall_from_ids(ids, ref_ids) >= 0.4  # random ids would give ~0.003


def test_ivfpq_default_pq_m_divides_dimension():
    p = IndexParams().resolved("ivfpq", 100_000, 384)
    assert p.pq_m == 48 and 384 % p.pq_m == 0
    assert p.nlist == round(4 * np.sqrt(100_000)) and 1 <= p.nprobe <= p.nlist


@pytest.mark.parametrize("kind", ["ivf", "ivfpq"])
def test_default_nlist_leaves_39_training_rows_per_cell_of_train_size(kind):
    n = 2_000_000  # 4 sqrt(n) ~ 5657 cells would want 220k training rows; only train_size are sampled
    p = IndexParams().resolved(kind, n, 384)
    assert p.nlist == p.train_size // 39 and p.nlist < round(4 * np.sqrt(n))
    small = IndexParams(train_size=3_900).resolved(kind, n, 384)
    assert small.nlist == 100 and 1 <= small.nprobe <= small.nlist
    assert IndexParams(train_size=10).resolved(kind, n, 384).nlist == 1


def test_ivf_accepts_explicit_ids(data):
    index = VectorIndex.create(48, "ivf", IndexParams(nlist=4, nprobe=4))
    index.train(data)
    index.add(data[:100], ids=np.arange(1000, 1100))
    _, ids = index.search(data[:3], 1)
    np.testing.assert_array_equal(ids[:, 0], [1000, 1001, 1002])


def test_flat_add_keeps_order_and_refuses_other_ids(data):
    index = build_index(data[:100], "flat")
    index.add(data[100:150], ids=np.arange(100, 150))
    assert index.ntotal == 150
    with pytest.raises(InputError, match="insertion order"):
        index.add(data[:5], ids=[7, 8, 9, 10, 11])


@pytest.mark.parametrize("kind", ["flat", "hnsw", "ivf", "ivfpq"])
def test_save_load_round_trip(tmp_path, data, queries, kind):
    params = IndexParams(nlist=16, nprobe=4, pq_m=8, pq_nbits=6, ef_search=40)
    index = build_index(data, kind, params)
    path = tmp_path / "sub" / f"{kind}.faiss"
    index.save(path)
    loaded = VectorIndex.load(path)
    assert loaded.kind == kind and loaded.dim == 48 and loaded.ntotal == len(data)
    assert loaded.params == index.params
    s1, i1 = index.search(queries, 7)
    s2, i2 = loaded.search(queries, 7)
    np.testing.assert_array_equal(i1, i2)
    np.testing.assert_array_equal(s1, s2)
    assert not list(path.parent.glob(".*tmp"))  # no temporary files left behind


def test_load_rejects_missing_or_altered_files(tmp_path, data):
    path = tmp_path / "x.faiss"
    build_index(data[:200], "flat").save(path)
    # a changed FAISS file no longer matches the recorded digest
    raw = bytearray(path.read_bytes())
    raw[-1] ^= 0xFF
    path.write_bytes(bytes(raw))
    with pytest.raises(InputError, match="does not match"):
        VectorIndex.load(path)
    # a sidecar that lies about the kind
    build_index(data[:200], "flat").save(path)
    meta = json.loads(sidecar_path(path).read_text())
    sidecar_path(path).write_text(json.dumps({**meta, "kind": "hnsw"}))
    with pytest.raises(InputError, match="not the hnsw index"):
        VectorIndex.load(path)
    sidecar_path(path).write_text("{not json")
    with pytest.raises(InputError, match="not valid JSON"):
        VectorIndex.load(path)
    sidecar_path(path).unlink()
    with pytest.raises(InputError, match="index not found"):
        VectorIndex.load(path)


def test_auto_kind_by_corpus_size(data):
    assert INDEX_KINDS == ("auto", "flat", "hnsw", "ivf", "ivfpq")
    assert choose_kind(10) == "flat"
    assert choose_kind(FLAT_MAX_ROWS) == "flat"
    assert choose_kind(FLAT_MAX_ROWS + 1) == "hnsw"
    assert choose_kind(HNSW_MAX_ROWS) == "hnsw"
    assert choose_kind(HNSW_MAX_ROWS + 1) == "ivfpq"
    assert choose_kind(10, "ivf") == "ivf"  # an explicit choice wins
    assert build_index(data).kind == "flat"
    with pytest.raises(InputError, match="choose one of auto, flat, hnsw, ivf, ivfpq"):
        choose_kind(10, "annoy")


def test_bad_inputs_raise_one_line_errors(data):
    index = build_index(data[:100], "flat")
    bad_rows = data[:10].copy()
    bad_rows[3, 2] = np.nan
    cases = [
        (lambda: index.search(np.zeros((2, 47), np.float32), 3), "47 dimensions but the index has 48"),
        (lambda: index.add(np.ones((2, 50), np.float32)), "50 dimensions"),
        (lambda: build_index(bad_rows), "NaN or infinite"),
        (lambda: index.search(np.full((1, 48), np.inf, np.float32), 3), "NaN or infinite"),
        (lambda: index.search(data[:2], 0), "k must be a positive integer"),
        (lambda: build_index(np.zeros((2, 3, 4))), "2-D array"),
        (lambda: build_index(np.array([["a", "b"]])), "real numbers"),
        (lambda: build_index(np.zeros((0, 8), np.float32)), "no vectors"),
        (lambda: build_index(data, "ivfpq", IndexParams(pq_m=5)), "must divide the dimension 48"),
        (lambda: build_index(data[:100], "ivfpq", IndexParams(nlist=2, pq_m=8)), "at least 256 training"),
        (lambda: build_index(data, "hnsw", IndexParams(hnsw_m=0)), "hnsw_m must be a positive integer"),
    ]
    for call, message in cases:
        with pytest.raises(InputError, match=message) as err:
            call()
        assert "\n" not in str(err.value)


def test_k_larger_than_corpus_is_cut(data):
    scores, ids = build_index(data[:5], "flat").search(data[:2], 10)
    assert ids.shape == (2, 5) and sorted(ids[0].tolist()) == [0, 1, 2, 3, 4]
    assert ids[0, 0] == 0 and scores[0, 0] == pytest.approx(1.0, abs=1e-6)


def test_single_query_vector_is_one_row(data):
    scores, ids = build_index(data, "flat").search(data[7], 3)
    assert scores[0, 0] == pytest.approx(1.0, abs=1e-6)
    assert ids.shape == (1, 3) and ids[0, 0] == 7
