"""``python -m isoscope sweep``: geometry and STS score of a corpus as its vectors shrink (precision and dimensions).

python -m isoscope sweep --input corpus.csv --pairs ../shared/data/stsb/stsb-en-test.csv --dims 32,64,128,256 --json

Rows: fp32, int8-model, int8-vectors, binary, truncate:K and pca:K; columns: IsoScore, average cosine, effective
rank, neighbour overlap@k with the fp32 space, STS Spearman (x100, with --pairs) and bytes per vector.
"""

from __future__ import annotations

import argparse

from isoscope.commands.common import (
    add_json_argument,
    add_model_arguments,
    cache_from_args,
    embed_config,
    emit,
    encoder_from_args,
    progress_bar,
)
from isoscope.errors import InputError


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--input", required=True, help="corpus file: .txt, .csv, .tsv, .jsonl or .parquet")
    p.add_argument("--text-column", default=None, help="column holding the texts (default: text)")
    p.add_argument(
        "--pairs", default=None, help="scored pairs file (sentence1, sentence2, score) for the STS Spearman column"
    )
    p.add_argument(
        "--dims", default="", help="dimensions for truncate:K and pca:K, e.g. 32,64,128 (default: 32, 64, ... up to d)"
    )
    p.add_argument("--k", type=int, default=10, help="neighbours for the overlap with the fp32 space (default: 10)")
    add_model_arguments(
        p, precision=False, fp32_note="no --precision: the sweep encodes with the fp32 model and its int8 copy"
    )
    add_json_argument(p)


def _lines(result: dict) -> list[str]:
    head = f"{'variant':14s} {'dims':>5s} {'bytes':>7s} {'IsoScore':>8s} {'avg cos':>8s} {'eff rank':>8s}"
    head += f" {'overlap@' + str(result['k']):>10s} {'Spearman':>8s}"
    lines = [f"{result['corpus']}: {result['n_texts']} texts, {result['model']}, pooling {result['pooling']}", head]
    for r in result["rows"]:
        lines.append(
            f"{r['variant']:14s} {r['dims']:5d} {r['bytes_per_vector']:7.0f} {r['isoscore']:8.3f} "
            f"{r['avg_cosine']:8.3f} {r['effective_rank']:8.1f} {r['overlap_at_k']:10.3f} {r['spearman']:8.2f}"
        )
    return lines + result["warnings"]


def run(args: argparse.Namespace) -> dict:
    from isoscope.data import load_corpus, load_pairs
    from isoscope.geometry.sweep import SweepConfig, encode_for_sweep, parse_dims, run_sweep

    corpus = load_corpus(args.input, text_column=args.text_column)
    if len(corpus) < 3:
        raise InputError(f"{corpus.name}: the sweep needs at least 3 texts, got {len(corpus)}")
    if args.k < 1:
        raise InputError("--k must be at least 1")
    pairs = load_pairs(args.pairs) if args.pairs else None
    if pairs is not None and pairs.scores is None:
        raise InputError(f"{pairs.name}: no score column; the Spearman column needs gold scores")
    encoder = encoder_from_args(args)
    dims = parse_dims(args.dims, encoder.hidden_size)  # bad dimensions: fail before encoding
    vectors = encode_for_sweep(
        encoder,
        corpus.texts,
        pairs,
        args.pooling,
        embed_config(args),
        cache_from_args(args),
        progress_bar(args, "embed"),
    )
    result_ = run_sweep(
        vectors.corpus_fp32,
        vectors.corpus_int8,
        vectors.pairs,
        SweepConfig(dims=dims, k=args.k),
        progress_bar(args, "sweep", unit="variant"),
    )
    warnings = corpus.warnings + (pairs.warnings if pairs is not None else []) + result_.warnings
    result = {
        "corpus": corpus.name,
        "pairs": None if pairs is None else pairs.name,
        "model": encoder.name,
        "pooling": args.pooling,
        "n_texts": result_.n_texts,
        "n_pairs": result_.n_pairs,
        "k": result_.k,
        "dims": list(result_.dims),
        "rows": result_.table.to_dict(orient="records"),
        "warnings": warnings,
    }
    emit(args, result, _lines(result))
    return result
