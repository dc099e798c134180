"""``python -m isoscope retrieval``: would a fix help my search? Every fix side by side on a retrieval task.

python -m isoscope retrieval --beir scifact/ --calibrate centre --calibrate whitening:64 --json
python -m isoscope retrieval --table pairs.csv --query-prompt "query: " --doc-prompt "passage: "
python -m isoscope retrieval --queries-vectors q.parquet:emb --docs-vectors d.parquet:emb --qrels qrels.tsv

The task is a BEIR folder (or its zip), a table of (query, document[, grade]) rows, or two vectors files and
qrels (default: the demo task in ``isoscope.assets``). Queries and documents are embedded with their prompts
(``isoscope.retrieval.embedding``), every fix is fitted without labels on the documents (``METHOD@queries``: on
the queries), searched exactly to depth 100 and scored by pytrec_eval; each is tested against raw over the
queries (``isoscope.retrieval.run``).
"""

from __future__ import annotations

import argparse

from isoscope.commands.calibrate import add_flow_arguments
from isoscope.commands.common import (
    add_endpoint_arguments,
    add_force_argument,
    add_json_argument,
    add_model_arguments,
    cache_from_args,
    embed_config,
    emit,
    encoder_for,
    epoch_bar,
    output_from_args,
    progress_bar,
    space_from_args,
    space_sources,
)
from isoscope.data.limits import count_option
from isoscope.errors import InputError
from isoscope.retrieval.options import DEPTH, HEADLINE, METRICS, check_split
from isoscope.retrieval.variants import variants_help

# isoscope --help's line for this command, read from the file (isoscope.cli imports only the chosen command)
COMMAND = {
    "order": 110,
    "help": "would a fix help search? nDCG@10 and more for every fix on a retrieval task, tested against raw",
}


def _split(text: str) -> str:
    """``--split``'s type: a split name (``isoscope.retrieval.options.check_split``), never a path."""
    try:
        return check_split(text)
    except InputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_arguments(p: argparse.ArgumentParser) -> None:
    task = p.add_mutually_exclusive_group()
    task.add_argument("--beir", default=None, metavar="DIR", help="a BEIR folder (corpus.jsonl, queries.jsonl, "
                      "qrels/<split>.tsv) or its .zip (default: the demo task)")  # fmt: skip
    task.add_argument("--table", default=None, metavar="FILE", help="a table of (query, document[, grade]) rows "
                      "(CSV/TSV/JSONL/Parquet); a row with an empty query adds a document no query asks for")  # fmt: skip
    task.add_argument("--queries-vectors", default=None, metavar="FILE[:COLUMN]",
                      help="the queries' vectors computed elsewhere (with --docs-vectors and --qrels)")  # fmt: skip
    p.add_argument("--docs-vectors", default=None, metavar="FILE[:COLUMN]", help="the documents' vectors")
    p.add_argument("--qrels", default=None, metavar="FILE", help="qrels naming the vectors files' ids (an _id or id "
                   "column, else row numbers): query-id, corpus-id, score")  # fmt: skip
    p.add_argument("--split", default="test", type=_split, help="the BEIR split whose qrels are scored (default: test)")
    p.add_argument("--calibrate", action="append", default=None, metavar="SPEC",
                   help=f"a fix to compare with raw (repeat for several): {variants_help()} "
                   "(default: centre, whitening, whitening:64, sn, abtt, flow, a query-side whitening:K, csls)")  # fmt: skip
    for side, flag in (("query", "query"), ("document", "doc")):
        p.add_argument(f"--{flag}-prompt", default=None, metavar="TEXT", help=f"text put before every {side}")
        p.add_argument(f"--{flag}-prompt-name", default=None, metavar="NAME",
                       help=f"a prompt the model names for its {side}s (default: its '{side}' prompt, if any)")  # fmt: skip
    p.add_argument("--depth", type=int, default=DEPTH, help=f"documents retrieved per query (default: {DEPTH})")
    p.add_argument("--resamples", type=count_option("resamples"), default=10_000, help="resamples of the paired test and the interval "
                   "(default: 10000)")  # fmt: skip
    p.add_argument("--per-query-out", default=None, metavar="FILE", help="write every query's metrics under every "
                   "variant to this CSV file")  # fmt: skip
    add_flow_arguments(p)
    add_model_arguments(p)
    add_endpoint_arguments(p)
    add_force_argument(p)
    add_json_argument(p)


def _progress(args: argparse.Namespace, stage: str):
    if stage == "fit":
        return epoch_bar(args)
    return progress_bar(args, stage, unit="variant" if stage == "variants" else "text")


def _task(args: argparse.Namespace):
    from isoscope.paths import DEMO_RETRIEVAL
    from isoscope.retrieval.load import load_task, load_task_table, load_vector_task

    if args.queries_vectors or args.docs_vectors:
        if not (args.queries_vectors and args.docs_vectors and args.qrels):
            raise InputError("--queries-vectors, --docs-vectors and --qrels go together: give all three")
        return load_vector_task(args.queries_vectors, args.docs_vectors, args.qrels)
    if args.qrels:
        raise InputError("--qrels goes with --queries-vectors and --docs-vectors; a BEIR folder has its own qrels")
    if args.table:
        return load_task_table(args.table)
    return load_task(args.beir or DEMO_RETRIEVAL, args.split)


