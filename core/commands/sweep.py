"""``python -m isoscope sweep``: geometry and STS score of a corpus as its vectors shrink (precision and dimensions).

python -m isoscope sweep --input corpus.csv --pairs ../shared/data/stsb/stsb-en-test.csv --dims 32,64,128,256 --json

Rows: fp32, int8-model, int8-vectors, binary, truncate:K and pca:K; columns: IsoScore, average cosine, effective
rank, neighbour overlap@k with the fp32 space, STS Spearman (x100, with --pairs) and bytes per vector. With
``--vectors FILE[:COLUMN]`` (or ``--model openai:NAME``) the sweep starts from those vectors (no int8-model row:
there is no model to quantise); the pairs' vectors are looked up in the file by text.
"""

from __future__ import annotations

import argparse

from isoscope.commands.common import (
    add_endpoint_arguments,
    add_json_argument,
    add_model_arguments,
    add_vectors_argument,
    cache_from_args,
    embed_config,
    emit,
    encoder_for,
    progress_bar,
    space_from_args,
    space_sources,
    vector_input,
)
from isoscope.errors import InputError

# isoscope --help's line for this command, read from the file (isoscope.cli imports only the chosen command)
COMMAND = {"order": 100, "help": "geometry and STS score as vectors shrink: fp32, int8, binary, first-k and PCA-k"}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--input", default=None, help="corpus file: .txt, .csv, .tsv, .jsonl or .parquet (optional with --vectors)"
    )
    p.add_argument("--text-column", default=None, help="column holding the texts (default: text)")
    add_vectors_argument(p)
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
    add_endpoint_arguments(p)
    add_json_argument(p)


def _lines(result: dict) -> list[str]:
    head = f"{'variant':14s} {'dims':>5s} {'bytes':>7s} {'IsoScore':>8s} {'avg cos':>8s} {'eff rank':>8s}"
    head += f" {'overlap@' + str(result['k']):>10s} {'Spearman':>8s}"
    pooling = f", pooling {result['pooling']}" if result["pooling"] else ""
    lines = [f"{result['corpus']}: {result['n_texts']} texts, {result['model']}{pooling}", head]
    for r in result["rows"]:
        lines.append(
            f"{r['variant']:14s} {r['dims']:5d} {r['bytes_per_vector']:7.0f} {r['isoscore']:8.3f} "
            f"{r['avg_cosine']:8.3f} {r['effective_rank']:8.1f} {r['overlap_at_k']:10.3f} {r['spearman']:8.2f}"
        )
    return lines


def _given_pairs(args: argparse.Namespace, space, pairs):
    """SweepPairs of --vectors (looked up by text) or of the endpoint (``isoscope.sources.space_vectors``)."""
    import numpy as np

    from isoscope.evaluate.sweep import SweepPairs
    from isoscope.sources import space_vectors

    if pairs is None:
        return None
    gold = np.asarray(pairs.scores, np.float64)
    both = space_vectors(space, pairs.texts, readers=space_sources(args), progress=progress_bar(args, "embed pairs"))
    return SweepPairs(both.raw[: len(pairs)], both.raw[len(pairs) :], gold)


def run(args: argparse.Namespace) -> dict:
    from isoscope.data import load_corpus, load_pairs
    from isoscope.evaluate.sweep import SweepConfig, encode_for_sweep, parse_dims, run_sweep

    if args.k < 1:
        raise InputError("--k must be at least 1")
    space = space_from_args(args, "sweep")
    pairs = load_pairs(args.pairs) if args.pairs else None
    if pairs is not None and pairs.scores is None:
        raise InputError(f"{pairs.name}: no score column; the Spearman column needs gold scores")
    given = vector_input(args, space, args.input, kind="corpus")
    if given is not None:
        if len(given) < 3:
            raise InputError(f"{given.name}: the sweep needs at least 3 texts, got {len(given)}")
        dims = parse_dims(args.dims, given.vectors.shape[1])
        table = run_sweep(
            given.vectors,
            None,
            _given_pairs(args, space, pairs),
            config=SweepConfig(dims=dims, k=args.k),
            progress=progress_bar(args, "sweep", unit="variant"),
        )
        return _emit(args, given.texts.name or given.name, given.name, None, given.texts.warnings, pairs, table)
    if args.input is None:
        raise InputError("give --input (a corpus), or --vectors")
    corpus = load_corpus(args.input, text_column=args.text_column)
    if len(corpus) < 3:
        raise InputError(f"{corpus.name}: the sweep needs at least 3 texts, got {len(corpus)}")
    from isoscope.encode.pooling import resolve_pooling

    encoder = encoder_for(args, space)
    pooling = resolve_pooling(space.pooling, encoder)
    dims = parse_dims(args.dims, encoder.hidden_size)  # bad dimensions: fail before encoding
    on_cpu = encoder.device == "cpu" and encoder.dtype == "float32"
    vectors = encode_for_sweep(
        encoder,
        corpus.texts,
        pairs,
        pooling=pooling,
        config=embed_config(args),
        cache=cache_from_args(args),
        progress=progress_bar(args, "embed"),
        with_int8=on_cpu,  # the int8 model is built from the float32 model on the CPU
    )
    result_ = run_sweep(
        vectors.corpus_fp32,
        vectors.corpus_int8,
        vectors.pairs,
        config=SweepConfig(dims=dims, k=args.k),
        progress=progress_bar(args, "sweep", unit="variant"),
    )
    left_out = [] if on_cpu else ["the int8-model row is left out: int8 is built from the float32 model on the CPU"]
    return _emit(args, corpus.name, encoder.name, pooling.name, corpus.warnings + left_out, pairs, result_)


def _emit(args: argparse.Namespace, corpus: str, model: str, pooling, warnings: list[str], pairs, result_) -> dict:
    warnings = warnings + (pairs.warnings if pairs is not None else []) + result_.warnings
    result = {
        "corpus": corpus,
        "pairs": None if pairs is None else pairs.name,
        "model": model,
        "pooling": pooling,
        "n_texts": result_.n_texts,
        "n_pairs": result_.n_pairs,
        "k": result_.k,
        "dims": list(result_.dims),
        "rows": result_.table.to_dict(orient="records"),
        "warnings": warnings,
    }
    emit(args, result, _lines(result))
    return result
