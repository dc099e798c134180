"""Nearest neighbours by cosine similarity: a small wrapper over FAISS, plus before/after comparisons.

index = build_index(vectors)                   # kind chosen by corpus size (see ``choose_kind``)
scores, ids = index.search(queries, k=10)      # (q, 10) cosine similarities, (q, 10) row ids
index.save("corpus.faiss"); VectorIndex.load("corpus.faiss")

Every vector is L2-normalised to float32 before it goes in, so inner product is cosine similarity.
Kinds (``INDEX_KINDS``):
- ``flat``: exact search (``IndexFlatIP``), brute force over all rows. (``exact_topk`` does the same
  with numpy matrix products; bench/index.py compares the two.)
- ``hnsw``: graph index (``IndexHNSWFlat``, inner product); ``hnsw_m`` links per node, ``ef_construction``
  and ``ef_search`` trade build/search time for recall. Keeps the full vectors in memory.
- ``ivf``: inverted lists (``IndexIVFFlat``) over ``nlist`` k-means cells, ``nprobe`` cells searched.
- ``ivfpq``: the same cells with product-quantised codes (``IndexIVFPQ``): ``pq_m`` bytes a vector at
  8 bits, for corpora whose flat vectors do not fit in memory.
- ``auto``: ``flat`` up to ``FLAT_MAX_ROWS`` rows (exact and fast enough: one 384-d query against 50k
  rows is ~20M multiply-adds), ``hnsw`` up to ``HNSW_MAX_ROWS`` (1M x 384 float32 is 1.5 GiB plus the
  graph), ``ivfpq`` beyond (48 bytes a 384-d vector instead of 1536).

Row ids are the positions in the order vectors were added (IVF kinds also accept explicit ids).
Saved indexes are the FAISS file plus a JSON sidecar (``<path>.json``) with kind, parameters, dimension,
row count and a SHA-256 of the FAISS file; loading checks all of them.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Literal, get_args

import faiss
import numpy as np
import pandas as pd

from core.cache import atomic_write_bytes
from core.errors import InputError, first_line
from core.projection import sample_indices

log = logging.getLogger(__name__)

IndexKind = Literal["auto", "flat", "hnsw", "ivf", "ivfpq"]
INDEX_KINDS: tuple[str, ...] = get_args(IndexKind)
FLAT_MAX_ROWS = 50_000
HNSW_MAX_ROWS = 1_000_000
SIDECAR_FORMAT = "isoscope-faiss-index"
SIDECAR_VERSION = 1
_FAISS_CLASS = {
    "flat": faiss.IndexFlat,
    "hnsw": faiss.IndexHNSWFlat,
    "ivf": faiss.IndexIVFFlat,
    "ivfpq": faiss.IndexIVFPQ,
}


@dataclass
class IndexParams:
    """Build and search settings. ``None`` means: pick from the data (see ``resolved``)."""

    hnsw_m: int = 32
    ef_construction: int = 200
    ef_search: int = 128
    nlist: int | None = None  # IVF cells; default ~4 sqrt(n), at least 39 training rows per cell
    nprobe: int | None = None  # IVF cells searched; default nlist / 16, at least 8
    pq_m: int | None = None  # PQ sub-quantisers (bytes per vector at 8 bits); must divide the dimension
    pq_nbits: int = 8
    train_size: int = 100_000  # IVF k-means runs on a seeded sample of at most this many rows
    seed: int = 0

    def resolved(self, kind: str, n: int, dim: int) -> IndexParams:
        """A copy with every ``None`` replaced for ``n`` rows of dimension ``dim``.

        IVF k-means sees at most ``train_size`` of the rows, so the default ``nlist`` leaves at least 39
        of those per cell.
        """
        p = replace(self)
        if kind in ("ivf", "ivfpq"):
            if p.nlist is None:
                trained = min(n, p.train_size)  # rows build_index trains on (see sample_indices there)
                p.nlist = max(1, min(round(4 * math.sqrt(max(n, 1))), trained // 39 or 1))
            if p.nprobe is None:
                p.nprobe = min(p.nlist, max(8, p.nlist // 16))
        if kind == "ivfpq" and p.pq_m is None:
            p.pq_m = max(m for m in range(1, max(1, dim // 8) + 1) if dim % m == 0)
        return p

    def validate(self, kind: str, dim: int) -> None:
        positive = {"hnsw_m": self.hnsw_m, "ef_construction": self.ef_construction, "ef_search": self.ef_search}
        positive |= {"nlist": self.nlist, "nprobe": self.nprobe, "pq_m": self.pq_m, "train_size": self.train_size}
        for name, value in positive.items():
            if value is not None and (not isinstance(value, int | np.integer) or value < 1):
                raise InputError(f"index parameter {name} must be a positive integer, got {value!r}")
        if kind == "ivfpq":
            if self.pq_m is not None and dim % self.pq_m:
                divisors = [m for m in range(1, min(dim, 128) + 1) if dim % m == 0]
                raise InputError(f"pq_m={self.pq_m} must divide the dimension {dim}; choose one of {divisors}")
            if not 1 <= self.pq_nbits <= 16:
                raise InputError(f"pq_nbits must be between 1 and 16, got {self.pq_nbits}")

    @classmethod
    def from_dict(cls, data: dict) -> IndexParams:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


def choose_kind(n: int, kind: str = "auto") -> str:
    """The concrete kind for ``n`` rows: ``kind`` itself, or by size for ``auto`` (see module doc)."""
    if kind not in INDEX_KINDS:
        raise InputError(f"unknown index kind '{kind}'; choose one of {', '.join(INDEX_KINDS)}")
    if kind != "auto":
        return kind
    if n <= FLAT_MAX_ROWS:
        return "flat"
    if n <= HNSW_MAX_ROWS:
        return "hnsw"
    return "ivfpq"


def as_unit_float32(x: np.ndarray, name: str = "vectors", dim: int | None = None) -> np.ndarray:
    """Validated, L2-normalised float32 copy. (n, d) -> (n, d); a single (d,) vector becomes (1, d)."""
    arr = np.asarray(x)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2:
        raise InputError(f"{name} must be a 2-D array (rows, dimensions), got shape {arr.shape}")
    if not np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.complexfloating):
        raise InputError(f"{name} must be real numbers, got dtype {arr.dtype}")
    if dim is not None and arr.shape[1] != dim:
        raise InputError(f"{name} have {arr.shape[1]} dimensions but the index has {dim}")
    if arr.shape[1] == 0:
        raise InputError(f"{name} have no dimensions")
    out = np.array(arr, dtype=np.float32, order="C", copy=True)  # (n, d)
    if not np.isfinite(out).all():
        bad = int((~np.isfinite(out).all(axis=1)).sum())
        raise InputError(f"{name}: {bad} row(s) contain NaN or infinite values; drop or fix them first")
    faiss.normalize_L2(out)
    return out


@dataclass
class VectorIndex:
    """A FAISS index over unit vectors (cosine similarity) with its kind and parameters."""

    index: faiss.Index
    kind: str
    params: IndexParams = field(default_factory=IndexParams)

    @property
    def dim(self) -> int:
        return int(self.index.d)

    @property
    def ntotal(self) -> int:
        return int(self.index.ntotal)

    @property
    def is_trained(self) -> bool:
        return bool(self.index.is_trained)

    # ------------------------------------------------------------ building

    @classmethod
    def create(cls, dim: int, kind: str, params: IndexParams | None = None) -> VectorIndex:
        """An empty index (IVF kinds still need ``train``). ``kind`` must be concrete, not ``auto``."""
        if kind not in INDEX_KINDS or kind == "auto":
            raise InputError(f"index kind must be one of {', '.join(k for k in INDEX_KINDS if k != 'auto')}")
        if dim < 1:
            raise InputError(f"index dimension must be positive, got {dim}")
        params = params or IndexParams()
        params.validate(kind, dim)
        ip = faiss.METRIC_INNER_PRODUCT
        if kind == "flat":
            index = faiss.IndexFlatIP(dim)
        elif kind == "hnsw":
            index = faiss.IndexHNSWFlat(dim, params.hnsw_m, ip)
            index.hnsw.efConstruction = params.ef_construction
            index.hnsw.efSearch = params.ef_search
        else:
            if params.nlist is None or (kind == "ivfpq" and params.pq_m is None):
                raise ValueError("IVF parameters unresolved: call params.resolved(kind, n, dim) first")
            quantizer = faiss.IndexFlatIP(dim)
            if kind == "ivf":
                index = faiss.IndexIVFFlat(quantizer, dim, params.nlist, ip)
            else:
                index = faiss.IndexIVFPQ(quantizer, dim, params.nlist, params.pq_m, params.pq_nbits, ip)
            index.nprobe = params.nprobe or 1  # the faiss wrapper keeps ``quantizer`` alive with ``index``
        return cls(index, kind, params)

    def train(self, sample: np.ndarray) -> None:
        """Fit the IVF cells (and PQ codebooks) on ``sample`` (m, d); no-op for flat and HNSW."""
        if self.is_trained:
            return
        x = as_unit_float32(sample, "training vectors", self.dim)  # (m, d)
        need = max(self.params.nlist or 1, 2**self.params.pq_nbits if self.kind == "ivfpq" else 1)
        if len(x) < need:
            raise InputError(
                f"{self.kind} index needs at least {need} training vectors, got {len(x)}; "
                "use fewer cells (nlist), fewer PQ bits, or the flat/hnsw kind"
            )
        self.index.train(x)

    def add(self, vectors: np.ndarray, ids: np.ndarray | None = None) -> None:
        """Append rows (n, d). Their ids are ``ntotal ..`` unless ``ids`` are given (IVF kinds only)."""
        x = as_unit_float32(vectors, "vectors", self.dim)  # (n, d)
        if not self.is_trained:
            raise InputError(f"the {self.kind} index is not trained yet; call train() on a sample first")
        if ids is None:
            self.index.add(x)
            return
        ids = np.asarray(ids, dtype=np.int64).ravel()  # (n,)
        if ids.shape[0] != x.shape[0]:
            raise InputError(f"got {x.shape[0]} vectors but {ids.shape[0]} ids")
        if self.kind in ("ivf", "ivfpq"):
            self.index.add_with_ids(x, ids)
        elif np.array_equal(ids, np.arange(self.ntotal, self.ntotal + len(ids))):
            self.index.add(x)
        else:
            raise InputError(f"{self.kind} indexes number rows in insertion order; add rows in id order or use ivf")

    def set_search_params(self, ef_search: int | None = None, nprobe: int | None = None) -> None:
        """Change the recall/speed trade-off of HNSW (``ef_search``) or IVF (``nprobe``) searches."""
        if ef_search is not None:
            self.params.ef_search = int(ef_search)
            if self.kind == "hnsw":
                self.index.hnsw.efSearch = int(ef_search)
        if nprobe is not None:
            self.params.nprobe = int(nprobe)
            if self.kind in ("ivf", "ivfpq"):
                self.index.nprobe = int(nprobe)
        self.params.validate(self.kind, self.dim)

    # ------------------------------------------------------------ searching

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top-``k`` rows by cosine similarity. Returns scores (q, k) float32, ids (q, k) int64, best first.

        ``k`` larger than the index is cut to its size; approximate kinds may return id -1 (score -inf)
        when they find fewer than ``k`` rows.
        """
        if not isinstance(k, int | np.integer) or k < 1:
            raise InputError(f"k must be a positive integer, got {k!r}")
        q = as_unit_float32(queries, "queries", self.dim)  # (q, d)
        if self.ntotal == 0:
            raise InputError("the index is empty; add vectors before searching")
        k = min(int(k), self.ntotal)
        scores, ids = self.index.search(q, k)  # (q, k), (q, k)
        scores = np.where(ids < 0, -np.inf, scores).astype(np.float32)
        return scores, ids.astype(np.int64)

    def stored_vectors(self) -> np.ndarray:
        """The unit vectors of a flat index (ntotal, d), a read-only view of FAISS's storage (no copy)."""
        if self.kind != "flat":
            raise ValueError("only flat indexes keep their vectors uncompressed in one array")
        if self.ntotal == 0:
            return np.zeros((0, self.dim), np.float32)
        view = faiss.rev_swig_ptr(self.index.get_xb(), self.ntotal * self.dim).reshape(self.ntotal, self.dim)
        view.flags.writeable = False
        return view

    # ------------------------------------------------------------ persistence

    def save(self, path: str | Path) -> None:
        """Write the FAISS file and ``<path>.json`` atomically (temporary file, then rename)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        os.close(fd)
        try:
            faiss.write_index(self.index, tmp)
            digest = _sha256_file(Path(tmp))
            with open(tmp, "rb") as f:
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        meta = {
            "format": SIDECAR_FORMAT,
            "version": SIDECAR_VERSION,
            "kind": self.kind,
            "metric": "cosine",
            "dim": self.dim,
            "ntotal": self.ntotal,
            "params": asdict(self.params),
            "sha256": digest,
        }
        atomic_write_bytes(sidecar_path(path), json.dumps(meta, indent=2).encode())

    @classmethod
    def load(cls, path: str | Path) -> VectorIndex:
        """Read an index written by ``save``; InputError when the files are missing, altered or inconsistent."""
        path = Path(path)
        side = sidecar_path(path)
        if not path.is_file() or not side.is_file():
            raise InputError(f"index not found: need both {path} and {side.name}")
        try:
            meta = json.loads(side.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise InputError(f"{side.name} is not a readable index description ({type(exc).__name__})") from None
        if not isinstance(meta, dict) or meta.get("format") != SIDECAR_FORMAT:
            raise InputError(f"{side.name} is not an Isoscope index description")
        if meta.get("version") != SIDECAR_VERSION:
            raise InputError(f"{side.name} has version {meta.get('version')}; this Isoscope reads {SIDECAR_VERSION}")
        kind = meta.get("kind")
        if kind not in _FAISS_CLASS:
            raise InputError(f"{side.name}: unknown index kind {kind!r}")
        if _sha256_file(path) != meta.get("sha256"):
            raise InputError(f"{path.name} does not match its description (changed or half-written); rebuild it")
        try:
            index = faiss.read_index(str(path))
        except RuntimeError as exc:
            raise InputError(f"{path.name} is not a readable FAISS index ({first_line(exc, 80)})") from None
        if not isinstance(index, _FAISS_CLASS[kind]) or index.metric_type != faiss.METRIC_INNER_PRODUCT:
            raise InputError(f"{path.name} holds a {type(index).__name__}, not the {kind} index its description says")
        if index.d != meta.get("dim") or index.ntotal != meta.get("ntotal"):
            raise InputError(
                f"{path.name} has {index.ntotal} x {index.d} vectors, its description says "
                f"{meta.get('ntotal')} x {meta.get('dim')}"
            )
        params = IndexParams.from_dict(meta.get("params") or {})
        out = cls(index, kind, params)
        out.set_search_params(ef_search=params.ef_search, nprobe=params.nprobe if kind in ("ivf", "ivfpq") else None)
        return out


def sidecar_path(path: str | Path) -> Path:
    path = Path(path)
    return path.with_name(path.name + ".json")


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def build_index(
    vectors: np.ndarray,
    kind: str = "auto",
    params: IndexParams | None = None,
) -> VectorIndex:
    """Index ``vectors`` (n, d) for cosine search; ``auto`` picks the kind by size (see ``choose_kind``)."""
    x = as_unit_float32(vectors, "vectors")  # (n, d)
    n, dim = x.shape
    if n == 0:
        raise InputError("no vectors to index")
    kind = choose_kind(n, kind)
    params = (params or IndexParams()).resolved(kind, n, dim)
    index = VectorIndex.create(dim, kind, params)
    if not index.is_trained:
        rows = sample_indices(n, params.train_size, params.seed)
        index.train(x[rows])
    index.add(x)
    log.info("built %s index over %d x %d vectors", kind, n, dim)
    return index


def recall_at_k(approx: VectorIndex, exact: VectorIndex, queries: np.ndarray, k: int) -> float:
    """Mean fraction of the exact top-``k`` ids that ``approx`` also returns in its top ``k``."""
    _, approx_ids = approx.search(queries, k)
    _, exact_ids = exact.search(queries, k)
    return recall_from_ids(approx_ids, exact_ids)


def recall_from_ids(approx_ids: np.ndarray, exact_ids: np.ndarray) -> float:
    """Mean per-row |approx ∩ exact| / |exact| of two (q, k) id arrays (ids < 0 are ignored)."""
    if approx_ids.shape[0] != exact_ids.shape[0]:
        raise ValueError(f"got {approx_ids.shape[0]} approximate and {exact_ids.shape[0]} exact rows")
    hits = [
        len(set(a[a >= 0].tolist()) & set(e[e >= 0].tolist())) / max(1, int((e >= 0).sum()))
        for a, e in zip(approx_ids, exact_ids, strict=True)
    ]
    return float(np.mean(hits)) if hits else float("nan")


# ---------------------------------------------------------------- neighbours before and after calibration


def jaccard(a: Sequence[int] | np.ndarray, b: Sequence[int] | np.ndarray) -> float:
    """|A ∩ B| / |A ∪ B| of two id lists (1.0 when both are empty)."""
    sa, sb = set(np.asarray(a).tolist()), set(np.asarray(b).tolist())
    union = sa | sb
    return len(sa & sb) / len(union) if union else 1.0


@dataclass
class QueryNeighbours:
    """Top-``k`` neighbours of one query in the raw and the calibrated space.

    Ranks are 1-based positions in the whole corpus ranking of that space (the query itself excluded).
    ``rank_shift[i] = raw rank - calibrated rank`` of ``after_ids[i]``: positive means it moved up.
    """

    query: int | None  # corpus row of the query, None for an outside query vector
    before_ids: np.ndarray  # (k,) top-k in the raw space
    before_scores: np.ndarray  # (k,) cosine
    after_ids: np.ndarray  # (k,) top-k in the calibrated space
    after_scores: np.ndarray  # (k,)
    overlap: float  # Jaccard of the two top-k sets (overlap@k)
    before_rank_after: np.ndarray  # (k,) calibrated-space rank of each raw neighbour
    after_rank_before: np.ndarray  # (k,) raw-space rank of each calibrated neighbour
    rank_shift: np.ndarray  # (k,) after_rank_before - position in after list, i.e. places gained

    def to_frame(self) -> pd.DataFrame:
        """One row per (space, rank): id, score, rank in the other space, places gained (calibrated rows)."""
        k_before, k_after = len(self.before_ids), len(self.after_ids)
        return pd.DataFrame(
            {
                "space": ["raw"] * k_before + ["calibrated"] * k_after,
                "rank": np.concatenate([np.arange(1, k_before + 1), np.arange(1, k_after + 1)]),
                "id": np.concatenate([self.before_ids, self.after_ids]),
                "score": np.concatenate([self.before_scores, self.after_scores]),
                "rank_in_other_space": np.concatenate([self.before_rank_after, self.after_rank_before]),
                "rank_shift": np.concatenate([np.zeros(k_before, np.int64), self.rank_shift]),
            }
        )


RANK_BLOCK_SCORES = 1 << 24  # score comparisons held at once by ranks_of


def ranks_of(scores: np.ndarray, targets: np.ndarray, exclude: int | None = None) -> np.ndarray:
    """1-based ranks (k,) of rows ``targets`` in the descending order of ``scores`` (n,), ties broken by row id.

    ``exclude``: a row left out of the ranking (the query itself). Compares blocks of targets at once.
    """
    s = scores.astype(np.float64)
    if exclude is not None:
        s[exclude] = -np.inf
    ids = np.arange(len(s))
    targets = np.asarray(targets, np.int64)
    out = np.empty(len(targets), np.int64)
    step = max(1, RANK_BLOCK_SCORES // max(len(s), 1))
    for start in range(0, len(targets), step):
        t = targets[start : start + step]  # (b,)
        st = s[t][:, None]  # (b, 1)
        higher = (s[None, :] > st).sum(axis=1)  # (b,)
        tied_before = ((s[None, :] == st) & (ids[None, :] < t[:, None])).sum(axis=1)  # (b,)
        out[start : start + step] = higher + tied_before + 1
    return out


def compare_hits(
    query: int | None,
    before: tuple[np.ndarray, np.ndarray],
    after: tuple[np.ndarray, np.ndarray],
    raw_scores: np.ndarray,
    cal_scores: np.ndarray,
) -> QueryNeighbours:
    """One query's top-k ``(ids, scores)`` before and after calibration, with each hit's rank in the other
    space (from the query's full score rows ``raw_scores`` / ``cal_scores`` (n,)), places gained and overlap@k."""
    b_ids, b_scores = before
    a_ids, a_scores = after
    after_rank_before = ranks_of(raw_scores, a_ids, query)
    return QueryNeighbours(
        query=query,
        before_ids=b_ids,
        before_scores=b_scores,
        after_ids=a_ids,
        after_scores=a_scores,
        overlap=jaccard(b_ids, a_ids),
        before_rank_after=ranks_of(cal_scores, b_ids, query),
        after_rank_before=after_rank_before,
        rank_shift=after_rank_before - np.arange(1, len(a_ids) + 1),
    )


def _topk_from_scores(scores: np.ndarray, k: int, exclude: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Top-``k`` of one score row (n,), ties broken by row id. Returns ids (k,), scores (k,)."""
    s = scores.astype(np.float64)
    if exclude is not None:
        s = s.copy()
        s[exclude] = -np.inf
    k = min(k, len(s) - (exclude is not None))
    cand = np.argpartition(-s, k - 1)[:k] if k < len(s) else np.arange(len(s))
    # widen to every row tied with the k-th score so the tie-break by id is exact
    kth = s[cand].min()
    cand = np.flatnonzero(s >= kth)
    order = np.lexsort((cand, -s[cand]))[:k]
    ids = cand[order]
    return ids.astype(np.int64), scores[ids].astype(np.float32)


def neighbours_before_after(
    raw_vectors: np.ndarray,
    calibrated_vectors: np.ndarray,
    queries: Sequence[int] | np.ndarray | tuple[np.ndarray, np.ndarray],
    k: int = 10,
) -> list[QueryNeighbours]:
    """Exact top-``k`` cosine neighbours of each query in both spaces, their overlap@k and rank shifts.

    ``queries`` is either corpus row ids (each row's neighbours exclude itself) or a pair
    ``(raw_queries (q, d_raw), calibrated_queries (q, d_cal))`` of outside query vectors. The two
    spaces may differ in dimension but must have the same rows. Brute force over the corpus: meant for
    a handful of queries (the page's), use ``neighbourhood_change`` for the whole corpus.
    """
    raw = as_unit_float32(raw_vectors, "raw vectors")  # (n, d_raw)
    cal = as_unit_float32(calibrated_vectors, "calibrated vectors")  # (n, d_cal)
    if raw.shape[0] != cal.shape[0]:
        raise InputError(f"raw and calibrated vectors must have the same rows, got {raw.shape[0]} and {cal.shape[0]}")
    n = raw.shape[0]
    if not isinstance(k, int | np.integer) or k < 1:
        raise InputError(f"k must be a positive integer, got {k!r}")
    if isinstance(queries, tuple) and len(queries) == 2 and np.asarray(queries[0]).dtype.kind == "f":
        q_raw = as_unit_float32(queries[0], "raw queries", raw.shape[1])  # (q, d_raw)
        q_cal = as_unit_float32(queries[1], "calibrated queries", cal.shape[1])  # (q, d_cal)
        if q_raw.shape[0] != q_cal.shape[0]:
            raise InputError(f"got {q_raw.shape[0]} raw and {q_cal.shape[0]} calibrated query vectors")
        rows: list[int | None] = [None] * q_raw.shape[0]
    else:
        qids = np.asarray(queries)
        if qids.ndim == 2 or (qids.size and qids.dtype.kind == "f"):
            raise InputError("give queries as row ids, or as a pair (raw_query_vectors, calibrated_query_vectors)")
        qids = qids.astype(np.int64).ravel()
        if qids.size and (qids.min() < 0 or qids.max() >= n):
            raise InputError(f"query ids must be between 0 and {n - 1}")
        rows = [int(i) for i in qids]
        q_raw, q_cal = raw[qids], cal[qids]
    if n < 1 + (bool(rows) and rows[0] is not None):
        raise InputError("the corpus needs at least one row besides the query")
    out: list[QueryNeighbours] = []
    for j, row in enumerate(rows):
        s_raw = raw @ q_raw[j]  # (n,)
        s_cal = cal @ q_cal[j]  # (n,)
        before = _topk_from_scores(s_raw, int(k), row)
        after = _topk_from_scores(s_cal, int(k), row)
        out.append(compare_hits(row, before, after, s_raw, s_cal))
    return out


@dataclass
class NeighbourhoodChange:
    """Per-sentence overlap@k (Jaccard) between raw and calibrated top-``k`` neighbours."""

    ids: np.ndarray  # (s,) corpus rows that were compared (all, or a seeded sample)
    overlap: np.ndarray  # (s,) Jaccard of the two top-k sets, 1 = unchanged neighbourhood
    k: int

    @property
    def mean_overlap(self) -> float:
        return float(self.overlap.mean()) if len(self.overlap) else float("nan")

    def most_changed(self, top: int = 20) -> np.ndarray:
        """Corpus rows whose neighbourhoods changed most (lowest overlap first, ties by row id)."""
        order = np.lexsort((self.ids, self.overlap))
        return self.ids[order[:top]]

    def to_frame(self) -> pd.DataFrame:
        """id and overlap per compared sentence, most changed first."""
        order = np.lexsort((self.ids, self.overlap))
        return pd.DataFrame({"id": self.ids[order], "overlap": self.overlap[order]})


EXACT_BLOCK_SCORES = 1 << 25  # scores held at once by exact_topk: 32M float32 = 128 MiB


def exact_topk(
    X: np.ndarray, Q: np.ndarray, k: int, exclude: np.ndarray | None = None, block: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Brute-force top-``k`` by inner product with numpy, ``block`` queries at a time (default: as many
    as keep ``EXACT_BLOCK_SCORES`` scores, at most 256).

    X (n, d) and Q (q, d) should be unit rows (then scores are cosines); ``exclude`` (q,) gives one row
    id per query to leave out (the query itself). Equal scores are ordered by row id. Returns scores (q, k)
    float32, ids (q, k) int64.
    """
    n = X.shape[0]
    k = min(int(k), n - (exclude is not None))
    block = block or max(1, min(256, EXACT_BLOCK_SCORES // max(n, 1)))
    scores = np.empty((len(Q), k), np.float32)
    ids = np.empty((len(Q), k), np.int64)
    for s in range(0, len(Q), block):
        S = Q[s : s + block] @ X.T  # (b, n)
        if exclude is not None:
            S[np.arange(len(S)), exclude[s : s + block]] = -np.inf
        part = np.argpartition(S, n - k, axis=1)[:, n - k :] if k < n else np.tile(np.arange(n), (len(S), 1))
        ps = np.take_along_axis(S, part, axis=1)  # (b, k) unordered
        order = np.lexsort((part, -ps), axis=1)
        ids[s : s + block] = np.take_along_axis(part, order, axis=1)
        scores[s : s + block] = np.take_along_axis(ps, order, axis=1)
    return scores, ids


def knn_graph(vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Every row's ``k`` nearest rows by cosine, exact (FAISS flat), each row itself first.

    Returns ids (n, k) int64 and cosine distances ``1 - cos`` (n, k) float32, ascending, the first
    column being the row itself at distance 0 (UMAP's ``precomputed_knn`` layout). All pairs cost
    n^2 d multiply-adds: about 13 s for 50k x 384 here, so callers keep this to ``FLAT_MAX_ROWS``.
    """
    x = as_unit_float32(vectors, "vectors")  # (n, d)
    n = x.shape[0]
    if not 1 <= k <= n:
        raise InputError(f"k must be between 1 and the number of rows ({n}), got {k}")
    index = VectorIndex.create(x.shape[1], "flat")
    index.add(x)
    scores, ids = index.search(x, k)  # (n, k) each, best first
    own = ids == np.arange(n)[:, None]  # (n, k) where a row found itself
    drop = own.copy()
    drop[~own.any(axis=1), -1] = True  # rows that missed themselves (ties among duplicates) drop their last
    keep = ~drop
    ids = np.hstack([np.arange(n)[:, None], ids[keep].reshape(n, k - 1)])  # (n, k)
    dist = np.clip(1.0 - scores[keep].reshape(n, k - 1), 0.0, 2.0)  # (n, k-1)
    dist = np.hstack([np.zeros((n, 1), np.float32), dist]).astype(np.float32)  # (n, k)
    return ids.astype(np.int64), dist


def neighbourhood_change(
    raw_vectors: np.ndarray,
    calibrated_vectors: np.ndarray,
    k: int = 10,
    sample: int | None = None,
    seed: int = 0,
) -> NeighbourhoodChange:
    """How much calibration changed each sentence's top-``k`` neighbours, corpus-wide (exact ``exact_topk``).

    With ``sample`` only a seeded sample of that many sentences is compared (their neighbours are still
    searched among all rows).
    """
    raw = as_unit_float32(raw_vectors, "raw vectors")  # (n, d_raw)
    cal = as_unit_float32(calibrated_vectors, "calibrated vectors")  # (n, d_cal)
    n = raw.shape[0]
    if cal.shape[0] != n:
        raise InputError(f"raw and calibrated vectors must have the same rows, got {n} and {cal.shape[0]}")
    if not isinstance(k, int | np.integer) or k < 1:
        raise InputError(f"k must be a positive integer, got {k!r}")
    if n < 2:
        raise InputError("need at least 2 rows to compare neighbourhoods")
    k = min(int(k), n - 1)
    rows = sample_indices(n, sample if sample is not None else n, seed)  # (s,)
    _, before = exact_topk(raw, raw[rows], k, exclude=rows)  # (s, k)
    _, after = exact_topk(cal, cal[rows], k, exclude=rows)  # (s, k)
    overlap = np.array([jaccard(b, a) for b, a in zip(before, after, strict=True)], dtype=np.float64)
    return NeighbourhoodChange(ids=rows, overlap=overlap, k=k)
