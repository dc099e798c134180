"""``python -m isoscope atlas``: the whole-corpus atlas (embeddings, kNN graph, 2-D layout, density, clusters),
raw and calibrated, into a folder; rerun to resume (finished stages are skipped).

``--vectors FILE[:COLUMN]`` builds it from vectors computed elsewhere (the file's texts and metadata columns, or
with ``--input`` the vectors of its texts); ``--model openai:NAME`` from an endpoint's vectors of the corpus."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from isoscope.commands.common import (
    PRECISION_HELP,
    add_endpoint_arguments,
    add_json_argument,
    add_model_arguments,
    add_vectors_argument,
    emit,
    encoder_for,
    output_from_args,
    space_from_args,
)
from isoscope.data.limits import count_option
from isoscope.encode.precision import FP32_ENGINE_TOLERANCE

# isoscope --help's line for this command, read from the file (isoscope.cli imports only the chosen command)
COMMAND = {"order": 90, "help": "map a whole corpus (up to 1,000,000 texts) in 2-D: layout, density, clusters"}

if TYPE_CHECKING:
    from isoscope.sources import SpaceSpec

LAYOUTS: tuple[str, ...] = ("umap", "pca")
ENGINES: tuple[str, ...] = ("local", "ray")  # isoscope.atlas.pipeline.ENGINES (not imported: numpy, pandas)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--input",
        default=None,
        help="corpus file: .txt, .csv, .tsv, .jsonl or .parquet, or a folder of .parquet shards, read a batch at a "
        "time (optional with --vectors, which may be such a folder too, its vector column 'embedding' or FOLDER:COLUMN)",
    )
    p.add_argument("--text-column", default=None, help="column holding the texts (default: text)")
    add_vectors_argument(p)
    p.add_argument("--out", required=True, help="folder for the atlas (created; rerun with the same folder to resume)")
    add_model_arguments(
        p,
        max_length=128,
        batch_help="texts per forward pass at least",
        cache_help="openai:NAME models: do not read or write the endpoint cache (the folder itself is the resume point)",
        precision_help=f"{PRECISION_HELP}; fp32 embeds on the fastest engine whose vectors equal PyTorch's within "
        f"{FP32_ENGINE_TOLERANCE:g} (ONNX Runtime on the CPU), and the result names it",
    )
    p.add_argument(
        "--calibrate", default="whitening", help="calibrator for the second map, or 'none' (default: whitening)"
    )
    p.add_argument("--layout", choices=LAYOUTS, default="umap", help="2-D layout (default: umap)")
    p.add_argument("--k", type=int, default=15, help="neighbours per point in the graph (default: 15)")
    p.add_argument("--fit-rows", type=int, default=100_000, help="calibrator fitted on a seeded sample of N rows")
    p.add_argument("--seed", type=int, default=0, help="seed of the layout and the fit sample (default: 0)")
    p.add_argument(
        "--landmarks",
        type=int,
        default=100_000,
        help="above this many texts, UMAP runs on a seeded sample of this many and places the rest from the "
        "neighbour graph (0: full UMAP at any size; default: 100,000)",
    )
    p.add_argument(
        "--engine",
        choices=ENGINES,
        default="local",
        help="local: this process (up to 1,000,000 texts, as memory allows); ray: the stages as Ray tasks in shards "
        "(FAISS IVF graph, landmark layout placed in tasks), no row limit (default: local)",
    )
    p.add_argument(
        "--ray-address",
        default="local",
        help="with --engine ray: local (start Ray here), auto or ray://HEAD:10001 (a cluster; the --out folder must be "
        "on storage every node sees)",
    )
    p.add_argument(
        "--shard-rows",
        type=count_option("shard_rows"),
        default=100_000,
        help="with --engine ray: rows per task (default: 100,000)",
    )
    add_endpoint_arguments(p)
    add_json_argument(p)


# what each stage's progress counts (isoscope.atlas.pipeline); the others only start and end
STAGE_UNITS = {
    "embed": "text",
    "calibrate": "vector",
    "raw_knn": "text",
    "cal_knn": "text",
    "raw_layout": "step",
    "cal_layout": "step",
    "raw_clusters": "step",
    "cal_clusters": "step",
    "extras": "step",
    "index": "step",
}


def _progress(args: argparse.Namespace, stages: list[str]):
    """The build's bars: one of the stages, done (or found done) out of ``stages``, and one per stage that
    counts its work (texts embedded, rows searched, layout steps) while it runs. A stage's start and end
    marks, (0, 1) and (1, 1), draw no bar of their own (a "texts: 0/1" bar says nothing)."""
    from isoscope.commands.common import progress_bar

    overall = progress_bar(args, "atlas", unit="stage")
    finished: set[str] = set()
    bars: dict[str, object] = {}

    def update(stage: str, done: int, total: int) -> None:
        if total == 1 or stage not in STAGE_UNITS:  # a mark: the stage started (0) or ended (1)
            if done >= total and stage in stages:
                finished.add(stage)
            overall(len(finished), len(stages))
            return
        if stage not in bars:
            bars[stage] = progress_bar(args, stage, unit=STAGE_UNITS[stage])
            bars[stage](0, total)  # type: ignore[operator]  # opened at 0, even when the first count is the last
        bars[stage](done, total)  # type: ignore[operator]

    return update


def _given(args: argparse.Namespace, space: SpaceSpec):
    """(texts, vectors, metadata, warnings) of a vectors file or an endpoint.

    Vectors files are bounded by ISOSCOPE_MAX_ROWS and ISOSCOPE_MAX_VECTOR_BYTES like every vectors file."""
    from isoscope.commands.common import vector_input
    from isoscope.errors import InputError

    given = vector_input(args, space, args.input, kind="corpus")
    assert given is not None
    if not given.has_texts:
        raise InputError(
            f"{given.name}: an atlas shows texts; name the file's text column (--text-column) or give --input"
        )
    meta = given.table.meta if given.table is not None and args.input is None else None
    return given.texts.texts, given.vectors, meta, given.texts.warnings


def _shards(args: argparse.Namespace, space: SpaceSpec):
    """``ParquetShards`` when ``--input`` (texts, embedded here) or ``--vectors`` (texts and vectors) is a folder of
    Parquet files; None otherwise."""
    from isoscope.data.sharded import ParquetShards, is_shard_folder
    from isoscope.errors import InputError

    if space.vectors:  # the file given may be a folder of shards
        from isoscope.data.vectors import parse_vectors_ref

        path, column = parse_vectors_ref(space.vectors_ref)
        if not is_shard_folder(path):
            return None
        if args.input is not None:
            raise InputError("--vectors is a folder of Parquet shards holding the texts too; drop --input")
        return ParquetShards.open(path, text_column=args.text_column, vector_column=column or "embedding")
    if space.has_model and args.input is not None and is_shard_folder(args.input):
        return ParquetShards.open(args.input, text_column=args.text_column)
    return None


def _engine(config, address: str):
    """Ray for the ray engine, started (or joined) once for the plan and the build; nothing for the local one."""
    import contextlib

    if config.engine == "local":
        return contextlib.nullcontext()
    from isoscope.atlas.distributed import ray_session

    return ray_session(address)


def _rates(config, n: int, dim: int):
    """(kNN, UMAP) rates of this machine for a one-machine build's plan (``isoscope.atlas.costs.measure_knn``,
    ``isoscope.neighbours.costs.measure_umap``: a few seconds of probes, numba's compile when its disk cache
    lacks UMAP's kernels, which the build then does not pay); (None, None) when nothing is built that they time."""
    from isoscope.atlas.costs import measure_knn, needs_approx
    from isoscope.atlas.folder import needs_graph

    umap = None
    if config.layout == "umap":
        from isoscope.neighbours.costs import measure_umap, seen_umap_rate
        from isoscope.neighbours.umap_jit import layout_kernels_ready

        umap = seen_umap_rate() or measure_umap(repeat=not layout_kernels_ready(), setup=True)
    if not needs_graph(config.to_dict()) and umap is None:
        return None, None
    return measure_knn(dim, config.k + 1, approx=needs_approx(n, config.landmarks)), umap


