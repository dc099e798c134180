"""``isoscope migrate apply``: map stored vectors through a saved adapter, in bounded memory, resumable.

isoscope migrate apply --adapter adapter/ --vectors old.npy --out new.npy
isoscope migrate apply --adapter adapter/ --vectors docs.parquet:emb --out docs-new.parquet
isoscope migrate apply --adapter adapter/ --shards corpus/ --out corpus-new/ --engine ray

The output keeps the input's format, row order and every other column; a killed run is resumed by running the
same command again (the chunks or shards already done are checked and kept). Progress on stderr (whole lines
where stderr is not a terminal); the result (``--json``: one object, ``isoscope.migrate.apply.ApplyReport``) on
stdout. The library call is ``isoscope.migrate.apply.apply_adapter``.
"""

from __future__ import annotations

import argparse

from isoscope.commands.common import add_json_argument, emit, progress_bar
from isoscope.data.limits import count_option
from isoscope.errors import InputError

ENGINES: tuple[str, ...] = ("local", "ray")  # isoscope.migrate.apply.ENGINES (not imported: numpy)
DEFAULT_CHUNK_ROWS = 65_536  # isoscope.migrate.apply.DEFAULT_CHUNK_ROWS (a test keeps the two equal)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--adapter",
        required=True,
        metavar="DIR",
        help="a saved adapter (isoscope migrate --out) or an exported adapter folder",
    )
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--vectors", metavar="FILE[:COLUMN]", help="a .npy, .parquet or .feather/.arrow file (its vector column)"
    )
    source.add_argument("--shards", metavar="DIR[:COLUMN]", help="a folder of Parquet shards (their vector column)")
    p.add_argument("--out", required=True, help="the file (--vectors, same format) or folder (--shards) to write")
    p.add_argument(
        "--engine",
        choices=ENGINES,
        default="local",
        help="local: this process; ray: each shard of --shards a Ray task (default: local)",
    )
    p.add_argument(
        "--ray-address",
        default="local",
        help="with --engine ray: local (start Ray here), auto or ray://HEAD:10001 (a cluster; --shards and --out "
        "on storage every node sees)",
    )
    p.add_argument(
        "--chunk-rows",
        type=count_option("chunk_rows"),
        default=DEFAULT_CHUNK_ROWS,
        help="rows recorded at once: a rerun after a kill redoes at most one chunk; memory does not depend on it "
        f"(default: {DEFAULT_CHUNK_ROWS:,})",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="replace an existing --out file that is not one in the input's format (never an input, never a folder); "
        "a shard folder written with another adapter",
    )
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    add_json_argument(p)


def run(args: argparse.Namespace) -> dict:
    from isoscope.data.vectors import parse_vectors_ref
    from isoscope.migrate.apply import apply_adapter

    ref = args.vectors if args.vectors is not None else args.shards
    source, column = parse_vectors_ref(ref)
    if args.shards is not None and not _is_dir(source):
        raise InputError(f"--shards {source}: not a folder; give a folder of Parquet files (or --vectors FILE)")
    if args.vectors is not None and _is_dir(source):
        raise InputError(f"--vectors {source} is a folder; give a file, or --shards for a folder of Parquet files")
    report = apply_adapter(
        args.adapter,
        source,
        args.out,
        column=column,
        chunk_rows=args.chunk_rows,
        engine=args.engine,
        force=args.force,
        progress=progress_bar(args, "apply", unit="row"),
        ray_address=args.ray_address,
    )
    result = report.to_dict()
    kept = f" ({report.resumed} of {report.units} kept from an earlier run)" if report.resumed else ""
    unit = "shard" if report.format == "shards" else "chunk"
    lines = [
        f"mapped {report.rows:,} vectors {report.dim_in} -> {report.dim_out} with {report.method} "
        f"({report.direction or 'direction not recorded'}) into {report.out}",
        f"{report.units} {unit}(s){kept}, {report.seconds:.1f} s on the {report.engine} engine",
    ]
    emit(args, result, lines)
    return result


def _is_dir(path: str) -> bool:
    from pathlib import Path

    return Path(path).expanduser().is_dir()
