"""``python -m isoscope sts``: STS evaluation of a pairs file (Spearman and Pearson x100), optionally calibrated.

python -m isoscope sts --pairs stsb-en-test.csv --pooling cls --calibrate flow --fit-on target --json

With vectors computed elsewhere (``isoscope.data.load_pair_vectors``): ``--vectors V`` gives each sentence's vector
by its text (V's text column), or by row ids (``--pair-ids``: the pairs' two text columns hold row numbers of V),
or V holds the sentence1 rows then the sentence2 rows; ``--vectors A --vectors-b B``: A holds sentence1's vectors
and B sentence2's. ``--model openai:NAME`` embeds the pairs through an endpoint.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from isoscope.commands.calibrate import METHOD_HELP, add_flow_arguments, calibrator_from_args
from isoscope.commands.common import (
    add_endpoint_arguments,
    add_json_argument,
    add_model_arguments,
    add_vectors_argument,
    cache_from_args,
    embed_config,
    emit,
    encoder_for,
    endpoint_cache,
    endpoint_from_args,
    epoch_bar,
    progress_bar,
    recipe_of,
    space_from_args,
)
from isoscope.errors import InputError

if TYPE_CHECKING:
    from isoscope.sources import SpaceSpec


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--pairs", required=True, help="pairs file: sentence1, sentence2, score (CSV/TSV/JSONL/Parquet)")
    p.add_argument("--calibrate", default="none", help=f"calibrate the embeddings first: {METHOD_HELP} (default: none)")
    p.add_argument(
        "--fit-on",
        default="target",
        help="fit the calibrator on 'target' (all sentences of the pairs, no labels; default) or on a corpus FILE "
        "(with --vectors: its texts' vectors, looked up in the vectors file)",
    )
    add_vectors_argument(
        p,
        "vectors computed elsewhere: FILE[:COLUMN] (.npy, .parquet, .feather, .safetensors, a datasets folder); "
        "each sentence's vector is found by its text, or by --pair-ids, or the file holds the sentence1 rows then "
        "the sentence2 rows",
    )
    p.add_argument(
        "--vectors-b",
        default=None,
        metavar="FILE[:COLUMN]",
        help="with --vectors: sentence2's vectors (--vectors: sentence1's)",
    )
    p.add_argument(
        "--pair-ids",
        action="store_true",
        help="with --vectors: the pairs' two text columns are row numbers of the file",
    )
    add_flow_arguments(p)
    add_model_arguments(p)
    add_endpoint_arguments(p)
    add_json_argument(p)


def _progress(args: argparse.Namespace, stage: str):
    return epoch_bar(args) if stage == "fit" else progress_bar(args, stage)


def _given(args: argparse.Namespace, space: SpaceSpec, pairs, corpus, calibrator) -> dict:
    """The report of a vectors file or an endpoint: their vectors of the pairs (and of the fit corpus)."""
    from isoscope.data import load_pair_vectors
    from isoscope.evaluate.sts import sts_of_vectors

    stage = lambda s: _progress(args, s)  # noqa: E731
    fit_on = None if corpus is None else (corpus.name, corpus.warnings)
    if space.kind == "vectors":
        given = load_pair_vectors(pairs, space.vectors_ref, args.vectors_b, pair_ids=args.pair_ids)
        fit = None if corpus is None else given.table.vectors_for(corpus.texts)  # (m, d), the file read once
        result = sts_of_vectors(
            given.a,
            given.b,
            pairs,
            calibrator,
            fit_vectors=fit,
            fit_on=fit_on,
            model=given.name,
            progress=stage,
            seed=args.seed,
        ).to_dict()
        result["vectors"] = given.origin.to_dict()
        result["warnings"] = [*given.warnings, *result["warnings"]]
        return result
    from isoscope.encode.remote import embed_endpoint

    endpoint, store = endpoint_from_args(args, space.model, space.base_url or None), endpoint_cache(args)
    both = embed_endpoint(endpoint, pairs.texts, progress=progress_bar(args, "embed"), cache=store)  # (2n, d)
    fit = (
        None
        if corpus is None
        else embed_endpoint(endpoint, corpus.texts, progress=progress_bar(args, "embed corpus"), cache=store)
    )
    n = len(pairs)
    return sts_of_vectors(
        both[:n],
        both[n:],
        pairs,
        calibrator,
        fit_vectors=fit,
        fit_on=fit_on,
        model=endpoint.name,
        progress=stage,
        seed=args.seed,
    ).to_dict()


def run(args: argparse.Namespace) -> dict:
    from isoscope.data import load_corpus, load_pairs
    from isoscope.evaluate.sts import check_fit_corpus, check_scored_pairs, sts_report

    space = space_from_args(args, "sts")
    if (args.vectors_b or args.pair_ids) and space.kind != "vectors":
        raise InputError("--vectors-b and --pair-ids go with --vectors")
    calibrator = calibrator_from_args(args, args.calibrate)  # bad method: fail before loading anything
    pairs = load_pairs(args.pairs)
    check_scored_pairs(pairs)
    corpus = None if args.fit_on == "target" else load_corpus(args.fit_on)
    if corpus is not None:
        check_fit_corpus(corpus)
    if space.kind != "model":
        result = _given(args, space, pairs, corpus, calibrator)
    else:
        encoder = encoder_for(args, space)
        result = sts_report(
            encoder,
            pairs,
            calibrator,
            fit_corpus=corpus,
            pooling=space.pooling,
            embed_config=embed_config(args),
            cache=cache_from_args(args),
            progress=lambda stage: _progress(args, stage),
            seed=args.seed,
        ).to_dict()
        result["recipe"] = recipe_of(args, space, encoder)
    pooling = f", pooling {result['pooling']}" if result["pooling"] else ""
    lines = [
        f"{pairs.name}: {result['n_pairs']} pairs, {result['model']}{pooling}",
        f"spearman {result['spearman']:.2f}  pearson {result['pearson']:.2f}",
    ]
    c = result["calibrated"]
    if c["method"] != "none":
        lines += [
            f"calibrated ({c['method']}, fit on {c['fit_on']}: {c['n_fit']} vectors, {c['fit_seconds']:.1f} s): "
            f"spearman {c['spearman']:.2f}  pearson {c['pearson']:.2f}",
            f"avg cosine of random pairs {c['avg_cosine_before']:.3f} -> {c['avg_cosine_after']:.3f}",
        ]
    diverged = ["the flow diverged; kept the last good epoch"] if c["method"] != "none" and c["diverged"] else []
    if result.get("recipe"):
        lines.insert(1, f"recipe: {result['recipe']}")
    emit(args, result, lines, warnings=[*diverged, *result["warnings"]])
    return result