def _plan(config, n: int, dim: int):
    """The build's plan (``isoscope.atlas.costs.atlas_plan``): the ray engine's workers are the cluster's CPUs; the
    one-machine engine's time from this machine's rates (``_rates``)."""
    from isoscope.atlas.costs import atlas_plan
    from isoscope.atlas.folder import needs_graph

    workers, knn, umap = 1, None, None
    if config.engine == "ray":
        import ray

        workers = int(ray.cluster_resources().get("CPU", 1))
    else:
        knn, umap = _rates(config, n, dim)
    spaces = 1 if config.calibrate == "none" else 2
    return atlas_plan(
        n,
        dim,
        k=config.k,
        spaces=spaces,
        landmarks=config.landmarks,
        engine=config.engine,
        shard_rows=config.shard_rows,
        workers=workers,
        graph=needs_graph(config.to_dict()),
        knn=knn,
        umap=umap,
    )


def run(args: argparse.Namespace) -> dict:
    from isoscope.atlas.pipeline import MAX_ATLAS_ROWS, AtlasConfig, build_atlas, planned_stages
    from isoscope.data import load_corpus
    from isoscope.errors import InputError

    if args.max_length < 2 or args.batch_size < 1:
        raise InputError("--max-length must be >= 2 and --batch-size >= 1")
    from isoscope.data.outputs import ATLAS_FOLDER

    space = space_from_args(args, "atlas")
    output_from_args(args, args.out, ATLAS_FOLDER)  # before any work: no input, no folder of another kind
    config = AtlasConfig(
        pooling=space.pooling,
        max_length=args.max_length,
        batch_size=args.batch_size,
        k=args.k,
        layout=args.layout,
        calibrate=args.calibrate,
        fit_rows=args.fit_rows,
        seed=args.seed,
        landmarks=args.landmarks,
        engine=args.engine,
        shard_rows=args.shard_rows,
    )
    config.validate()
    if config.engine == "ray":
        from isoscope.encode.ray_address import parse_ray_address
        from isoscope.encode.shards import require_ray

        parse_ray_address(args.ray_address)  # its form before any work (whether it answers: when Ray starts)
        require_ray()  # the extra installed, before any corpus is read or model loaded
    if config.calibrate != "none":
        from isoscope.calibrate import make_calibrator

        make_calibrator(config.calibrate)  # a bad name fails before any embedding
    shards = _shards(args, space)
    if shards is not None:  # a folder of Parquet files: read a batch at a time, never held whole
        scan = shards.scan()
        texts, vectors, meta, load_warnings = shards, None, None, scan.warnings
        encoder = None if shards.vector is not None else encoder_for(args, space)
        dim = scan.dims if shards.vector is not None else encoder.hidden_size
        n = scan.n
    elif not space.has_model:  # vectors built elsewhere (vector_input: space_vectors)
        texts, vectors, meta, load_warnings = _given(args, space)
        encoder, dim = None, vectors.shape[1]
        n = len(texts)
    else:
        if args.input is None:
            raise InputError("give --input (a corpus), or --vectors")
        limit = MAX_ATLAS_ROWS if config.engine == "local" else None
        corpus = load_corpus(args.input, text_column=args.text_column, max_rows=limit)
        texts, vectors, meta, load_warnings = corpus.texts, None, corpus.meta, corpus.warnings
        encoder = encoder_for(args, space)
        dim = encoder.hidden_size
        n = len(texts)
    with _engine(config, args.ray_address):
        plan = _plan(config, n, dim)
        if not args.quiet:  # the plan before any work: shards, memory per task, time (in --json's result too)
            print("\n".join(plan.lines()), file=sys.stderr)
        run_ = build_atlas(
            encoder,
            texts,
            Path(args.out),
            config=config,
            meta=meta,
            progress=_progress(args, planned_stages(config)),
            vectors=vectors,
        )
    warnings = [*load_warnings, *run_.warnings]
    result = {
        "out": str(run_.path),
        "n": run_.n,
        "computed": run_.computed,
        "skipped": run_.skipped,
        "seconds": run_.seconds,
        "warnings": warnings,
        "engine": run_.engine or None,  # what embedded (None: the vectors were already there)
        "plan": plan.to_dict(),
    }
    done = (
        f"atlas of {run_.n:,} texts in {run_.path} ({len(run_.computed)} stages computed, {len(run_.skipped)} reused)"
    )
    used = [f"embedded with {run_.engine}"] if run_.engine else []
    emit(args, result, [done, *used])
    return result
