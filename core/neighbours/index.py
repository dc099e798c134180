"""Nearest neighbours by cosine similarity: a small wrapper over FAISS (exact search lives in isoscope.neighbours.exact).

index = build_index(vectors)                   # kind chosen by corpus size (see ``choose_kind``)
scores, ids = index.search(queries, k=10)      # (q, 10) cosine similarities, (q, 10) row ids
index.save("corpus.faiss"); VectorIndex.load("corpus.faiss")

Every vector is L2-normalised to float32 before it goes in, so inner product is cosine similarity.
Kinds (``INDEX_KINDS``):
- ``flat``: exact search (``IndexFlatIP``), brute force over all rows. (``isoscope.neighbours.exact.exact_topk`` does
  the same with numpy matrix products; bench/index.py compares the two.)
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

import json
import logging
import math
import os
import tempfile
import threading
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Literal, get_args

import faiss
import numpy as np

from isoscope.cache import atomic_write_bytes, file_sha256
from isoscope.data.jsonfile import SHA256, Int, Nullable, Str, Struct, read_json
from isoscope.errors import InputError, first_line
from isoscope.sampling import sample_indices

log = logging.getLogger(__name__)

IndexKind = Literal["auto", "flat", "hnsw", "ivf", "ivfpq"]
INDEX_KINDS: tuple[str, ...] = get_args(IndexKind)
FLAT_MAX_ROWS = 50_000
HNSW_MAX_ROWS = 1_000_000
SIDECAR_FORMAT = "isoscope-faiss-index"
SIDECAR_VERSION = 1
_READ_LOCK = threading.Lock()
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


SIDECAR_SCHEMA = Struct(
    {
        "format": Str((SIDECAR_FORMAT,)),
        "version": Int(),
        "kind": Str(tuple(_FAISS_CLASS)),
        "dim": Int(lo=1),
        "ntotal": Int(lo=0),
        "sha256": SHA256,
    },
    {"params": Struct({}, {f.name: Nullable(Int(lo=0)) for f in fields(IndexParams)})},
)


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
            digest = file_sha256(Path(tmp))
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
        meta = read_json(side, what=side.name, schema=SIDECAR_SCHEMA, fix="rebuild the index")  # isoscope.data.jsonfile
        if meta["version"] != SIDECAR_VERSION:
            raise InputError(f"{side.name} has version {meta['version']}; this Isoscope reads {SIDECAR_VERSION}")
        kind = meta["kind"]
        if file_sha256(path) != meta["sha256"]:
            raise InputError(f"{path.name} does not match its description (changed or half-written); rebuild it")
        params = IndexParams.from_dict(meta.get("params") or {})
        index = read_faiss(path, rows=meta["ntotal"], row_bytes=_row_bytes(kind, meta["dim"], params))
        if not isinstance(index, _FAISS_CLASS[kind]) or index.metric_type != faiss.METRIC_INNER_PRODUCT:
            raise InputError(f"{path.name} holds a {type(index).__name__}, not the {kind} index its description says")
        if index.d != meta.get("dim") or index.ntotal != meta.get("ntotal"):
            raise InputError(
                f"{path.name} has {index.ntotal} x {index.d} vectors, its description says "
                f"{meta.get('ntotal')} x {meta.get('dim')}"
            )
        out = cls(index, kind, params)
        out.set_search_params(ef_search=params.ef_search, nprobe=params.nprobe if kind in ("ivf", "ivfpq") else None)
        return out


def _row_bytes(kind: str, dim: int, params: IndexParams) -> int:
    """The fewest bytes a row of a ``kind`` index of ``dim`` dimensions takes in its file."""
    if kind == "ivfpq":
        return max(1, (params.pq_m or 1) * (params.pq_nbits or 8) // 8)
    return 4 * dim  # flat, hnsw and ivf keep the float32 rows


def read_faiss(path: Path, *, rows: int = 0, row_bytes: int = 0) -> faiss.Index:
    """``faiss.read_index`` with every size the file claims held to the file's real size: ``rows`` rows of
    ``row_bytes`` (its description's claim) must fit in the file before a byte is read, and while FAISS reads,
    its limit on one array's bytes (``set_deserialization_vector_byte_limit``, where FAISS has it: 1.15 does) is the
    file's size, so a header that claims 2**33 codes is refused instead of allocated. InputError naming the
    file either way."""
    size = os.stat(path).st_size
    if rows * row_bytes > size:
        raise InputError(
            f"{path.name}: its description claims {rows:,} rows, more than its {size:,} bytes hold; rebuild the index"
        )
    setter = getattr(faiss, "set_deserialization_vector_byte_limit", None)
    with _READ_LOCK:  # the limit is FAISS's global: one read at a time sets and restores it
        before = faiss.get_deserialization_vector_byte_limit() if setter is not None else 0
        if setter is not None:
            setter(max(size, 1))
        try:
            return faiss.read_index(str(path))
        except (RuntimeError, MemoryError) as exc:
            said = str(exc).replace("_", " ")  # FAISS's words for a claim past the file: its limit, a short read
            if isinstance(exc, MemoryError) or "byte limit" in said or "read error" in said:
                raise InputError(
                    f"{path.name} claims more data than its {size:,} bytes hold (damaged or forged); rebuild the index"
                ) from None
            raise InputError(f"{path.name} is not a readable FAISS index ({first_line(exc, 80)})") from None
        finally:
            if setter is not None:
                setter(before)


def sidecar_path(path: str | Path) -> Path:
    path = Path(path)
    return path.with_name(path.name + ".json")


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


def recall_at_k(approx: VectorIndex, exact: VectorIndex, queries: np.ndarray, *, k: int) -> float:
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
