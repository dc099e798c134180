"""``python -m isoscope geometry``: isotropy metrics, word-frequency bias and lexical-overlap bias of a space.

For a corpus or a pairs file (then all its sentences are embedded and the overlap correlations are added):
- ``raw`` / ``calibrated``: avg cosine, IsoScore, partition isotropy, effective rank, ... of the sentence
  vectors (``isoscope.geometry.metrics.all_metrics``); the calibrator is fitted on those sentence vectors;
- ``frequency``: BERT-flow Table 1 (norm and kNN distance of token vectors by frequency-rank bucket,
  ``isoscope.geometry.frequency``), raw and with a calibrator of the same method fitted on the token vectors;
- ``overlap`` (pairs only): Spearman of gold, raw cosine and calibrated cosine with edit distance
  (``isoscope.geometry.lexical``);
- ``layers`` (``--layers``): raw metrics of mean-pooled ``layer:0..L``.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from isoscope.calibrate.methods import methods_help
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
from isoscope.geometry.frequency import (
    CONTEXTUAL_MODES,
    SPACES,
    FrequencyConfig,
    bucket_labels,
    frequency_analysis,
    is_calibrated,
    parse_edges,
)
from isoscope.geometry.lexical import EDIT_LEVELS

if TYPE_CHECKING:
    from isoscope.data import Pairs

log = logging.getLogger(__name__)

INPUT_KINDS: tuple[str, ...] = ("auto", "pairs", "corpus")
FREQUENCY_CHOICES: tuple[str, ...] = ("both", *SPACES, "none")
METRIC_KEYS: tuple[str, ...] = ("avg_cosine", "isoscore", "partition_isotropy", "effective_rank")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--input", required=True, help="corpus (.txt/.csv/.tsv/.jsonl/.parquet) or pairs file")
    p.add_argument(
        "--kind",
        choices=INPUT_KINDS,
        default="auto",
        help="auto: a file with scores or sentence1/sentence2 columns is pairs, anything else a corpus (default: auto)",
    )
    p.add_argument("--text-column", default=None, help="corpus: column holding the texts (default: text)")
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
        default="both",
        help="token spaces for the frequency table: static input embeddings, contextual vectors, both, "
        "or none (default: both)",
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
    add_json_argument(p)


# ---------------------------------------------------------------- input


def _looks_like_pairs_header(source: str) -> bool:
    """True when the first line names both sentence1 and sentence2 (CSV/TSV header or JSONL keys)."""
    from isoscope.data import read_source

    raw, _ = read_source(source)
    head = raw[:4096].decode("utf-8", errors="ignore").lower().splitlines()
    first = head[0] if head else ""
    return "sentence1" in first and "sentence2" in first


def load_input(
    source: str, kind: str = "auto", text_column: str | None = None
) -> tuple[list[str], Pairs | None, list[str]]:
    """(texts to embed, the pairs for a pairs file or None, load warnings).

    For a pairs file the texts are its sentences, first column then second.
    """
    from isoscope.data import load_pairs

    if kind not in INPUT_KINDS:
        raise InputError(f"unknown input kind '{kind}'; choose one of {', '.join(INPUT_KINDS)}")
    if kind == "corpus" or (kind == "auto" and text_column):
        return _corpus_texts(source, text_column)
    if kind == "pairs":
        pairs = load_pairs(source)
        return pairs.texts, pairs, list(pairs.warnings)
    try:
        pairs = load_pairs(source)
    except InputError:
        return _corpus_texts(source, text_column)
    if pairs.scores is not None or _looks_like_pairs_header(source):
        return pairs.texts, pairs, list(pairs.warnings)
    return _corpus_texts(source, text_column)


def _corpus_texts(source: str, text_column: str | None) -> tuple[list[str], None, list[str]]:
    from isoscope.data import load_corpus

    corpus = load_corpus(source, text_column=text_column)
    return corpus.texts, None, list(corpus.warnings)


# ---------------------------------------------------------------- calibration


def fit_transform(method: str, X: np.ndarray, progress: Any = None) -> tuple[np.ndarray, float]:
    """Fit a fresh calibrator of ``method`` on ``X`` and transform ``X``; returns (Z, fit seconds).

    A flow reports ``progress(epoch, n_epochs, bits_per_dim)``.
    """
    from isoscope.calibrate import make_calibrator
    from isoscope.evaluate.sts import fit_timed

    cal = make_calibrator(method)
    seconds = fit_timed(cal, X, progress)
    return np.asarray(cal.transform(X), np.float64), seconds


# ---------------------------------------------------------------- run


def _check_options(args: argparse.Namespace) -> tuple[bool, tuple[int, ...]]:
    """Validate cheap options before loading a model. Returns (calibrated?, rank edges)."""
    from isoscope.calibrate import make_calibrator

    calibrated = is_calibrated(args.calibrate)
    if calibrated:
        make_calibrator(args.calibrate)  # InputError listing the valid methods
    if args.knn_k < 1:
        raise InputError(f"--knn-k must be >= 1; got {args.knn_k}")
    if args.per_token < 1:
        raise InputError(f"--per-token must be >= 1; got {args.per_token}")
    if args.token_fit_max < 2:
        raise InputError(f"--token-fit-max must be >= 2; got {args.token_fit_max}")
    return calibrated, parse_edges(args.rank_edges)


def _frequency_texts(args: argparse.Namespace, texts: list[str], warnings: list[str]) -> list[str]:
    if not args.frequency_input:
        return texts
    out: list[str] = []
    for source in args.frequency_input:
        more, _, more_warnings = load_input(source, "auto", None)
        out.extend(more)
        warnings.extend(more_warnings)
    return out


def run(args: argparse.Namespace) -> dict:
    from isoscope.geometry.metrics import all_metrics, per_layer_metrics

    calibrated, edges = _check_options(args)
    texts, pairs, warnings = load_input(args.input, args.kind, args.text_column)
    if len(texts) < 3:
        raise InputError(f"{Path(args.input).name}: {len(texts)} text(s); geometry needs at least 3")
    freq_texts = _frequency_texts(args, texts, warnings) if args.frequency != "none" else []
    from isoscope.encode.embed import encode_many

    encoder = encoder_from_args(args)
    config = embed_config(args)
    poolings = [args.pooling]
    if args.layers:
        poolings += [f"layer:{k}" for k in range(encoder.num_layers + 1) if f"layer:{k}" != args.pooling]
    vectors = encode_many(encoder, texts, poolings, config, progress_bar(args, "embed"), cache_from_args(args))
    X = next(iter(vectors.values())).astype(np.float64)  # (n, d), the requested pooling comes first
    result: dict[str, Any] = {
        "input": Path(args.input).name,
        "kind": "pairs" if pairs is not None else "corpus",
        "n_texts": len(texts),
        "model": encoder.name,
        "pooling": args.pooling,
        "calibrate": args.calibrate if calibrated else None,
        "raw": all_metrics(X, seed=args.seed),
    }
    Z = None
    if calibrated:
        Z, seconds = fit_transform(args.calibrate, X, epoch_bar(args, f"fit {args.calibrate}"))
        result["calibrated"] = all_metrics(Z, seed=args.seed)
        result["calibrated"]["fit_seconds"] = seconds
    if args.layers:
        layer_names = [f"layer:{k}" for k in range(encoder.num_layers + 1)]
        per_layer = per_layer_metrics([vectors[name] for name in layer_names], seed=args.seed)
        result["layers"] = [{"layer": k, **m} for k, m in enumerate(per_layer)]
    if args.frequency != "none":
        result["frequency"] = _frequency(args, encoder, freq_texts, edges, config, result["calibrate"])
    if pairs is not None:
        result["overlap"], result["sts"] = _overlap(args, pairs, X, Z)
    result["warnings"] = warnings
    emit(args, result, _text_lines(result))
    return result


def _frequency(
    args: argparse.Namespace,
    encoder: Any,
    texts: list[str],
    edges: tuple[int, ...],
    config: Any,
    calibrator: str | None,
) -> dict:
    """The frequency table; ``calibrator`` is the --calibrate method, or None when uncalibrated."""
    spaces = SPACES if args.frequency == "both" else (args.frequency,)
    fcfg = FrequencyConfig(
        k=args.knn_k,
        edges=edges,
        layer=args.token_layer,
        mode=args.token_mode,
        per_token=args.per_token,
        fit_max=args.token_fit_max,
        seed=args.seed,
    )
    res = frequency_analysis(encoder, texts, spaces, calibrator, fcfg, config, progress_bar(args, "tokens"))
    return {
        "n_texts": len(texts),
        "n_distinct_tokens": len(res.counts),
        "n_token_occurrences": int(res.counts["count"].sum()),
        "k": fcfg.k,
        "edges": list(edges),
        "labels": bucket_labels(edges),
        "token_layer": fcfg.layer,
        "token_mode": fcfg.mode,
        "per_token": fcfg.per_token,
        "token_fit_max": fcfg.fit_max,
        "buckets": res.buckets.to_dict("records"),
        "correlations": res.correlations.to_dict("records"),
    }


def _overlap(args: argparse.Namespace, pairs: Pairs, X: np.ndarray, Z: np.ndarray | None) -> tuple[dict, dict]:
    from isoscope.evaluate.similarity import correlations, cosine_pairs
    from isoscope.geometry.lexical import overlap_analysis

    n = len(pairs)
    sims: dict[str, np.ndarray | None] = {"gold": pairs.scores, "raw": cosine_pairs(X[:n], X[n:])}
    if Z is not None:
        sims["calibrated"] = cosine_pairs(Z[:n], Z[n:])
    summary, _ = overlap_analysis(pairs.sentence1, pairs.sentence2, sims, level=args.edit_level)
    sts: dict[str, Any] = {}
    if pairs.scores is not None:
        sts = {name: correlations(v, pairs.scores)["spearman"] for name, v in sims.items() if name != "gold"}
    return summary, sts


def _fmt(value: Any) -> str:
    if value is None or (isinstance(value, float) and not np.isfinite(value)):
        return "-"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def _text_lines(result: dict) -> list[str]:
    lines = [f"{result['input']}: {result['n_texts']} texts ({result['kind']}), {result['model']}, {result['pooling']}"]
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
    return [*lines, *result.get("warnings", [])]
