"""``python -m isoscope atlas``: the whole-corpus atlas (embeddings, kNN graph, 2-D layout, density, clusters),
raw and calibrated, into a folder; rerun to resume (finished stages are skipped)."""

from __future__ import annotations

import argparse
from pathlib import Path

from isoscope.commands.common import PRECISION_HELP, add_json_argument, emit, encoder_from_args
from isoscope.encode.precision import PRECISIONS

LAYOUTS: tuple[str, ...] = ("umap", "pca")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--input", required=True, help="corpus file: .txt, .csv, .tsv, .jsonl or .parquet")
    p.add_argument("--text-column", default=None, help="column holding the texts (default: text)")
    p.add_argument("--out", required=True, help="folder for the atlas (created; rerun with the same folder to resume)")
    p.add_argument(
        "--model", default="", help="model directory or Hugging Face id (default: embedded all-MiniLM-L6-v2)"
    )
    p.add_argument("--precision", choices=PRECISIONS, default="fp32", help=PRECISION_HELP)
    p.add_argument("--pooling", default="mean", help="pooling mode (default: mean)")
    p.add_argument("--max-length", type=int, default=128, help="max tokens per text (default: 128)")
    p.add_argument("--batch-size", type=int, default=64, help="texts per forward pass at least (default: 64)")
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
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    add_json_argument(p)


def _progress(args: argparse.Namespace):
    from isoscope.commands.common import progress_bar

    bars: dict[str, object] = {}

    def update(stage: str, done: int, total: int) -> None:
        if stage not in bars:
            bars[stage] = progress_bar(args, stage, unit="step")
        bars[stage](done, total)  # type: ignore[operator]

    return update


def run(args: argparse.Namespace) -> dict:
    from isoscope.atlas.pipeline import MAX_ATLAS_ROWS, AtlasConfig, build_atlas
    from isoscope.data import load_corpus
    from isoscope.errors import InputError

    if args.max_length < 2 or args.batch_size < 1:
        raise InputError("--max-length must be >= 2 and --batch-size >= 1")
    config = AtlasConfig(
        pooling=args.pooling,
        max_length=args.max_length,
        batch_size=args.batch_size,
        k=args.k,
        layout=args.layout,
        calibrate=args.calibrate,
        fit_rows=args.fit_rows,
        seed=args.seed,
        landmarks=args.landmarks,
    )
    config.validate()
    if config.calibrate != "none":
        from isoscope.calibrate import make_calibrator

        make_calibrator(config.calibrate)  # a bad name fails before any embedding
    corpus = load_corpus(args.input, text_column=args.text_column, max_rows=MAX_ATLAS_ROWS)
    run_ = build_atlas(encoder_from_args(args), corpus.texts, Path(args.out), config, corpus.meta, _progress(args))
    warnings = [*corpus.warnings, *run_.warnings]
    result = {
        "out": str(run_.path),
        "n": run_.n,
        "computed": run_.computed,
        "skipped": run_.skipped,
        "seconds": run_.seconds,
        "warnings": warnings,
    }
    done = (
        f"atlas of {run_.n:,} texts in {run_.path} ({len(run_.computed)} stages computed, {len(run_.skipped)} reused)"
    )
    emit(args, result, [done, *warnings])
    return result
