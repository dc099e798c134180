"""Embedding corpora too big for one call: resumable chunks on one machine, or shards through Ray.

One machine (``embed_to_npy``): texts (a list, or a .txt file streamed line by line) are embedded in
chunks of ``chunk_size`` with ``core.embed.encode`` into a memory-mapped ``<out>.partial`` .npy file;
``<out>.progress.json`` records finished chunks after each one is flushed to disk. An interrupted run
started again with the same texts, model, pooling and settings computes only the missing chunks; any
mismatch starts over. When every chunk is done the partial file is renamed to ``out`` (atomic), so
``out`` only ever holds a complete array. Memory: one chunk of texts and vectors at a time.

Beyond one machine (``embed_with_ray``): the same ``encode`` runs in a pool of Ray actors (one model
each; ``map_batches`` with ``compute=ActorPoolStrategy(size=num_actors)``, the non-deprecated form of
``concurrency``) over Ray Data items of ``shard_rows`` texts; each actor writes ``shard-NNNNNN.npz`` (``ids``
int64 (m,), ``vectors`` float32 (m, d); no pickle) atomically into ``shard_dir`` next to a
``manifest.json``. Shards already on disk are skipped, so a rerun resumes. On a cluster ``shard_dir``
must be a filesystem every node sees and the nodes need the model (``core`` itself is shipped to them
as a Ray ``py_modules`` package).
``load_shards`` reads them back in id order; ``build_ivfpq_from_shards`` indexes corpora whose flat
vectors do not fit in memory.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from core.cache import atomic_write_bytes, text_digest
from core.data import TextStats, stream_texts, streaming_limits
from core.embed import EmbedConfig, encode
from core.errors import InputError
from core.models import Encoder
from core.pooling import parse_pooling

log = logging.getLogger(__name__)

TextSource = Sequence[str] | str | Path  # texts, or a UTF-8 .txt file with one text per line
ProgressFn = Callable[[int, int], None]  # (texts done, total)
DEFAULT_CHUNK_SIZE = 4096
DEFAULT_SHARD_ROWS = 1024
PROGRESS_FORMAT = "isoscope-chunked-embedding"
SHARDS_FORMAT = "isoscope-embedding-shards"
FORMAT_VERSION = 1
SHARD_GLOB = "shard-*.npz"
MANIFEST = "manifest.json"

# ---------------------------------------------------------------- text sources


def _is_path(source: TextSource) -> bool:
    return isinstance(source, str | Path)


def _check_text_file(path: Path) -> Path:
    if not path.exists():
        raise InputError(f"file not found: {path}")
    if path.is_dir():
        raise InputError(f"{path} is a folder; give a .txt file with one text per line")
    if path.suffix.lower() not in (".txt", ".text"):
        raise InputError(f"'{path.name}': streaming needs a .txt file with one text per line")
    return path


def iter_texts(source: TextSource, stats: TextStats | None = None) -> Iterator[str]:
    """Texts one at a time. A file is read as ``load_corpus`` reads a .txt (``core.data.stream_texts``: the
    same encodings, binary refusal and truncation), without its row or size limit; ``stats`` collects what
    the warnings need."""
    if not _is_path(source):
        yield from (str(t) for t in source)
        return
    path = _check_text_file(Path(source))
    yield from stream_texts(path, path.name, streaming_limits(), stats)


def scan_source(source: TextSource, warnings: list[str] | None = None) -> tuple[int, str]:
    """(number of texts, content digest) of a source; a file is streamed once and its load warnings (encoding,
    truncated texts) are appended to ``warnings``."""
    if not _is_path(source):
        texts = list(source) if not isinstance(source, list) else source
        return len(texts), text_digest(texts)
    stats = TextStats(Path(source).name)
    h = hashlib.sha256()
    n = 0
    for text in iter_texts(source, stats):
        b = text.encode("utf-8", "surrogatepass")
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
        n += 1
    if warnings is not None:
        warnings.extend(stats.warnings() + stats.truncation_warning())
    return n, h.hexdigest()


def iter_chunks(source: TextSource, chunk_size: int) -> Iterator[tuple[int, list[str]]]:
    """(chunk index, texts) in order, ``chunk_size`` texts each (the last may be shorter)."""
    it = iter_texts(source)
    for c in itertools.count():
        chunk = list(itertools.islice(it, chunk_size))
        if not chunk:
            return
        yield c, chunk


# ---------------------------------------------------------------- one machine, resumable


@dataclass
class ChunkedRun:
    """What ``embed_to_npy`` did."""

    path: Path
    n: int
    dim: int
    chunk_size: int
    num_chunks: int
    computed_chunks: list[int] = field(default_factory=list)  # embedded in this call
    resumed_chunks: list[int] = field(default_factory=list)  # found finished from an earlier call
    warnings: list[str] = field(default_factory=list)  # from reading a .txt source (encoding, truncation)


def partial_path(out: Path) -> Path:
    return out.with_name(out.name + ".partial")


def progress_path(out: Path) -> Path:
    return out.with_name(out.name + ".progress.json")


def _chunk_len(c: int, n: int, chunk_size: int) -> int:
    return min(chunk_size, n - c * chunk_size)


def _run_signature(encoder: Encoder, pooling: str, config: EmbedConfig, n: int, digest: str, chunk: int) -> dict:
    return {
        "model": encoder.fingerprint,
        "pooling": pooling,
        "max_length": config.max_length,
        "n": n,
        "texts": digest,
        "chunk_size": chunk,
    }


def _load_progress(out: Path, signature: dict) -> tuple[set[int], np.ndarray | None]:
    """Finished chunks and the partial memmap of an earlier compatible run, else (empty, None)."""
    prog, part = progress_path(out), partial_path(out)
    if not prog.exists() or not part.exists():
        return set(), None
    try:
        state = json.loads(prog.read_text(encoding="utf-8"))
        if state.get("format") != PROGRESS_FORMAT or state.get("version") != FORMAT_VERSION:
            raise ValueError("unknown progress format")
        if {k: state.get(k) for k in signature} != signature:
            log.warning("%s belongs to another run (texts, model or settings changed); starting over", prog.name)
            return set(), None
        mm = np.load(part, mmap_mode="r+", allow_pickle=False)
        if mm.dtype != np.float32 or mm.shape != (signature["n"], state.get("dim")):
            raise ValueError(f"partial file has shape {mm.shape}")
        done = {int(c) for c in state.get("done", [])}
    except (OSError, ValueError, TypeError, json.JSONDecodeError) as exc:
        log.warning("cannot resume from %s (%s); starting over", prog.name, exc)
        return set(), None
    return done, mm


def _save_progress(out: Path, signature: dict, dim: int, done: set[int]) -> None:
    state = {"format": PROGRESS_FORMAT, "version": FORMAT_VERSION, **signature, "dim": dim, "done": sorted(done)}
    atomic_write_bytes(progress_path(out), json.dumps(state).encode())


def embed_to_npy(
    encoder: Encoder,
    source: TextSource,
    out: str | Path,
    pooling: str = "mean",
    config: EmbedConfig | None = None,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    progress: ProgressFn | None = None,
) -> ChunkedRun:
    """Embed every text of ``source`` into ``out`` (.npy, float32 (n, d)), resumably, chunk by chunk.

    ``progress(done, total)`` is called after each chunk is safely on disk (so an exception raised in it
    loses nothing). Rows follow the order of the texts (empty lines of a file are skipped).
    """
    out = Path(out)
    config = config or EmbedConfig()
    if out.suffix != ".npy":
        raise InputError(f"output must end in .npy, got '{out.name}'")
    if chunk_size < 1:
        raise InputError(f"chunk size must be at least 1, got {chunk_size}")
    parse_pooling(pooling, encoder.num_layers, encoder.is_encoder_decoder)
    warnings: list[str] = []
    n, digest = scan_source(source, warnings)
    if n == 0:
        raise InputError("no texts to embed (the input is empty)")
    num_chunks = -(-n // chunk_size)
    signature = _run_signature(encoder, pooling, config, n, digest, chunk_size)
    done, mm = _load_progress(out, signature)
    run = ChunkedRun(out, n, 0 if mm is None else mm.shape[1], chunk_size, num_chunks, resumed_chunks=sorted(done))
    run.warnings = warnings
    if done:
        log.info("resuming %s: %d of %d chunks already done", out.name, len(done), num_chunks)
    for c, texts in iter_chunks(source, chunk_size):
        if c in done:
            continue
        if c >= num_chunks or len(texts) != _chunk_len(c, n, chunk_size):
            raise InputError("the input changed while it was being embedded; run again")
        vectors = encode(encoder, texts, pooling, config)  # (m, d)
        if mm is None:
            mm = np.lib.format.open_memmap(partial_path(out), mode="w+", dtype=np.float32, shape=(n, vectors.shape[1]))
            run.dim = int(vectors.shape[1])
        start = c * chunk_size
        mm[start : start + len(texts)] = vectors
        mm.flush()
        done.add(c)
        _save_progress(out, signature, run.dim, done)
        run.computed_chunks.append(c)
        if progress is not None:
            progress(sum(_chunk_len(i, n, chunk_size) for i in done), n)
    if len(done) != num_chunks or mm is None:
        raise InputError("the input changed while it was being embedded; run again")
    mm.flush()
    del mm
    with open(partial_path(out), "rb") as f:
        os.fsync(f.fileno())
    os.replace(partial_path(out), out)
    progress_path(out).unlink(missing_ok=True)
    log.info("wrote %d x %d vectors to %s (%d chunks computed)", n, run.dim, out, len(run.computed_chunks))
    return run


# ---------------------------------------------------------------- shards (Ray)


def shard_path(shard_dir: Path, shard: int) -> Path:
    return shard_dir / f"shard-{shard:06d}.npz"


def write_shard(shard_dir: Path, shard: int, ids: np.ndarray, vectors: np.ndarray) -> Path:
    """Save one shard atomically: ``ids`` (m,) int64 and ``vectors`` (m, d) float32 in an .npz."""
    import io

    buf = io.BytesIO()
    np.savez(buf, ids=np.asarray(ids, np.int64), vectors=np.asarray(vectors, np.float32))
    path = shard_path(shard_dir, shard)
    atomic_write_bytes(path, buf.getvalue())
    return path


def read_shard(path: Path, ids_only: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
    """(ids (m,), vectors (m, d) or None) of one shard; InputError when it is unreadable or inconsistent."""
    try:
        with np.load(path, allow_pickle=False) as z:
            ids = np.asarray(z["ids"], np.int64)
            vectors = None if ids_only else np.asarray(z["vectors"], np.float32)
    except (OSError, ValueError, KeyError) as exc:
        raise InputError(f"{path.name} is not a readable shard ({type(exc).__name__}); delete it and rerun") from None
    if ids.ndim != 1 or (vectors is not None and (vectors.ndim != 2 or len(vectors) != len(ids))):
        raise InputError(f"{path.name}: ids and vectors do not match; delete it and rerun")
    return ids, vectors


def read_manifest(shard_dir: Path) -> dict | None:
    path = Path(shard_dir) / MANIFEST
    if not path.exists():
        return None
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        raise InputError(f"{path} is not readable JSON; delete the shard folder and rerun") from None
    if not isinstance(meta, dict) or meta.get("format") != SHARDS_FORMAT:
        raise InputError(f"{path} is not an Isoscope shard manifest")
    return meta


def _write_manifest(shard_dir: Path, meta: dict) -> None:
    atomic_write_bytes(Path(shard_dir) / MANIFEST, json.dumps(meta, indent=2).encode())


class ShardEmbedder:
    """Ray Data actor: loads one model, embeds whole shards and writes them to ``shard_dir``."""

    def __init__(self, model: str, pooling: str, batch_size: int, max_length: int, shard_dir: str) -> None:
        from core.models import load_encoder

        self.encoder = load_encoder(model or None)
        self.pooling = pooling
        self.config = EmbedConfig(batch_size=batch_size, max_length=max_length)
        self.shard_dir = Path(shard_dir)

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        rows, dims = [], []
        for shard, start, texts in zip(batch["shard"], batch["start"], batch["texts"], strict=True):
            texts = [str(t) for t in texts]
            vectors = encode(self.encoder, texts, self.pooling, self.config)  # (m, d)
            ids = np.arange(int(start), int(start) + len(texts), dtype=np.int64)  # (m,)
            write_shard(self.shard_dir, int(shard), ids, vectors)
            rows.append(len(texts))
            dims.append(vectors.shape[1])
        return {"shard": np.asarray(batch["shard"], np.int64), "rows": np.array(rows), "dim": np.array(dims)}


@dataclass
class ShardRun:
    """What ``embed_with_ray`` did."""

    shard_dir: Path
    n: int
    dim: int
    shard_rows: int
    num_shards: int
    computed_shards: list[int] = field(default_factory=list)
    resumed_shards: list[int] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # from reading a .txt source (encoding, truncation)


def _finished_shards(shard_dir: Path, n: int, shard_rows: int) -> set[int]:
    done = set()
    for path in shard_dir.glob(SHARD_GLOB):
        try:
            shard = int(path.stem.split("-")[1])
            ids, _ = read_shard(path, ids_only=True)
        except (InputError, ValueError, IndexError):
            log.warning("ignoring unreadable shard %s; it will be recomputed", path.name)
            continue
        start = shard * shard_rows
        if np.array_equal(ids, np.arange(start, min(n, start + shard_rows))):
            done.add(shard)
    return done


RAY_MISSING = 'the ray engine needs Ray, an optional extra: pip install "isoscope[ray]"'


def require_ray() -> None:
    """InputError (one line naming the extra to install) when Ray Data is not installed."""
    try:
        import ray.data  # noqa: F401
    except ImportError:
        raise InputError(RAY_MISSING) from None


def _ray_init(address: str, num_cpus: int) -> bool:
    """Connect to Ray (``local``: start a private instance). Returns True when this call started it."""
    try:
        import ray
        import ray.data
    except ImportError:
        raise InputError(RAY_MISSING) from None
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    ctx.print_on_execution_start = False
    logging.getLogger("ray.data").setLevel(logging.WARNING)
    if ray.is_initialized():
        return False
    core_dir = Path(__file__).resolve().parent
    if address == "local":  # workers import core from this checkout
        env = os.pathsep.join(p for p in (str(core_dir.parent), os.environ.get("PYTHONPATH", "")) if p)
        ray.init(
            num_cpus=num_cpus,
            include_dashboard=False,
            log_to_driver=False,
            logging_level=logging.WARNING,
            runtime_env={"env_vars": {"PYTHONPATH": env}},
        )
    else:  # ship this package to the cluster's workers
        ray.init(
            address=address,
            log_to_driver=False,
            logging_level=logging.WARNING,
            runtime_env={"py_modules": [str(core_dir)]},
        )
    return True


def embed_with_ray(
    source: TextSource,
    shard_dir: str | Path,
    model: str | None = None,
    pooling: str = "mean",
    config: EmbedConfig | None = None,
    shard_rows: int = DEFAULT_SHARD_ROWS,
    num_actors: int = 2,
    address: str = "local",
    num_cpus: int = 2,
) -> ShardRun:
    """Embed ``source`` with a pool of ``num_actors`` Ray actors into shards in ``shard_dir``.

    ``address`` is ``local`` (start Ray here with ``num_cpus``) or a cluster address such as
    ``ray://head:10001`` / ``auto``. Every actor loads ``model`` (default: the embedded
    all-MiniLM-L6-v2) and runs ``core.embed.encode`` over whole shards of ``shard_rows`` texts, so the
    vectors equal a single-process run. Shards already in ``shard_dir`` are kept (resume). When Ray is
    already initialised in this process it is used as it is (workers must then be able to import core).
    """
    from core.models import load_encoder

    config = config or EmbedConfig()
    shard_dir = Path(shard_dir)
    if shard_rows < 1 or num_actors < 1:
        raise InputError("shard rows and the number of actors must be at least 1")
    if model and Path(model).expanduser().exists():  # a local folder: absolute, since workers run elsewhere
        model = str(Path(model).expanduser().resolve())
    encoder = load_encoder(model or None)  # checks model and pooling before any work; gives the fingerprint
    parse_pooling(pooling, encoder.num_layers, encoder.is_encoder_decoder)
    warnings: list[str] = []
    n, digest = scan_source(source, warnings)
    if n == 0:
        raise InputError("no texts to embed (the input is empty)")
    num_shards = -(-n // shard_rows)
    signature = {
        "format": SHARDS_FORMAT,
        "version": FORMAT_VERSION,
        **_run_signature(encoder, pooling, config, n, digest, shard_rows),
        "num_shards": num_shards,
    }
    signature["shard_rows"] = signature.pop("chunk_size")
    old = read_manifest(shard_dir)
    if old is not None and {k: old.get(k) for k in signature} != signature:
        raise InputError(
            f"{shard_dir} holds shards of another run (texts, model or settings differ); use an empty folder"
        )
    if old is None and shard_dir.exists() and any(shard_dir.glob(SHARD_GLOB)):
        raise InputError(f"{shard_dir} holds shards without a manifest; use an empty folder")
    shard_dir.mkdir(parents=True, exist_ok=True)
    done = _finished_shards(shard_dir, n, shard_rows)
    _write_manifest(shard_dir, {**signature, "dim": old.get("dim") if old else None, "complete": False})
    run = ShardRun(shard_dir, n, 0, shard_rows, num_shards, resumed_shards=sorted(done), warnings=warnings)
    items = [
        {"shard": c, "start": c * shard_rows, "texts": texts}
        for c, texts in iter_chunks(source, shard_rows)
        if c not in done
    ]
    if items:
        started = _ray_init(address, num_cpus)
        import ray
        import ray.data

        try:
            ds = ray.data.from_items(items, override_num_blocks=len(items))
            ds = ds.map_batches(
                ShardEmbedder,
                fn_constructor_kwargs={
                    "model": model or "",
                    "pooling": pooling,
                    "batch_size": config.batch_size,
                    "max_length": config.max_length,
                    "shard_dir": str(shard_dir.resolve()),
                },
                batch_size=1,
                compute=ray.data.ActorPoolStrategy(size=num_actors),
                num_cpus=1,
            )
            summary = ds.take_all()
        finally:
            if started:
                ray.shutdown()
        run.computed_shards = sorted(int(r["shard"]) for r in summary)
        dims = {int(r["dim"]) for r in summary}
        if len(dims) != 1:
            raise RuntimeError(f"shards came back with different dimensions {sorted(dims)}")
        run.dim = dims.pop()
    else:
        run.dim = int(read_shard(shard_path(shard_dir, 0))[1].shape[1])
    missing = set(range(num_shards)) - _finished_shards(shard_dir, n, shard_rows)
    if missing:
        raise RuntimeError(f"{len(missing)} shard(s) missing after the Ray run, e.g. {min(missing)}; rerun to finish")
    _write_manifest(shard_dir, {**signature, "dim": run.dim, "complete": True})
    log.info("embedded %d texts into %d shards in %s", n, num_shards, shard_dir)
    return run


def save_shards(vectors: np.ndarray, shard_dir: str | Path, shard_rows: int = DEFAULT_SHARD_ROWS) -> int:
    """Split vectors (n, d) (e.g. a memory-mapped .npy from ``embed_to_npy``) into shards with a complete
    manifest, so ``build_ivfpq_from_shards`` can index them. Reads one shard of rows at a time. Returns
    the number of shards."""
    shard_dir = Path(shard_dir)
    if vectors.ndim != 2 or len(vectors) == 0:
        raise InputError(f"need a non-empty 2-D array of vectors, got shape {vectors.shape}")
    if shard_rows < 1:
        raise InputError(f"shard rows must be at least 1, got {shard_rows}")
    if shard_dir.exists() and (any(shard_dir.glob(SHARD_GLOB)) or (shard_dir / MANIFEST).exists()):
        raise InputError(f"{shard_dir} already holds shards; use an empty folder")
    n, dim = vectors.shape
    num_shards = -(-n // shard_rows)
    for c in range(num_shards):
        start = c * shard_rows
        block = np.asarray(vectors[start : start + shard_rows], np.float32)  # (m, d)
        write_shard(shard_dir, c, np.arange(start, start + len(block)), block)
    meta = {"format": SHARDS_FORMAT, "version": FORMAT_VERSION, "n": n, "dim": dim, "shard_rows": shard_rows}
    _write_manifest(shard_dir, {**meta, "num_shards": num_shards, "complete": True})
    return num_shards


def iter_shards(shard_dir: str | Path) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(ids (m,), vectors (m, d)) of each shard, in shard order."""
    for path in sorted(Path(shard_dir).glob(SHARD_GLOB)):
        ids, vectors = read_shard(path)
        assert vectors is not None
        yield ids, vectors


