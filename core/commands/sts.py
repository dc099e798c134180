"""``python -m core sts``: STS evaluation of a pairs file (Spearman and Pearson x100)."""

from __future__ import annotations

import argparse

from core.commands.common import (
    add_json_argument,
    add_model_arguments,
    cache_from_args,
    embed_config,
    emit,
    encoder_from_args,
    progress_bar,
)
from core.data import load_pairs
from core.embed import encode
from core.errors import InputError
from core.evaluate import sts_evaluate

NAME = "sts"
HELP = "Spearman/Pearson (x100) of cosine similarity against gold scores on a pairs file"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--pairs", required=True, help="pairs file: sentence1, sentence2, score (CSV/TSV/JSONL/Parquet)")
    add_model_arguments(p)
    add_json_argument(p)


def run(args: argparse.Namespace) -> dict:
    pairs = load_pairs(args.pairs)
    if pairs.scores is None:
        raise InputError(f"{pairs.name}: no score column; sts needs gold scores (third column or 'score')")
    encoder = encoder_from_args(args)
    vectors = encode(
        encoder, pairs.texts, args.pooling, embed_config(args), progress_bar(args, "embed"), cache_from_args(args)
    )
    n = len(pairs)
    ev = sts_evaluate(vectors[:n], vectors[n:], pairs.scores)
    result = {
        "spearman": ev["spearman"],
        "pearson": ev["pearson"],
        "n_pairs": n,
        "model": encoder.name,
        "pooling": args.pooling,
        "warnings": pairs.warnings,
    }
    lines = [
        f"{pairs.name}: {n} pairs, {encoder.name}, pooling {args.pooling}",
        f"spearman {ev['spearman']:.2f}  pearson {ev['pearson']:.2f}",
        *pairs.warnings,
    ]
    emit(args, result, lines)
    return result
