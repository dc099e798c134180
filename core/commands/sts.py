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
    encoder_loader,
    epoch_bar,
    progress_bar,
    space_from_args,
    space_sources,
)
from isoscope.errors import InputError

# isoscope --help's line for this command, read from the file (isoscope.cli imports only the chosen command)
COMMAND = {"order": 20, "help": "Spearman/Pearson (x100) of cosine similarity against gold scores on a pairs file"}

if TYPE_CHECKING:
    from isoscope.data import Pairs
    from isoscope.sources import SpaceSpec, SpaceVectors


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


def _pair_vectors(args: argparse.Namespace, space: SpaceSpec, pairs: Pairs, build: dict) -> SpaceVectors:
    """Both sides' vectors in the space, the sentence1 rows then the sentence2 rows (``Pairs.texts`` order):
    ``space_vectors`` of the pairs' texts, or the rows ``--vectors-b`` / ``--pair-ids`` name
    (``isoscope.data.load_pair_vectors``; the fit corpus is then looked up in the first file). ``build``:
    ``space_vectors``' options."""
    from isoscope.sources import SpaceVectors, space_vectors

    if not (args.vectors_b or args.pair_ids):
        return space_vectors(space, pairs.texts, progress=progress_bar(args, "embed"), **build)
    import numpy as np

    from isoscope.data import load_pair_vectors

    given = load_pair_vectors(pairs, space.vectors_ref, args.vectors_b, pair_ids=args.pair_ids)
    build["readers"].tables = lambda _spec: given.table
    both = np.concatenate([given.a, given.b])  # (2n, d)
    return SpaceVectors(space, given.name, both, both, warnings=list(given.warnings), origin=given.origin)


def _build_options(args: argparse.Namespace) -> dict:
    """``space_vectors``' options from the command's: its endpoints and their cache, its model loader (``--device``,
    ``--precision``...), ``--max-length`` and the prompt, the embedding cache."""
    return {
        "readers": space_sources(args),
        "loader": encoder_loader(args),
        "config": embed_config(args),
        "cache": cache_from_args(args),
    }


def run(args: argparse.Namespace) -> dict:
    from isoscope.data import load_corpus, load_pairs
    from isoscope.evaluate.sts import check_fit_corpus, check_scored_pairs, sts_report
    from isoscope.sources import space_vectors

    space = space_from_args(args, "sts")
    if (args.vectors_b or args.pair_ids) and not space.vectors:
        raise InputError("--vectors-b and --pair-ids go with --vectors")
    calibrator = calibrator_from_args(args, args.calibrate)  # bad method: fail before loading anything
    pairs = load_pairs(args.pairs)
    check_scored_pairs(pairs)
    corpus = None if args.fit_on == "target" else load_corpus(args.fit_on)
    if corpus is not None:
        check_fit_corpus(corpus)
    build = _build_options(args)
    both = _pair_vectors(args, space, pairs, build)
    fit = None
    if corpus is not None:
        bar = progress_bar(args, "embed corpus")
        fit = space_vectors(space, corpus.texts, progress=bar, **build).raw  # (m, d)
    result = sts_report(
        both,
        pairs,
        calibrator,
        fit_vectors=fit,
        fit_on=None if corpus is None else (corpus.name, corpus.warnings),
        progress=lambda stage: _progress(args, stage),
        seed=args.seed,
    ).to_dict()
    if both.origin is not None:
        result["vectors"] = both.origin.to_dict()
    result["warnings"] = [*both.warnings, *result["warnings"]]
    if both.recipe:
        result["recipe"] = both.recipe
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