def _prompts(args: argparse.Namespace, encoder) -> tuple[str, str]:
    from isoscope.retrieval.embedding import side_prompt

    return (
        side_prompt(encoder, "query", name=args.query_prompt_name, text=args.query_prompt),
        side_prompt(encoder, "document", name=args.doc_prompt_name, text=args.doc_prompt),
    )


def _given_space(args: argparse.Namespace, space, task, config, flow):
    """The run on the vectors ``space_vectors`` gives of the queries and the documents (no model runs here: a prompt
    is its text, ``--query-prompt`` and ``--doc-prompt``)."""
    from isoscope.encode.embed import EmbedConfig
    from isoscope.retrieval.run import evaluate_retrieval
    from isoscope.sources import space_vectors

    if args.query_prompt_name or args.doc_prompt_name:
        raise InputError(f"{space.model} is an endpoint: give prompts as text (--query-prompt, --doc-prompt)")
    stage = lambda s: _progress(args, s)  # noqa: E731
    readers, prompts = space_sources(args), {"query": args.query_prompt or "", "document": args.doc_prompt or ""}
    sides = [
        space_vectors(space, texts, readers=readers, config=EmbedConfig(prompt=prompt), progress=stage(f"embed {n}"))
        for texts, prompt, n in [
            (task.queries, prompts["query"], "queries"),
            (task.documents, prompts["document"], "documents"),
        ]
    ]
    result = evaluate_retrieval(sides[0].raw, sides[1].raw, task, config=config, flow=flow, progress=stage)
    result.model, result.prompts = sides[0].model_name, prompts
    return result


def _evaluate(args: argparse.Namespace, task, config):
    """The run on the task's own vectors, on an endpoint's, or on the model's."""
    from isoscope.calibrate import Flow
    from isoscope.retrieval.run import evaluate_retrieval, retrieval_report

    flow = Flow(seed=args.seed) if args.flow_epochs is None else Flow(seed=args.seed, epochs=args.flow_epochs)
    stage = lambda s: _progress(args, s)  # noqa: E731
    if task.query_vectors is not None:
        if (args.model or "").strip() or args.pooling is not None:
            raise InputError("the vectors files are the space; drop --model and --pooling")
        result = evaluate_retrieval(
            task.query_vectors, task.doc_vectors, task, config=config, flow=flow, progress=stage
        )
        result.model = task.name
        return result
    space = space_from_args(args, "retrieval")
    if not space.has_model:  # an endpoint: its vectors of both sides, each prompt given as text
        return _given_space(args, space, task, config, flow)
    encoder = encoder_for(args, space)
    return retrieval_report(
        encoder,
        task,
        pooling=space.pooling,
        prompts=_prompts(args, encoder),
        config=config,
        embed_config=embed_config(args),
        cache=cache_from_args(args),
        flow=flow,
        progress=stage,
    )


def _lines(result) -> list[str]:
    task = result.task
    width = {m: max(11, len(m) + 2) for m in METRICS}  # a column per metric of the table, 11 wide or its name's
    lines = [
        f"{task.name}: {task.n_queries:,} queries, {task.n_documents:,} documents, {task.n_judgements:,} judgements; "
        f"{result.model}" + (f", pooling {result.pooling}" if result.pooling else ""),
        f"{'variant':<24}" + "".join(f"{m:>{width[m]}}" for m in METRICS) + f"  Δ {HEADLINE} [95% CI]  p       verdict",
    ]
    for r in result.rows:
        means = r.means()
        row = f"{r.variant:<24}" + "".join(f"{means[m]:>{width[m]}.4f}" for m in METRICS)
        test = r.tests.get(HEADLINE)
        if test is not None:
            row += f"  {test.mean_difference:+.4f} [{test.ci_low:+.4f}, {test.ci_high:+.4f}]  {test.p_value:.4f}  {test.verdict}"
        lines.append(row)
    return lines


def run(args: argparse.Namespace) -> dict:
    from isoscope.retrieval.run import RetrievalConfig
    from isoscope.retrieval.variants import parse_variants

    if args.flow_epochs is not None and args.flow_epochs < 0:
        raise InputError("--flow-epochs must be >= 0")
    variants = None
    if args.calibrate:
        variants = tuple(str(s) for s in parse_variants(args.calibrate))  # a bad fix: fail before loading anything
    config = RetrievalConfig(variants=variants, depth=args.depth, resamples=args.resamples, seed=args.seed)
    if args.per_query_out:
        from isoscope.data.outputs import PER_QUERY_CSV

        output_from_args(args, args.per_query_out, PER_QUERY_CSV, option="--per-query-out")  # before any work
    task = _task(args)
    result = _evaluate(args, task, config)
    out = result.to_dict()
    if args.per_query_out:
        from isoscope.data.export import safe_csv
        from isoscope.data.outputs import PER_QUERY_CSV, write_output_bytes

        data = safe_csv(result.per_query_frame())
        write_output_bytes(args.per_query_out, data, kind=PER_QUERY_CSV, force=args.force, option="--per-query-out")
        out["per_query_out"] = str(args.per_query_out)
    emit(args, out, _lines(result), warnings=list(result.warnings))
    return out
