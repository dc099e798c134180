"""``python -m isoscope embed``: embed a corpus to a .npy file, in resumable chunks, or in shards through Ray.

``--calibrate METHOD`` fits a calibrator on the vectors and writes the calibrated ones. ``--vectors FILE[:COLUMN]``
passes vectors computed elsewhere through (``embed --vectors V.parquet:emb --calibrate whitening --out Z.npy``);
``--model openai:NAME`` embeds through an endpoint.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

from isoscope.calibrate.methods import methods_help
from isoscope.commands.common import (
    add_endpoint_arguments,
    add_force_argument,
    add_json_argument,
    add_model_arguments,
    add_vectors_argument,
    cache_from_args,
    embed_config,
    emit,
    encoder_for,
    epoch_bar,
    output_from_args,
    progress_bar,
    recipe_of,
    space_from_args,
    vector_input,
)
from isoscope.data.limits import count_option
from isoscope.errors import InputError

# isoscope --help's line for this command, read from the file (isoscope.cli imports only the chosen command)
COMMAND = {"order": 10, "help": "embed a corpus (one text per line, or a table with a text column) to a .npy file"}

if TYPE_CHECKING:
    from isoscope.sources import SpaceSpec

ENGINES: tuple[str, ...] = ("local", "ray")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--input", default=None, help="corpus file: .txt, .csv, .tsv, .jsonl or .parquet (optional with --vectors)"
    )
    p.add_argument("--text-column", default=None, help="column holding the texts (default: text)")
    add_vectors_argument(
        p,
        "vectors computed elsewhere to pass through (with --calibrate: calibrated): FILE[:COLUMN] (.npy, .parquet, "
        ".feather, .safetensors, a datasets folder); with --input, the vectors of its texts",
    )
    p.add_argument(
        "--calibrate",
        default="none",
        metavar="METHOD",
        help=f"fit a calibrator on the vectors and write the calibrated ones: {methods_help()} (default: none)",
    )
    p.add_argument(
        "--out",
        default=None,
        help="output .npy file, float32 (n, d); with --engine ray optional (gathers the shards into it, in memory)",
    )
    p.add_argument(
        "--engine",
        choices=ENGINES,
        default="local",
        help="local: this process; ray: a pool of Ray actors writing shards to --shard-dir (default: local)",
    )
    p.add_argument(
        "--chunk-size",
        type=count_option("chunk_size"),
        default=None,
        help="local: embed in resumable chunks of N texts, streaming a .txt input (no row limit); "
        "ray: texts per shard (default 1024)",
    )
    p.add_argument("--shard-dir", default=None, help="ray: folder for the shards (shared by all nodes on a cluster)")
    p.add_argument(
        "--ray-address",
        default="local",
        help="ray: 'local' starts Ray on this machine; or a cluster address such as ray://head:10001 or auto",
    )
    p.add_argument(
        "--actors", type=count_option("actors"), default=2, help="ray: number of actors, one model each (default: 2)"
    )
    p.add_argument(
        "--num-cpus",
        type=count_option("num_cpus"),
        default=2,
        help="ray with a local address: CPUs Ray may use (default: 2)",
    )
    add_force_argument(p)
    add_model_arguments(p)
    add_endpoint_arguments(p)
    add_json_argument(p)


def _check_out(args: argparse.Namespace) -> Path | None:
    """``--out`` checked before any work (``isoscope.data.outputs``): a .npy name, no input, nothing of another kind."""
    if args.out is None:
        return None
    from isoscope.data.outputs import NPY

    path = Path(args.out)
    if path.suffix != ".npy":
        raise InputError(f"--out must end in .npy, got '{path.name}'")
    if path.is_dir():  # said before any work, naming the option (the rename at the end named a temporary file)
        raise InputError(f"--out {args.out} is a folder; give the .npy file to write, e.g. {path / 'vectors.npy'}")
    return output_from_args(args, args.out, NPY)


def _save(args: argparse.Namespace, out: Path, vectors) -> None:
    """``vectors`` written to ``out`` beside it and renamed in (``isoscope.data.outputs.write_output_bytes``)."""
    from isoscope.cache import npy_bytes
    from isoscope.data.outputs import NPY, write_output_bytes

    write_output_bytes(out, npy_bytes(vectors), kind=NPY, force=args.force)


def _run_ray(args: argparse.Namespace, space: SpaceSpec, out: Path | None) -> dict:
    from isoscope.data import streamable_corpus
    from isoscope.encode.ray_address import parse_ray_address
    from isoscope.encode.shards import DEFAULT_SHARD_ROWS, actor_device, embed_with_ray, load_shards, require_ray

    parse_ray_address(args.ray_address)  # its form first: one line naming the forms
    require_ray()  # before reading anything: one line naming the extra to install
    if not args.shard_dir:
        raise InputError("--engine ray needs --shard-dir (a folder every Ray node can write)")
    from isoscope.data.outputs import SHARDS_FOLDER

    output_from_args(args, args.shard_dir, SHARDS_FOLDER, option="--shard-dir")
    source, warnings = streamable_corpus(args.input, args.text_column)
    args.interrupt_note = f"the shards finished so far are kept in {args.shard_dir}; run the same command to resume"
    run = embed_with_ray(
        source,
        args.shard_dir,
        model=space.model or None,
        pooling=space.pooling,
        config=embed_config(args),
        shard_rows=args.chunk_size or DEFAULT_SHARD_ROWS,
        num_actors=args.actors,
        address=args.ray_address,
        num_cpus=args.num_cpus,
        device=args.device,
        dtype=args.dtype,
    )
    result = {
        "engine": "ray",
        "device": actor_device(args.device),  # what each actor ran on
        "dtype": args.dtype,
        "shard_dir": str(run.shard_dir),
        "n": run.n,
        "dim": run.dim,
        "shards": run.num_shards,
        "computed_shards": len(run.computed_shards),
        "resumed_shards": len(run.resumed_shards),
        "out": None,
        "warnings": warnings + run.warnings,
    }
    lines = [f"wrote {run.n} x {run.dim} vectors in {run.num_shards} shards to {run.shard_dir}"]
    if out is not None:
        _, vectors = load_shards(run.shard_dir)
        _save(args, out, vectors)
        result["out"] = str(out)
        lines.append(f"wrote {vectors.shape[0]} x {vectors.shape[1]} vectors to {out}")
    emit(args, result, lines)
    return result


def _run_chunked(args: argparse.Namespace, space: SpaceSpec, out: Path) -> dict:
    from isoscope.data import streamable_corpus
    from isoscope.encode.chunked import embed_to_npy

    source, warnings = streamable_corpus(args.input, args.text_column)
    args.interrupt_note = (
        f"the chunks finished so far are kept in {out.name}.partial; run the same command again to resume"
    )
    run = embed_to_npy(
        encoder_for(args, space),
        source,
        out,
        pooling=space.pooling,
        config=embed_config(args),
        chunk_size=args.chunk_size,
        progress=progress_bar(args, "embed"),
        force=args.force,
    )
    result = {
        "engine": "local",
        "out": str(out),
        "n": run.n,
        "dim": run.dim,
        "chunks": run.num_chunks,
        "computed_chunks": len(run.computed_chunks),
        "resumed_chunks": len(run.resumed_chunks),
        "warnings": warnings + run.warnings,
    }
    emit(args, result, [f"wrote {run.n} x {run.dim} vectors to {out}"])
    return result


def _calibrated(args: argparse.Namespace, vectors, result: dict, lines: list[str]):
    """``vectors`` calibrated with --calibrate (fitted on themselves); the result says what was done."""
    if args.calibrate == "none":
        return vectors
    from isoscope.evaluate.sts import avg_cosine_or_nan
    from isoscope.sources import SpaceSpec, calibrate_space

    out, warnings = calibrate_space(SpaceSpec(calibrate=args.calibrate), vectors, epoch_bar(args))  # (n, k)
    before, after = avg_cosine_or_nan(vectors), avg_cosine_or_nan(out)
    result.update(
        calibrate=args.calibrate, dim_in=int(vectors.shape[1]), avg_cosine_before=before, avg_cosine_after=after
    )
    result["warnings"] = [*result["warnings"], *warnings]
    lines.append(f"{args.calibrate}: avg cosine of random pairs {before:.3f} -> {after:.3f}")
    return out


def _write(args: argparse.Namespace, out: Path, vectors, warnings: list[str], extra: dict | None = None) -> dict:
    result = {"out": str(out), "n": int(vectors.shape[0]), "dim": 0, **(extra or {}), "warnings": list(warnings)}
    lines: list[str] = []
    vectors = _calibrated(args, vectors, result, lines)
    _save(args, out, vectors)
    result["dim"] = int(vectors.shape[1])
    lines.insert(0, f"wrote {vectors.shape[0]} x {vectors.shape[1]} vectors to {out}")
    emit(args, result, lines)
    return result


def run(args: argparse.Namespace) -> dict:
    out = _check_out(args)
    if args.calibrate != "none":
        from isoscope.calibrate import make_calibrator

        make_calibrator(args.calibrate)  # a bad method fails before anything is read
        if args.engine == "ray" or args.chunk_size is not None:
            raise InputError("--calibrate needs every vector in memory: drop --engine ray and --chunk-size")
    space = space_from_args(args, "embed")
    if not space.has_model:  # vectors built elsewhere (a file, an endpoint): written whole
        if out is None:
            raise InputError("--out is required (a .npy file)")
        if args.engine == "ray" or args.chunk_size is not None:
            raise InputError("--vectors and endpoints are written whole: drop --engine ray and --chunk-size")
        given = vector_input(args, space, args.input, kind="corpus")
        assert given is not None
        origin = given.origin.to_dict() if given.origin is not None else None
        return _write(args, out, given.vectors, given.texts.warnings, {"source": given.name, "vectors": origin})
    if args.input is None:
        raise InputError("give --input (a corpus), or --vectors")
    if args.engine == "ray":
        if args.precision != "fp32":
            raise InputError(f"--precision {args.precision} runs with --engine local only (Ray actors load fp32)")
        cpus = max(os.cpu_count() or 1, 2)  # the default, 2, runs anywhere
        if args.ray_address == "local" and args.num_cpus > cpus:  # a Ray started here starts a worker per CPU
            raise InputError(
                f"--num-cpus {args.num_cpus}: a Ray started here may use at most this machine's {cpus} CPUs"
            )
        return _run_ray(args, space, out)
    if out is None:
        raise InputError("--out is required (a .npy file) unless --engine ray")
    if args.chunk_size is not None:
        return _run_chunked(args, space, out)
    from isoscope.data import load_corpus
    from isoscope.encode.embed import encode

    corpus = load_corpus(args.input, text_column=args.text_column)
    encoder = encoder_for(args, space)
    vectors = encode(
        encoder,
        corpus.texts,
        space.pooling,
        config=embed_config(args),
        progress=progress_bar(args, "embed"),
        cache=cache_from_args(args),
        companions=True,  # the other poolings and layers of the same pass, as the app caches them: its pages read them
    )
    return _write(args, out, vectors, corpus.warnings, {"recipe": recipe_of(args, space, encoder)})
