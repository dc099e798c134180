"""``python -m isoscope migrate``: can I switch from model A to model B without re-embedding the corpus?

python -m isoscope migrate --new model=sentence-transformers/all-mpnet-base-v2                 # the demo task
python -m isoscope migrate --old vectors=index.parquet:emb --new model=B --beir scifact/ --threshold 0.9
python -m isoscope migrate --new model=B --corpus texts.csv --fit generic.txt --json            # label-free only
python -m isoscope migrate apply --adapter adapter/ --vectors index.parquet:emb --out mapped.parquet

Each side is a SPEC as ``isoscope compare`` takes it (``isoscope.sources.parse_space``: ``model=...,pooling=...``,
``vectors=FILE[:COLUMN]`` looked up by text, ``model=openai:NAME``; a bare name is a model); ``--old`` defaults to
the embedded all-MiniLM-L6-v2, or is the vectors of ``--queries-vectors``/``--docs-vectors``. Adapters are fitted
both ways on a seeded sample of the corpus (``--fit-fraction``) and/or ``--fit`` texts, scored against the old model
and full re-embedding (``isoscope.migrate.sides.run_migration``), and one is recommended without the labels.

Exit status: 0, and 1 with ``--threshold X`` when the recommended adapter's kept share (the recovered fraction
where the new model's gain is real, its interval above 0; else c / b; label-free without qrels) has a 95% lower
bound below X (a gate for a deployment, one ``gate:`` line on stderr); 2 for the user's mistakes, as every command.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys

from isoscope.commands.common import (
    add_device_arguments,
    add_endpoint_arguments,
    add_json_argument,
    cache_from_args,
    embed_config,
    emit,
    encoder_loader,
    progress_bar,
    space_sources,
)
from isoscope.data.limits import count_option
from isoscope.errors import InputError
from isoscope.migrate.options import (
    DEFAULT_ADAPTERS,
    DEFAULT_CURVE,
    DEFAULT_FIT_FRACTION,
    DEFAULT_THRESHOLD,
    DIRECTIONS,
    directions_help,
)

# isoscope --help's line for this command, read from the file (isoscope.cli imports only the chosen command)
COMMAND = {
    "order": 120,
    "help": "switch embedding models without re-embedding? adapters fitted both ways, what each keeps, a recommendation",
}

SPEC_HELP = (
    "model=NAME[,pooling=P] (a folder or hub id; a bare NAME too), vectors=FILE[:COLUMN][,text=COLUMN] (vectors "
    "computed elsewhere, looked up by text), or model=openai:NAME (an endpoint)"
)
APPLY_MODULE = "isoscope.commands.migrate_apply"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--old",
        default=None,
        metavar="SPEC",
        help=f"the model the index was built with: {SPEC_HELP} (default: the embedded all-MiniLM-L6-v2)",
    )
    p.add_argument("--new", default=None, metavar="SPEC", help=f"the model to switch to: {SPEC_HELP}")
    p.add_argument(
        "--fit",
        default=None,
        metavar="TEXTS",
        help="generic fit texts (a corpus or pairs file), embedded "
        "by both models; combined with the corpus sample when --fit-fraction is given too",
    )
    task = p.add_mutually_exclusive_group()
    task.add_argument("--beir", default=None, metavar="DIR", help="a BEIR folder or its .zip (default: the demo task)")
    task.add_argument("--table", default=None, metavar="FILE", help="a table of (query, document[, grade]) rows")
    task.add_argument(
        "--corpus",
        default=None,
        metavar="FILE",
        help="a corpus alone (no queries, no qrels): only the label-free measures, on held-out texts",
    )
    task.add_argument(
        "--queries-vectors",
        default=None,
        metavar="FILE[:COLUMN]",
        help="the old model's query vectors with their texts (with --docs-vectors and --qrels): the old side",
    )
    p.add_argument("--docs-vectors", default=None, metavar="FILE[:COLUMN]", help="the old model's document vectors")
    p.add_argument("--qrels", default=None, metavar="FILE", help="qrels naming the vectors files' ids")
    p.add_argument("--split", default="test", help="the BEIR split whose qrels are scored (default: test)")
    p.add_argument("--text-column", default=None, help="the text column of --fit and --corpus (default: text)")
    p.add_argument(
        "--fit-fraction",
        type=float,
        default=None,
        metavar="F",
        help="the share of the corpus's documents "
        f"whose two vectors are fit pairs, a seeded sample (default: {DEFAULT_FIT_FRACTION} without --fit, "
        "0 with it)",
    )
    p.add_argument(
        "--methods",
        nargs="+",
        default=None,
        metavar="METHOD",
        help="adapters to fit: procrustes, ridge, "
        "ridge:procrustes, lowrank:R, mlp[:H] (trains a network: seconds to minutes, estimated before), "
        f"local:C (default: {' '.join(DEFAULT_ADAPTERS)}, each where the data allows it)",
    )
    p.add_argument(
        "--directions",
        nargs="+",
        default=list(DIRECTIONS),
        metavar="DIR",
        help=f"{directions_help()} (default: both; new-legacy and old-new need no quotes in a shell)",
    )
    p.add_argument(
        "--curve",
        default=",".join(f"{f:g}" for f in DEFAULT_CURVE),
        metavar="SHARES",
        help="shares of "
        "the corpus for the curve of kept against fit pairs, comma-separated, or none (default: %(default)s)",
    )
    p.add_argument("--curve-seeds", type=int, default=1, metavar="N", help="seeds per curve point (default: 1)")
    p.add_argument(
        "--threshold",
        type=float,
        default=None,
        metavar="X",
        help="exit 1 when the kept share's 95%% "
        f"lower bound is below X (a deployment gate; the verdict reads {DEFAULT_THRESHOLD} without it)",
    )
    p.add_argument(
        "--resamples",
        type=count_option("resamples"),
        default=10_000,
        help="resamples of the paired tests and the intervals (default: 10000)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the fit sample, the splits and the bootstrap")
    p.add_argument(
        "--out",
        default=None,
        metavar="DIR",
        help="save the recommended adapter (adapter.json + .safetensors) to this folder",
    )
    p.add_argument("--report", default=None, metavar="FILE", help="write the one-file HTML report of the run")
    add_device_arguments(p)
    p.set_defaults(precision="fp32")
    p.add_argument("--max-length", type=int, default=256, help="max tokens per text (default: 256)")
    p.add_argument("--batch-size", type=int, default=64, help="texts per forward pass at least (default: 64)")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the embedding cache")
    p.add_argument("--quiet", action="store_true", help="no progress bars, no estimate")
    add_endpoint_arguments(p)
    add_json_argument(p)
    _add_apply(p)


def _add_apply(p: argparse.ArgumentParser) -> None:
    """``isoscope migrate apply`` (``isoscope.commands.migrate_apply``): mapping a vectors file or a shard folder
    through a saved adapter, where that module is installed."""
    if importlib.util.find_spec(APPLY_MODULE) is None:
        return
    actions = p.add_subparsers(dest="action", required=False, metavar="{apply}", parser_class=type(p))
    module = importlib.import_module(APPLY_MODULE)
    sub = actions.add_parser("apply", help="map a vectors file or a Parquet shard folder through a saved adapter")
    module.add_arguments(sub)


def _spec(text: str | None, flag: str):
    """A side's SPEC (a bare name is a model); InputError naming the flag."""
    from isoscope.errors import first_line
    from isoscope.sources import parse_space

    text = (text or "").strip()
    try:
        return parse_space(text if "=" in text or not text else f"model={text}")
    except InputError as exc:
        raise InputError(f"{flag}: {first_line(exc)}") from None


