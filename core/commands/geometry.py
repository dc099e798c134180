"""``python -m isoscope geometry``: isotropy metrics, word-frequency bias and lexical-overlap bias of a space.

Parses the options, reads the input (``isoscope.data.load_input``: a corpus or a pairs file, auto-detected)
and prints ``isoscope.geometry.report.analyse_geometry``'s report (its ``to_dict()`` with ``--json``). With
``--vectors FILE[:COLUMN]`` (or ``--model openai:NAME``) the vectors come from the file (or the endpoint) and
``analyse_geometry`` measures them: the same report without the per-layer metrics and the frequency table.
"""

from __future__ import annotations

import argparse
import math
from typing import TYPE_CHECKING, Any

from isoscope.calibrate.methods import methods_help
from isoscope.commands.common import (
    add_endpoint_arguments,
    add_json_argument,
    add_model_arguments,
    add_vectors_argument,
    cache_from_args,
    embed_config,
    emit,
    encoder_for,
    epoch_bar,
    option_name,
    progress_bar,
    recipe_of,
    space_from_args,
    vector_input,
)
from isoscope.data.inputs import INPUT_KINDS
from isoscope.errors import InputError
from isoscope.geometry.options import CONTEXTUAL_MODES, EDIT_LEVELS, FREQUENCY_CHOICES

# isoscope --help's line for this command, read from the file (isoscope.cli imports only the chosen command)
COMMAND = {
    "order": 70,
    "help": "isotropy metrics, word-frequency bias and lexical-overlap bias of a corpus or pairs file (raw and calibrated)",
}

if TYPE_CHECKING:
    from isoscope.geometry.report import GeometryConfig
    from isoscope.sources import SpaceSpec

METRIC_KEYS: tuple[str, ...] = ("avg_cosine", "isoscore", "partition_isotropy", "effective_rank")  # printed


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--input", default=None, help="corpus (.txt/.csv/.tsv/.jsonl/.parquet) or pairs file (optional with --vectors)"
    )
    p.add_argument(
        "--kind",
        choices=INPUT_KINDS,
        default="auto",
        help="auto: a file with scores or sentence1/sentence2 columns is pairs, anything else a corpus (default: auto)",
    )
    p.add_argument(
        "--text-column", default=None, help="column holding the texts: of --input, or of --vectors without --input"
    )
    add_vectors_argument(p)
    p.add_argument(
        "--calibrate",
        default="none",
        metavar="METHOD",
        help=f"{methods_help()}; fitted on the input's sentence "
        "vectors (and, for the frequency table, on the token vectors) (default: none)",
    )
    p.add_argument("--layers", action="store_true", help="also report raw metrics of mean-pooled layer:0..L")
    p.add_argument(
        "--frequency",
        choices=FREQUENCY_CHOICES,
        default=None,
        help="token spaces for the frequency table: static input embeddings, contextual vectors, both, "
        "or none (default: both; none for --vectors and endpoints, which have no token vectors)",
    )
    p.add_argument(
        "--frequency-input",
        nargs="+",
        default=None,
        metavar="FILE",
        help="corpora or pairs files whose sentences give the token counts and contextual vectors "
        "(default: the --input texts)",
    )
    p.add_argument("--knn-k", type=int, default=3, help="neighbours for the kNN distance (default: 3)")
    p.add_argument(
        "--rank-edges", default="0,100,500,5000", help="frequency-rank bucket edges (default: 0,100,500,5000)"
    )
    p.add_argument(
        "--token-layer", type=int, default=-1, help="hidden state of the contextual token vectors (default: -1)"
    )
    p.add_argument(
        "--token-mode",
        choices=CONTEXTUAL_MODES,
        default="occurrence",
        help="contextual points: sampled occurrences, or one mean per token id (default: occurrence)",
    )
    p.add_argument(
        "--per-token", type=int, default=5, help="occurrence mode: occurrences sampled per token (default: 5)"
    )
    p.add_argument(
        "--token-fit-max",
        type=int,
        default=10_000,
        help="fit the token-level calibrator on at most this many token points (default: 10000)",
    )
    p.add_argument("--edit-level", choices=EDIT_LEVELS, default="word", help="edit distance over words or characters")
    p.add_argument("--seed", type=int, default=0, help="seed of sampled pairs and occurrences (default: 0)")
    add_model_arguments(p)
    add_endpoint_arguments(p)
    add_json_argument(p)