def load_shards(shard_dir: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """All shards in id order: ids (n,) int64 and vectors (n, d) float32; checks nothing is missing."""
    shard_dir = Path(shard_dir)
    if not shard_dir.is_dir():
        raise InputError(f"shard folder not found: {shard_dir}")
    meta = read_manifest(shard_dir)
    parts = list(iter_shards(shard_dir))
    if not parts:
        raise InputError(f"{shard_dir} holds no shards ({SHARD_GLOB})")
    ids = np.concatenate([p[0] for p in parts])  # (n,)
    dims = {p[1].shape[1] for p in parts}
    if len(dims) != 1:
        raise InputError(f"{shard_dir}: shards have different dimensions {sorted(dims)}")
    vectors = np.concatenate([p[1] for p in parts])  # (n, d)
    order = np.argsort(ids, kind="stable")
    ids, vectors = ids[order], vectors[order]
    if len(ids) > 1 and (np.diff(ids) == 0).any():
        raise InputError(f"{shard_dir}: some ids appear in two shards; delete the folder and rerun")
    if meta is not None:
        if not meta.get("complete") or not np.array_equal(ids, np.arange(meta.get("n", -1))):
            raise InputError(
                f"{shard_dir}: shards are incomplete ({len(ids)} of {meta.get('n')} rows); rerun to finish"
            )
    return ids, vectors


def build_ivfpq_from_shards(
    shard_dir: str | Path,
    sample_size: int = 100_000,
    nlist: int | None = None,
    m: int | None = None,
    nbits: int = 8,
    nprobe: int | None = None,
    seed: int = 0,
):
    """IVF-PQ index over every shard without holding all flat vectors: k-means and PQ codebooks are
    trained on a seeded sample of ``sample_size`` rows, then shards are added one by one with their ids.
    ``nlist`` defaults to ~4 sqrt(n) (at most sample / 39), ``m`` to dim / 8 (must divide dim).
    Returns a ``core.index.VectorIndex``.
    """
    from core.index import IndexParams, VectorIndex
    from core.sampling import sample_indices

    shard_dir = Path(shard_dir)
    meta = read_manifest(shard_dir)
    if meta is None or not meta.get("complete"):
        raise InputError(f"{shard_dir}: no complete shard set (manifest.json missing or run unfinished)")
    n, dim = int(meta["n"]), int(meta["dim"])
    wanted = sample_indices(n, sample_size, seed)  # (s,) sorted ids
    sample = np.concatenate([v[np.isin(ids, wanted)] for ids, v in iter_shards(shard_dir)])  # (s, d)
    params = IndexParams(nlist=nlist, pq_m=m, pq_nbits=nbits, nprobe=nprobe, train_size=sample_size, seed=seed)
    params = params.resolved("ivfpq", n, dim)  # the default nlist rule lives there (sample rows // 39 at most)
    index = VectorIndex.create(dim, "ivfpq", params)
    index.train(sample)
    del sample
    for ids, vectors in iter_shards(shard_dir):
        index.add(vectors, ids)
    if index.ntotal != n:
        raise InputError(f"{shard_dir}: indexed {index.ntotal} rows, the manifest says {n}")
    return index
