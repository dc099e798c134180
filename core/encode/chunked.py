"""Embedding corpora too big for one call on one machine: resumable chunks into one .npy file.

``embed_to_npy`` (``embed_to_npy``): texts (a list, or a .txt file streamed line by line) are embedded in
chunks of ``chunk_size`` with ``isoscope.encode.embed.encode`` into a ``<out>.partial`` .npy file
(``isoscope.cache.PartialNpy``: never through a link, never through a memory map, its free space checked first);
``<out>.progress.json`` records finished chunks after each one is written. An interrupted run
started again with the same texts, model, pooling and settings computes only the missing chunks; any
mismatch starts over. When every chunk is done the partial file is renamed to ``out`` (atomic), so
``out`` only ever holds a complete array. Memory: one chunk of texts and vectors at a time.

Beyond one machine, ``isoscope.encode.shards`` runs the same ``encode`` in a pool of Ray actors.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from isoscope.cache import PartialNpy, atomic_write_bytes, check_free, text_digest
from isoscope.data import TextStats, stream_texts, streaming_limits
from isoscope.data.jsonfile import Int, ListOf, Struct, read_json
from isoscope.data.limits import check_count
from isoscope.data.outputs import NPY, check_destination
from isoscope.data.sharded import ParquetColumn
from isoscope.encode.embed import EmbedConfig, encode
from isoscope.encode.models import Encoder
from isoscope.encode.pooling import Pooling, PoolingSpec, resolve_pooling
from isoscope.errors import InputError

log = logging.getLogger(__name__)

ProgressFn = Callable[[int, int], None]  # (texts done, total)
DEFAULT_CHUNK_SIZE = 4096
PROGRESS_FORMAT = "isoscope-chunked-embedding"
PROGRESS = Struct({"dim": Int(lo=1), "done": ListOf(Int(lo=0))})  # the progress file's fields a resume believes
FORMAT_VERSION = 1

# ---------------------------------------------------------------- text sources


TextSource = Sequence[str] | str | Path | ParquetColumn  # texts, a UTF-8 .txt file (one text a line), a column


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
    """Texts one at a time. A file is read as ``load_corpus`` reads a .txt (``isoscope.data.stream_texts``: the
    same encodings, binary refusal and truncation), without its row or size limit; ``stats`` collects what
    the warnings need."""
    if not _is_path(source):
        yield from (str(t) for t in source)
        return
    path = _check_text_file(Path(source))
    yield from stream_texts(path, path.name, streaming_limits(), stats=stats)


def scan_source(source: TextSource, warnings: list[str] | None = None) -> tuple[int, str]:
    """(number of texts, content digest) of a source; a file is streamed once and its load warnings (encoding,
    truncated texts) are appended to ``warnings``."""
    if not _is_path(source) and not isinstance(source, ParquetColumn):
        texts = list(source) if not isinstance(source, list) else source
        return len(texts), text_digest(texts)
    stats = TextStats(Path(source if _is_path(source) else source.path).name)
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


@dataclass(frozen=True)
class RunPlan:
    """What a resumable embedding run starts from: its texts counted, its chunks, and the signature an earlier
    run's files must carry to be resumed (model, pooling, settings, the texts' digest, the chunk size)."""

    n: int
    num_chunks: int
    pooling: PoolingSpec  # checked against the model
    signature: dict
    warnings: list[str]  # from reading a .txt source (encoding, truncation)


def plan_run(
    encoder: Encoder, source: TextSource, *, pooling: Pooling, config: EmbedConfig, chunk_size: int
) -> RunPlan:
    """The start every engine shares (``embed_to_npy`` here, ``isoscope.encode.shards.embed_with_ray``): the pooling
    checked against the model, the texts counted and digested (a file is streamed once), InputError when there
    are none."""
    spec = resolve_pooling(pooling, encoder)
    warnings: list[str] = []
    n, digest = scan_source(source, warnings)
    if n == 0:
        raise InputError("no texts to embed (the input is empty)")
    signature = {
        "model": encoder.fingerprint,
        "pooling": spec.name,
        "max_length": config.max_length,
        "n": n,
        "texts": digest,
        "chunk_size": chunk_size,
    }
    return RunPlan(n, -(-n // chunk_size), spec, signature, warnings)


def _load_progress(out: Path, signature: dict) -> tuple[set[int], PartialNpy | None]:
    """Finished chunks and the partial file of an earlier compatible run, else (empty, None)."""
    prog, part = progress_path(out), partial_path(out)
    if not prog.exists() or not part.exists():
        return set(), None
    try:
        state = read_json(prog, what=prog.name, schema=PROGRESS, max_bytes=2**20)  # isoscope.data.jsonfile
        if state.get("format") != PROGRESS_FORMAT or state.get("version") != FORMAT_VERSION:
            raise ValueError("unknown progress format")
        if {k: state.get(k) for k in signature} != signature:
            log.warning("%s belongs to another run (texts, model or settings changed); starting over", prog.name)
            return set(), None
        done = set(state["done"])
        partial = PartialNpy.reopen(part, (signature["n"], state["dim"]))
    except (OSError, ValueError, TypeError, AttributeError) as exc:  # InputError too: a FIFO, another file: start over
        log.warning("cannot resume from %s (%s); starting over", prog.name, exc)
        return set(), None
    return done, partial


def _save_progress(out: Path, signature: dict, dim: int, done: set[int]) -> None:
    state = {"format": PROGRESS_FORMAT, "version": FORMAT_VERSION, **signature, "dim": dim, "done": sorted(done)}
    atomic_write_bytes(progress_path(out), json.dumps(state).encode())


def embed_to_npy(
    encoder: Encoder,
    source: TextSource,
    out: str | Path,
    *,
    pooling: Pooling = None,
    config: EmbedConfig | None = None,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    progress: ProgressFn | None = None,
    force: bool = False,
) -> ChunkedRun:
    """Embed every text of ``source`` into ``out`` (.npy, float32 (n, d)), resumably, chunk by chunk. An existing
    ``out`` that is not a .npy file is replaced only with ``force`` (``isoscope.data.outputs``: checked before
    the first chunk and again at the rename).

    ``progress(done, total)`` is called after each chunk is safely on disk (so an exception raised in it
    loses nothing). Rows follow the order of the texts (empty lines of a file are skipped).
    """
    out = Path(out)
    config = config or EmbedConfig()
    if out.suffix != ".npy":
        raise InputError(f"output must end in .npy, got '{out.name}'")
    check_count("chunk_size", chunk_size, "chunk size")  # isoscope.data.limits.COUNTS
    check_destination(out, kind=NPY, force=force)
    plan = plan_run(encoder, source, pooling=pooling, config=config, chunk_size=chunk_size)
    n, num_chunks, signature = plan.n, plan.num_chunks, plan.signature
    done, part = _load_progress(out, signature)
    dim = 0 if part is None else part.shape[1]
    run = ChunkedRun(out, n, dim, chunk_size, num_chunks, resumed_chunks=sorted(done), warnings=plan.warnings)
    if done:
        log.info("resuming %s: %d of %d chunks already done", out.name, len(done), num_chunks)
    try:
        if part is not None:  # the rows still to come need room on disk (the file's holes)
            check_free(part.path, 4 * run.dim * (n - sum(_chunk_len(c, n, chunk_size) for c in done)))
        for c, texts in iter_chunks(source, chunk_size):
            if c in done:
                continue
            if c >= num_chunks or len(texts) != _chunk_len(c, n, chunk_size):
                raise InputError("the input changed while it was being embedded; run again")
            vectors = encode(encoder, texts, plan.pooling, config=config)  # (m, d)
            if part is None:
                part = PartialNpy.create(partial_path(out), (n, vectors.shape[1]))
                run.dim = int(vectors.shape[1])
            part.write(c * chunk_size, vectors)
            part.sync()
            done.add(c)
            _save_progress(out, signature, run.dim, done)
            run.computed_chunks.append(c)
            if progress is not None:
                progress(sum(_chunk_len(i, n, chunk_size) for i in done), n)
        if len(done) != num_chunks or part is None:
            raise InputError("the input changed while it was being embedded; run again")
        check_destination(out, kind=NPY, force=force)
        part.finish(out)
    finally:
        if part is not None:
            part.close()
    progress_path(out).unlink(missing_ok=True)
    log.info("wrote %d x %d vectors to %s (%d chunks computed)", n, run.dim, out, len(run.computed_chunks))
    return run