def config_from_args(args: argparse.Namespace) -> GeometryConfig:
    """The GeometryConfig the options describe, checked (InputError naming the option to fix)."""
    from isoscope.geometry.report import GeometryConfig

    return GeometryConfig(
        pooling=space_from_args(args, "geometry").pooling,
        calibrate=args.calibrate,
        layers=args.layers,
        frequency=args.frequency or "both",
        knn_k=args.knn_k,
        rank_edges=args.rank_edges,
        token_layer=args.token_layer,
        token_mode=args.token_mode,
        per_token=args.per_token,
        token_fit_max=args.token_fit_max,
        edit_level=args.edit_level,
        seed=args.seed,
    ).validate(option_name)


def _progress(args: argparse.Namespace, stage: str):
    return epoch_bar(args, stage) if stage.startswith("fit ") else progress_bar(args, stage)


def _run_vectors(args: argparse.Namespace, space: SpaceSpec) -> dict:
    """The report of a vectors file or an endpoint: ``analyse_geometry`` of their vectors (no layers, no token
    vectors)."""
    import dataclasses

    from isoscope.geometry.report import analyse_geometry

    for option, value in (("--layers", args.layers), ("--frequency-input", args.frequency_input)):
        if value:
            raise InputError(f"{option} needs a model's layers and token vectors; --vectors and endpoints have none")
    if args.frequency not in (None, "none"):
        raise InputError("--frequency needs a model's token vectors; --vectors and endpoints have none")
    config = dataclasses.replace(config_from_args(args), frequency="none")
    given = vector_input(args, space, args.input, kind=args.kind)
    assert given is not None
    origin = given.origin.to_dict() if given.origin is not None else None
    report = analyse_geometry(
        given.vectors, given.texts, config, name=given.name, progress=lambda s: _progress(args, s), origin=origin
    )
    result = report.to_dict()
    emit(args, result, _text_lines(result))
    return result


def run(args: argparse.Namespace) -> dict:
    from isoscope.data import load_input, load_texts
    from isoscope.geometry.report import analyse_geometry, check_input

    space = space_from_args(args, "geometry")
    if not space.has_model:  # no layers, no token vectors: the report of the space's vectors
        return _run_vectors(args, space)
    if args.input is None:
        raise InputError("give --input (a corpus or a pairs file), or --vectors")
    config = config_from_args(args)
    texts = load_input(args.input, args.kind, args.text_column)
    check_input(texts)
    frequency_texts = load_texts(args.frequency_input) if args.frequency_input and config.spaces else None
    encoder = encoder_for(args, space)
    report = analyse_geometry(
        encoder,
        texts,
        config,
        embed_config=embed_config(args),
        cache=cache_from_args(args),
        progress=lambda stage: _progress(args, stage),
        frequency_texts=frequency_texts,
    )
    result = {**report.to_dict(), "recipe": recipe_of(args, space, encoder)}
    emit(args, result, _text_lines(result))
    return result


def _fmt(value: Any) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def _text_lines(result: dict) -> list[str]:
    pooling = f", {result['pooling']}" if result["pooling"] else ""
    lines = [f"{result['input']}: {result['n_texts']} texts ({result['kind']}), {result['model']}{pooling}"]
    if result.get("recipe"):
        lines.append(f"recipe: {result['recipe']}")
    stages = ["raw"] + (["calibrated"] if "calibrated" in result else [])
    lines.append(f"{'metric':<20}" + "".join(f"{s:>12}" for s in stages))
    for key in METRIC_KEYS:
        lines.append(f"{key:<20}" + "".join(f"{_fmt(result[s][key]):>12}" for s in stages))
    for row in result.get("layers", []):
        lines.append(
            f"layer {row['layer']:>2}: " + "  ".join(f"{k} {_fmt(row[k])}" for k in METRIC_KEYS),
        )
    freq = result.get("frequency")
    if freq:
        lines.append(f"frequency: {freq['n_distinct_tokens']} distinct tokens, k={freq['k']}")
        lines.append(f"{'space':<11}{'stage':<11}{'bucket':<9}{'tokens':>7}{'norm':>9}{'knn':>9}{'rel_norm':>9}")
        for b in freq["buckets"]:
            lines.append(
                f"{b['space']:<11}{b['stage']:<11}{b['bucket']:<9}{b['n_tokens']:>7}{_fmt(b['mean_norm']):>9}"
                f"{_fmt(b['mean_knn_dist']):>9}{_fmt(b['rel_norm']):>9}"
            )
        for c in freq["correlations"]:
            lines.append(
                f"spearman x100 {c['space']}/{c['stage']}: norm~count {_fmt(c['spearman_norm_count'])}, "
                f"knn~count {_fmt(c['spearman_knn_count'])}"
            )
    overlap = result.get("overlap")
    if overlap:
        sp = ", ".join(f"{k} {_fmt(v)}" for k, v in overlap["spearman"].items())
        lines.append(f"spearman x100 with {overlap['level']} edit distance: {sp}")
    return lines
