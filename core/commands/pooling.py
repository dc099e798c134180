"""``python -m isoscope pooling``: STS Spearman of every pooling and layer, raw and calibrated, and the best one."""

from __future__ import annotations

import argparse

from isoscope.calibrate.methods import methods_help
from isoscope.commands.common import (
    add_json_argument,
    add_model_arguments,
    cache_from_args,
    embed_config,
    emit,
    encoder_for,
    progress_bar,
    space_from_args,
)

# isoscope --help's line for this command, read from the file (isoscope.cli imports only the chosen command)
COMMAND = {"order": 50, "help": "STS Spearman for every pooling mode and every layer, raw and calibrated"}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--pairs", required=True, help="pairs file: sentence1, sentence2, score (CSV/TSV/JSONL/Parquet)")
    p.add_argument(
        "--calibrate",
        action="append",
        default=None,
        metavar="METHOD",
        help=f"also score calibrated vectors, fitted on the pairs' sentences: {methods_help()} (repeatable)",
    )
    add_model_arguments(p, pooling=False)
    add_json_argument(p)


def _fmt(value: object) -> str:
    return "    -" if value is None else f"{value:6.2f}" if isinstance(value, float) else str(value)


def run(args: argparse.Namespace) -> dict:
    from isoscope.anatomy.poolings import check_calibrations, check_pairs, explore_poolings
    from isoscope.data import load_pairs

    pairs = load_pairs(args.pairs)
    check_pairs(pairs)
    check_calibrations(args.calibrate)  # before loading the model
    encoder = encoder_for(args, space_from_args(args, "pooling"))
    report = explore_poolings(
        encoder,
        pairs,
        calibrations=args.calibrate,
        config=embed_config(args),
        progress=progress_bar(args, "embed"),
        cache=cache_from_args(args),
    )
    rows = report.records()
    result = {
        "model": encoder.name,
        "n_pairs": report.n_pairs,
        "n_positive": report.n_positive,
        "n_sentences": report.n_sentences,
        "table": rows,
        "best": report.best,
        "warnings": [*pairs.warnings, *report.warnings],
    }
    header = f"{'pooling':<16}{'layer':>6}  {'calibration':<14}{'spearman':>9}{'pearson':>9}{'align':>8}{'unif':>8}"
    lines = [f"{pairs.name}: {report.n_pairs} pairs ({report.n_positive} positive), {encoder.name}", header]
    for r in rows:
        lines.append(
            f"{r['pooling']:<16}{_fmt(r['layer']):>6}  {r['calibration']:<14}{_fmt(r['spearman']):>9}"
            f"{_fmt(r['pearson']):>9}{_fmt(r['alignment']):>8}{_fmt(r['uniformity']):>8}"
        )
    best = report.best
    if best:
        lines.append(f"best: {best['pooling']} ({best['calibration']}) spearman {best['spearman']:.2f}")
    emit(args, result, lines)
    return result
