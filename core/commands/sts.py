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
from isoscope.errors import InputError


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


def run(args: argparse.Namespace) -> dict:
    import numpy as np

    from isoscope.data import load_corpus, load_pairs
    from isoscope.encode.embed import encode
    from isoscope.evaluate.sts import calibrated_sts

    calibrator = calibrator_from_args(args, args.calibrate)  # bad method: fail before loading anything
    pairs = load_pairs(args.pairs)
    if pairs.scores is None:
        raise InputError(f"{pairs.name}: no score column; sts needs gold scores (third column or 'score')")
    if len(pairs) < 3 or np.ptp(pairs.scores) == 0:  # a correlation would be undefined (null)
        raise InputError(f"{pairs.name}: a correlation needs at least 3 pairs whose scores differ, got {len(pairs)}")
    corpus = None if args.fit_on == "target" else load_corpus(args.fit_on)
    if corpus is not None and len(corpus) < 2:
        raise InputError(f"{corpus.name}: need at least 2 texts to fit a calibrator")
    encoder = encoder_from_args(args)
    config, cache = embed_config(args), cache_from_args(args)
    vectors = encode(encoder, pairs.texts, args.pooling, config, progress_bar(args, "embed"), cache)
    n = len(pairs)
    fit_vectors: np.ndarray | None = None
    if corpus is not None:
        fit_vectors = encode(encoder, corpus.texts, args.pooling, config, progress_bar(args, "embed corpus"), cache)
    cal = calibrated_sts(
        vectors[:n], vectors[n:], pairs.scores, calibrator, fit_vectors, progress=epoch_bar(args), seed=args.seed
    )
    warnings = pairs.warnings + (corpus.warnings if corpus is not None else []) + cal["warnings"]
    result = {
        "spearman": cal["raw_spearman"],
        "pearson": cal["raw_pearson"],
        "n_pairs": n,
        "model": encoder.name,
        "pooling": args.pooling,
        "calibrated": {
            "method": cal["method"],
            "spearman": cal["spearman"],
            "pearson": cal["pearson"],
            "fit_seconds": cal["fit_seconds"],
            "bits_per_dim": cal["bits_per_dim"],
            "avg_cosine_before": cal["avg_cosine_before"],
            "avg_cosine_after": cal["avg_cosine_after"],
            "fit_on": "target" if corpus is None else corpus.name,
            "n_fit": cal["n_fit"],
            "diverged": cal["diverged"],
        },
        "warnings": warnings,
    }
    lines = [
        f"{pairs.name}: {n} pairs, {encoder.name}, pooling {args.pooling}",
        f"spearman {cal['raw_spearman']:.2f}  pearson {cal['raw_pearson']:.2f}",
    ]
    if cal["method"] != "none":
        c = result["calibrated"]
        lines += [
            f"calibrated ({c['method']}, fit on {c['fit_on']}: {c['n_fit']} vectors, {c['fit_seconds']:.1f} s): "
            f"spearman {c['spearman']:.2f}  pearson {c['pearson']:.2f}",
            f"avg cosine of random pairs {c['avg_cosine_before']:.3f} -> {c['avg_cosine_after']:.3f}",
        ]
        if c["diverged"]:
            lines.append("warning: the flow diverged; kept the last good epoch")
    lines += warnings
    emit(args, result, lines)
    return result