def _config(args: argparse.Namespace):
    from isoscope.errors import first_line
    from isoscope.migrate.config import MigrationConfig

    curve = () if args.curve.strip().lower() in ("", "none") else tuple(_numbers(args.curve, "--curve"))
    if not 1 <= args.curve_seeds <= 100:
        raise InputError(f"--curve-seeds must be between 1 and 100; got {args.curve_seeds}")
    fields = {
        "--methods": ("methods", tuple(args.methods) if args.methods else None),
        "--directions": ("directions", tuple(args.directions)),
        "--fit-fraction": ("fit_fraction", args.fit_fraction),
        "--curve": ("curve", curve),
        "--threshold": ("threshold", DEFAULT_THRESHOLD if args.threshold is None else args.threshold),
    }
    for flag, (name, value) in fields.items():  # each checked alone, so the message names its flag
        try:
            MigrationConfig(**{"curve": (), name: value})
        except InputError as exc:
            raise InputError(f"{flag}: {first_line(exc)}") from None
    return MigrationConfig(
        **dict(fields.values()), curve_seeds=tuple(range(args.curve_seeds)), seed=args.seed, resamples=args.resamples
    )


def _numbers(text: str, flag: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise InputError(f"{flag}: give shares separated by commas, like 0.01,0.05,0.25; got '{text[:40]}'") from None


def _task(args: argparse.Namespace):
    """(task or None, corpus texts or None, whether the task's vectors are the old side)."""
    from isoscope.paths import DEMO_RETRIEVAL
    from isoscope.retrieval.load import load_task, load_task_table, load_vector_task

    if args.queries_vectors or args.docs_vectors:
        if not (args.queries_vectors and args.docs_vectors and args.qrels):
            raise InputError("--queries-vectors, --docs-vectors and --qrels go together: give all three")
        if args.old:
            raise InputError("the vectors files are the old side; drop --old")
        return load_vector_task(args.queries_vectors, args.docs_vectors, args.qrels), None, True
    if args.qrels:
        raise InputError("--qrels goes with --queries-vectors and --docs-vectors; a BEIR folder has its own qrels")
    if args.corpus:
        from isoscope.data import load_input

        return None, load_input(args.corpus, "corpus", args.text_column).distinct_texts(), False
    if args.table:
        return load_task_table(args.table), None, False
    return load_task(args.beir or DEMO_RETRIEVAL, args.split), None, False


def _stage(args: argparse.Namespace, stage: str):
    unit = "text" if stage.startswith("embed") else "adapter" if stage == "fit" else "fit"
    return progress_bar(args, stage, unit=unit)


def _estimate(args: argparse.Namespace, sides: tuple, texts: list[str], config, n_docs: int, n_fit: int) -> list[str]:
    """The run's cost in words, said on stderr before a long run (``isoscope.migrate.costs``)."""
    from isoscope.migrate.costs import migration_cost

    pairs = round(config.fraction_for(n_fit > 0) * n_docs) + n_fit
    cost, parts = migration_cost(*sides, texts=texts, config=config, n_pairs=pairs)
    lines = [f"estimate: {cost.describe()} ({'; '.join(parts)})"] if cost.long else []
    if lines and not args.quiet:
        print(lines[0], file=sys.stderr)
    return lines


def _save(args: argparse.Namespace, result) -> dict:
    """``--out``: the recommended adapter saved; ``--report``: the HTML report."""
    import shlex
    from pathlib import Path

    out = {}
    if args.out:
        rec = result.recommendation
        meta = {
            "direction": rec.direction,
            "old": result.old.name,
            "new": result.new.name,
            "verdict": rec.verdict,
            "pairs": result.n_pairs,
        }
        out["out"] = str(result.adapter().save(Path(args.out).expanduser(), metadata=meta))
    if args.report:
        from isoscope.space.report import migration_report

        command = "isoscope " + " ".join(shlex.quote(a) for a in (getattr(args, "argv", None) or sys.argv[1:]))
        out["report"] = str(migration_report(result, args.report, command=command))
    return out


def run(args: argparse.Namespace) -> dict:
    if getattr(args, "action", None) == "apply":
        return importlib.import_module(APPLY_MODULE).run(args)
    from isoscope.data import load_input
    from isoscope.migrate.sides import run_migration, spec_side, task_side

    if not (args.new or "").strip():
        raise InputError("give the new model: --new model=NAME (or vectors=FILE, model=openai:NAME)")
    config = _config(args)  # bad options fail before anything is loaded
    old_spec, new_spec = _spec(args.old, "--old"), _spec(args.new, "--new")
    task, corpus, old_from_task = _task(args)
    fit = load_input(args.fit, text_column=args.text_column).distinct_texts() if args.fit else None
    side = dict(
        loader=encoder_loader(args), readers=space_sources(args), config=embed_config(args), cache=cache_from_args(args)
    )
    old = task_side(task) if old_from_task else spec_side(old_spec, **side)
    new = spec_side(new_spec, **side)
    docs = task.documents if task is not None else corpus
    texts = [*(task.queries if task is not None else []), *docs, *(fit or [])]
    estimate = _estimate(args, (old, new), texts, config, len(docs), len(fit or []))
    result = run_migration(
        old, new, task=task, corpus=corpus, fit_texts=fit, config=config, progress=lambda s: _stage(args, s)
    )
    out = {**result.to_dict(), "estimate": estimate, **_save(args, result)}
    lines = result.lines() + [f"saved {k}: {v}" for k, v in out.items() if k in ("out", "report")]
    emit(args, out, lines)
    if args.threshold is not None and not result.recommendation.passes(args.threshold):
        rec = result.recommendation
        print(
            f"gate: {rec.method} ({rec.direction}) keeps a {rec.measure} whose 95% lower bound {rec.kept.low:.3f} is "
            f"below --threshold {args.threshold:g}",
            file=sys.stderr,
        )
        args.exit_status = 1
    return out
