"""``python -m isoscope report``: a space measured and written as one self-contained HTML file.

The space is the texts of ``--input`` (a corpus or a pairs file; by default the sentences of ``--pairs``) through
``--model`` and ``--pooling``, or the vectors of ``--vectors FILE[:COLUMN]`` computed elsewhere (their texts from
the file's text column or from ``--input``, a texts file); the report compares it with its ``--vs`` calibration (fitted on the same texts,
no labels) and scores STS on ``--pairs`` when they have gold scores (``isoscope.space.report``).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from typing import TYPE_CHECKING

from isoscope.calibrate.methods import methods_help
from isoscope.commands.common import (
    add_force_argument,
    add_json_argument,
    add_model_arguments,
    emit,
    output_from_args,
    space_from_args,
)
from isoscope.data.inputs import INPUT_KINDS
from isoscope.errors import InputError

# isoscope --help's line for this command, read from the file (isoscope.cli imports only the chosen command)
COMMAND = {
    "order": 140,
    "help": "write one self-contained HTML report of a space: anisotropy, layers, hubness, what whitening changes, a map",
}

if TYPE_CHECKING:
    from isoscope.sources import SpaceSpec

MAP_CHOICES: tuple[str, ...] = ("auto", "pca", "umap", "tsne")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--input", default=None, help="texts: a corpus or a pairs file (default: the sentences of --pairs)")
    p.add_argument(
        "--vectors",
        default=None,
        metavar="FILE[:COLUMN]",
        help="vectors computed elsewhere instead of --model (.npy, .parquet, .feather/.arrow, .safetensors or a "
        "datasets folder); --input is then their texts file",
    )
    p.add_argument("--kind", choices=INPUT_KINDS, default="auto", help="how to read --input (default: auto)")
    p.add_argument("--text-column", default=None, help="corpus: column holding the texts (default: text)")
    p.add_argument("--pairs", default=None, help="scored pairs (sentence1, sentence2, score): STS raw and calibrated")
    p.add_argument(
        "--retrieval",
        default=None,
        metavar="TASK",
        help="a retrieval task (a BEIR folder or zip, or a table of query, document[, grade]): a section scoring raw, "
        "centre, --vs and csls on it (the model embeds its queries and documents)",
    )
    p.add_argument(
        "--vs",
        default="whitening",
        metavar="METHOD",
        help=f"the calibration to compare with: {methods_help()} (default: whitening)",
    )
    p.add_argument("--out", required=True, help="the HTML file to write")
    p.add_argument("--title", default=None, help="the report's title (default: from the space's name)")
    p.add_argument("--k", type=int, default=10, help="neighbours per text for overlap and hubness (default: 10)")
    p.add_argument(
        "--map", choices=MAP_CHOICES, default="auto", help="map projection (default: auto: UMAP up to 20k points)"
    )
    p.add_argument("--map-points", type=int, default=10_000, help="texts on the map, seeded sample (default: 10000)")
    p.add_argument("--no-layers", action="store_true", help="leave out the per-layer metrics (one forward pass less)")
    p.add_argument(
        "--keep-duplicates", action="store_true", help="keep repeated texts (default: each distinct text once)"
    )
    p.add_argument("--seed", type=int, default=0, help="seed of samples and maps (default: 0)")
    add_model_arguments(p)
    add_force_argument(p)
    add_json_argument(p)


def _check(args: argparse.Namespace, source: SpaceSpec) -> None:
    from isoscope.calibrate import make_calibrator

    if args.input is None and args.pairs is None and not source.vectors:
        raise InputError("give the texts with --input (a corpus or a pairs file) or --pairs, or --vectors")
    if args.k < 1:
        raise InputError(f"--k must be >= 1; got {args.k}")
    if args.map_points < 10:
        raise InputError(f"--map-points must be >= 10; got {args.map_points}")
    make_calibrator(args.vs)  # InputError listing the methods


def run(args: argparse.Namespace) -> dict:

    from isoscope.data import load_pairs
    from isoscope.space.report import write
    from isoscope.space.report.build import build_space_report
    from isoscope.space.report.render import render

    source = space_from_args(args, "report")
    _check(args, source)
    from isoscope.data.outputs import REPORT

    out = output_from_args(args, args.out, REPORT)  # before any work: no input, nothing of another kind
    pairs = load_pairs(args.pairs) if args.pairs else None
    if pairs is not None and pairs.scores is None:
        raise InputError(f"{pairs.name}: no score column; --pairs needs gold scores")
    space = _vectors_space(args, source) if source.vectors else _model_space(args, source, pairs)
    if len(space) < args.k + 1:
        what = "vectors" if source.vectors else "distinct texts"
        raise InputError(f"--k {args.k} needs at least {args.k + 1} {what}, got {len(space)}")
    command = "isoscope " + " ".join(shlex.quote(a) for a in (getattr(args, "argv", None) or sys.argv[1:]))
    report = build_space_report(
        space,
        vs=args.vs,
        pairs=pairs,
        retrieval=args.retrieval,
        k=args.k,
        layers=not args.no_layers and space.embedding is not None,
        map=args.map,
        map_points=args.map_points,
        seed=args.seed,
        command=command,
        title=args.title,
        progress=not args.quiet,
    )
    path = write(render(report), out, force=args.force)
    result = {
        "out": str(path),
        "bytes": path.stat().st_size,
        "n_texts": len(space),
        "title": report.title,
        "verdict": report.verdict,
        **report.data,
        "warnings": report.warnings,
    }
    emit(args, result, [*report.verdict, f"wrote {path} ({path.stat().st_size / 1e6:.1f} MB)"])
    return result


def _model_space(args: argparse.Namespace, source: SpaceSpec, pairs):
    from pathlib import Path

    from isoscope.commands.common import cache_from_args, encoder_for
    from isoscope.data import load_input
    from isoscope.space import embed

    read = load_input(args.input, args.kind, args.text_column) if args.input else None
    texts, meta = _distinct(read, read.texts if read is not None else pairs.texts, args.keep_duplicates)
    space = embed(
        texts,
        encoder_for(args, source),
        source.pooling,
        max_length=args.max_length,
        batch_size=args.batch_size,
        cache=cache_from_args(args) or False,
        progress=not args.quiet,
        metadata=meta,
        name=Path(args.input or args.pairs).name,
    )
    if read is not None:
        space.warnings += read.warnings
    return space


def _vectors_space(args: argparse.Namespace, source: SpaceSpec):
    """The space of ``--vectors`` (the model options do not apply; ``--input`` is a texts file, one per vector)."""
    from isoscope.space import Space

    return Space.from_file(
        source.vectors, column=source.column, text_column=args.text_column, texts=args.input, cache=False
    )


def _distinct(read, texts: list[str], keep_duplicates: bool):
    """(the texts, their metadata rows or None): each distinct text once (its first row) unless kept."""
    meta = getattr(read, "meta", None) if read is not None else None
    if keep_duplicates:
        return texts, meta
    first: dict[str, int] = {}
    for i, t in enumerate(texts):
        first.setdefault(t, i)
    rows = list(first.values())
    return [texts[i] for i in rows], (None if meta is None else meta.iloc[rows].reset_index(drop=True))
