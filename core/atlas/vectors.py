"""The ``embed`` and ``calibrate`` stages: ``vectors.npy`` (n, d) float32 from what a build reads, and the calibrated
space's ``cal/vectors.npy`` with its fitted calibrator.

engine = embed_stage(folder, encoder, given, config, progress)   # the engine that embedded ("" when given vectors)
calibrate_stage(folder, folder / "cal", config, progress)

- ``embed``: the given vectors (or the shards'), or every distinct text embedded once (``distinct_rows``) on the
  fastest engine of the encoder's precision through ``isoscope.encode.chunked.embed_to_npy`` (chunked into a memory
  map, resumable chunk by chunk), then copied to the rows repeating it; on the ray engine Ray Data actors
  (``distributed.embed_on_ray``).
- ``calibrate``: a calibrator fitted on a seeded sample of ``fit_rows`` rows (``cal/calibrator/``), then applied to
  every row in chunks (``cal/vectors.npy``).
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import numpy as np

from isoscope.atlas.config import AtlasConfig, StageProgress
from isoscope.atlas.distributed import embed_on_ray, load_npy
from isoscope.atlas.inputs import BuildInput, distinct_rows
from isoscope.cache import PartialNpy
from isoscope.data.sharded import ParquetColumn
from isoscope.errors import InputError
from isoscope.sampling import sample_indices

log = logging.getLogger(__name__)

CHUNK_ROWS = 65_536


def embed_stage(
    folder: Path, encoder, given: BuildInput, *, config: AtlasConfig, progress: StageProgress | None
) -> str:
    """``vectors.npy`` (n, d) in ``folder``: the given vectors (or the shards'), or every distinct text embedded once
    (``distinct_rows``) on the fastest engine of the encoder's precision, resumable chunk by chunk, then copied to
    the rows repeating it (texts from shards: each embedded, read from ``points.parquet`` a row group at a time).
    Returns the engine that embedded (``isoscope.encode.engines``), "" when nothing was embedded."""
    out = folder / "vectors.npy"
    if given.vectors is not None:  # chunk by chunk: a memory-mapped input is never read whole
        _spread(given.vectors, np.arange(len(given.vectors)), out)
        return ""
    if given.precomputed:
        _shard_vectors(given, out)
        return ""
    from isoscope.encode.chunked import embed_to_npy  # torch: only when texts are embedded here
    from isoscope.encode.embed import EmbedConfig

    texts = given.texts if given.shards is None else ParquetColumn(folder / "points.parquet", "text")
    if config.engine == "ray":  # Ray Data actors (a GPU each on CUDA), each loading the model by its name
        return embed_on_ray(texts, out, encoder=encoder, pooling=config.pooling, config=config)
    from isoscope.encode.engines import engine_in_use, fastest_fp32_encoder

    fast = fastest_fp32_encoder(encoder)  # the fp32 vectors within FP32_ENGINE_TOLERANCE, faster; int8 as asked
    engine = engine_in_use(fast, config.pooling.needs_hidden_states)
    cfg = EmbedConfig(batch_size=config.batch_size, max_length=config.max_length)
    report = None if progress is None else (lambda d, t: progress("embed", d, t))
    embed = dict(pooling=config.pooling, config=cfg, chunk_size=config.embed_chunk, progress=report)
    if given.shards is not None or given.repeats == 0:
        log.info("atlas: embedding %d texts with %s", given.n, engine)
        embed_to_npy(fast, texts, out, **embed)
        return engine
    distinct, rows = distinct_rows(texts)
    log.info("atlas: embedding %d distinct of %d texts with %s", len(distinct), given.n, engine)
    once = folder / "vectors.distinct.npy"  # resumable like any chunked embedding; gone once copied out
    embed_to_npy(fast, distinct, once, **embed)
    _spread(load_npy(once), rows, out)
    once.unlink()
    return engine


def _shard_vectors(given: BuildInput, out: Path) -> None:
    """The shards' vectors (n, d) into ``out`` a batch at a time (rows whose text was empty were dropped)."""
    assert given.shards is not None
    part = PartialNpy.create(out.with_name(out.name + ".partial"), (given.n, given.shards.dims))
    try:
        row = 0
        for batch in given.shards.batches(vectors=True, meta=False, texts=False):
            part.write(row, batch.vectors)
            row += len(batch.vectors)
        if row != given.n:
            raise InputError(f"{given.shards.name}: the shards changed while the atlas was built; rerun")
        part.finish(out)
    finally:
        part.close()


def _spread(vectors: np.ndarray, rows: np.ndarray, path: Path) -> None:
    """``vectors[rows]`` (n, d) into ``path`` (.npy), chunk by chunk, renamed when complete."""
    part = PartialNpy.create(path.with_name(path.name + ".partial"), (len(rows), vectors.shape[1]))
    try:
        for s in range(0, len(rows), CHUNK_ROWS):
            block = rows[s : s + CHUNK_ROWS]  # (m,)
            order = np.argsort(block, kind="stable")  # read the memory map in ascending rows
            out = np.empty((len(block), vectors.shape[1]), np.float32)  # (m, d)
            out[order] = vectors[block[order]]
            part.write(s, out)
        part.finish(path)
    finally:
        part.close()


def calibrate_stage(out: Path, d: Path, config: AtlasConfig, progress: StageProgress | None) -> None:
    """Fit the calibrator on a seeded sample of ``out``/vectors.npy (a calibrator left by an interrupted run is
    refitted, never read unchecked), save it in ``d``/calibrator, and apply it to every row (``d``/vectors.npy)."""
    from isoscope.calibrate import make_calibrator

    vectors = load_npy(out / "vectors.npy")
    cal_dir = d / "calibrator"
    shutil.rmtree(cal_dir, ignore_errors=True)
    rows = sample_indices(len(vectors), config.fit_rows, config.seed)  # (s,) sorted
    calibrator = make_calibrator(config.calibrate).fit(np.asarray(vectors[rows], np.float32))
    calibrator.save(cal_dir, {"fit_rows": len(rows), "seed": config.seed})
    _chunked_transform(calibrator, vectors, d / "vectors.npy", progress)


def _chunked_transform(calibrator, vectors: np.ndarray, path: Path, progress: StageProgress | None) -> None:
    """calibrator.transform over ``vectors`` (n, d) in chunks into ``path`` (.npy, renamed when complete)."""
    n = len(vectors)
    part = None
    try:
        for s in range(0, n, CHUNK_ROWS):
            z = np.asarray(calibrator.transform(np.asarray(vectors[s : s + CHUNK_ROWS], np.float32)), np.float32)
            if part is None:
                part = PartialNpy.create(path.with_name(path.name + ".partial"), (n, z.shape[1]))
            part.write(s, z)
            if progress is not None:
                progress("calibrate", min(n, s + CHUNK_ROWS), n)
        assert part is not None
        part.finish(path)
    finally:
        if part is not None:
            part.close()
