"""``python -m isoscope sts``: STS evaluation of a pairs file (Spearman and Pearson x100), optionally calibrated.

python -m isoscope sts --pairs stsb-en-test.csv --pooling cls --calibrate flow --fit-on target --json
"""

from __future__ import annotations

import argparse

from isoscope.commands.calibrate import METHOD_HELP, add_flow_arguments, calibrator_from_args
from isoscope.commands.common import (
    add_json_argument,
    add_model_arguments,
    cache_from_args,
    embed_config,
    emit,
    encoder_from_args,
    epoch_bar,
    progress_bar,
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--pairs", required=True, help="pairs file: sentence1, sentence2, score (CSV/TSV/JSONL/Parquet)")
    p.add_argument("--calibrate", default="none", help=f"calibrate the embeddings first: {METHOD_HELP} (default: none)")
    p.add_argument(
        "--fit-on",
        default="target",
        help="fit the calibrator on 'target' (all sentences of the pairs, no labels; default) or on a corpus FILE",
    )
    add_flow_arguments(p)
    add_model_arguments(p)
    add_json_argument(p)


def _progress(args: argparse.Namespace, stage: str):
    return epoch_bar(args) if stage == "fit" else progress_bar(args, stage)


def run(args: argparse.Namespace) -> dict:
    from isoscope.data import load_corpus, load_pairs
    from isoscope.evaluate.sts import check_fit_corpus, check_scored_pairs, sts_report

    calibrator = calibrator_from_args(args, args.calibrate)  # bad method: fail before loading anything
    pairs = load_pairs(args.pairs)
    check_scored_pairs(pairs)
    corpus = None if args.fit_on == "target" else load_corpus(args.fit_on)
    if corpus is not None:
        check_fit_corpus(corpus)
    encoder = encoder_from_args(args)
    result = sts_report(
        encoder,
        pairs,
        calibrator,
        corpus,
        args.pooling,
        embed_config(args),
        cache_from_args(args),
        lambda stage: _progress(args, stage),
        args.seed,
    )
    lines = [
        f"{pairs.name}: {result['n_pairs']} pairs, {encoder.name}, pooling {args.pooling}",
        f"spearman {result['spearman']:.2f}  pearson {result['pearson']:.2f}",
    ]
    c = result["calibrated"]
    if c["method"] != "none":
        lines += [
            f"calibrated ({c['method']}, fit on {c['fit_on']}: {c['n_fit']} vectors, {c['fit_seconds']:.1f} s): "
            f"spearman {c['spearman']:.2f}  pearson {c['pearson']:.2f}",
            f"avg cosine of random pairs {c['avg_cosine_before']:.3f} -> {c['avg_cosine_after']:.3f}",
        ]
        if c["diverged"]:
            lines.append("warning: the flow diverged; kept the last good epoch")
    lines += result["warnings"]
    emit(args, result, lines)
    return result
