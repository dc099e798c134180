"""``python -m core embed``: embed a corpus to a .npy file."""

from __future__ import annotations

import argparse
from pathlib import Path

from core.cache import atomic_save_npy
from core.commands.common import (
    add_json_argument,
    add_model_arguments,
    cache_from_args,
    embed_config,
    emit,
    encoder_from_args,
    progress_bar,
)
from core.data import load_corpus
from core.embed import encode
from core.errors import InputError

NAME = "embed"
HELP = "embed a corpus (one text per line, or a table with a text column) to a .npy file"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--input", required=True, help="corpus file: .txt, .csv, .tsv, .jsonl or .parquet")
    p.add_argument("--text-column", default=None, help="column holding the texts (default: text)")
    p.add_argument("--out", required=True, help="output .npy file, float32 (n, d)")
    add_model_arguments(p)
    add_json_argument(p)


def run(args: argparse.Namespace) -> dict:
    out = Path(args.out)
    if out.suffix != ".npy":
        raise InputError(f"--out must end in .npy, got '{out.name}'")
    corpus = load_corpus(args.input, text_column=args.text_column)
    encoder = encoder_from_args(args)
    vectors = encode(
        encoder, corpus.texts, args.pooling, embed_config(args), progress_bar(args, "embed"), cache_from_args(args)
    )
    atomic_save_npy(out, vectors)
    result = {"out": str(out), "n": int(vectors.shape[0]), "dim": int(vectors.shape[1]), "warnings": corpus.warnings}
    emit(args, result, [f"wrote {vectors.shape[0]} x {vectors.shape[1]} vectors to {out}", *corpus.warnings])
    return result
