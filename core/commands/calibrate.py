"""``python -m isoscope calibrate``: embed a corpus, fit a calibrator on it, save it (safetensors + JSON).

python -m isoscope calibrate --input corpus.txt --method flow --out calibrators/flow-mean
python -m isoscope calibrate --vectors openai.parquet:emb --method whitening --out calibrators/openai-whitening

With ``--vectors`` the calibrator is fitted on the file's rows (with ``--input``, on the vectors of its texts);
with ``--model openai:NAME`` on the endpoint's vectors of the corpus. The vectors' provenance is saved with it.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

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
    output_from_args,
    progress_bar,
    recipe_of,
    space_from_args,
    vector_input,
)
from isoscope.errors import InputError

# isoscope --help's line for this command, read from the file (isoscope.cli imports only the chosen command)
COMMAND = {"order": 30, "help": "fit a calibrator (flow, whitening, ...) on the embeddings of a corpus and save it"}

if TYPE_CHECKING:
    from isoscope.calibrate import Calibrator

METHOD_HELP = methods_help()
DEFAULT_FLOW_EPOCHS = 3  # Flow().epochs (a test keeps the two equal; the help must not import torch)


def add_flow_arguments(p: argparse.ArgumentParser) -> None:
    """``--flow-epochs`` and ``--seed`` (shared with ``sts``)."""
    p.add_argument("--flow-epochs", type=int, default=None, help=f"flow epochs (default: {DEFAULT_FLOW_EPOCHS})")
    p.add_argument("--seed", type=int, default=0, help="seed of the flow and of the random pairs (default: 0)")


def calibrator_from_args(args: argparse.Namespace, method: str) -> Calibrator:
    """Parse the method (InputError listing the choices) with the flow options applied."""
    from isoscope.calibrate import Flow, make_calibrator

    if args.flow_epochs is not None and args.flow_epochs < 0:
        raise InputError("--flow-epochs must be >= 0")
    flow = Flow(seed=args.seed)
    if args.flow_epochs is not None:
        flow.set_params(epochs=args.flow_epochs)
    return make_calibrator(method, flow=flow)


class ListMethods(argparse.Action):
    """``--methods``: print every calibration choice and what it does (from the registered classes), then exit."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object, option=None):
        from isoscope.calibrate.methods import methods_table, params_table
        from isoscope.errors import printable

        table, params = methods_table(), params_table()
        width = max(len(name) for name, _ in [*table, *params])
        lines = [f"{choice:<{width}}  {words}" for choice, words in table]
        lines += ["", "parameters (NAME:VALUE,... in this order, or NAME:PARAM=VALUE):"]
        lines += [f"{name:<{width}}  {words}" for name, words in params]
        print("\n".join(printable(line) for line in lines))
        parser.exit()


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--methods",
        action=ListMethods,
        help="list every calibration method (Isoscope's and those of installed plugins) with what it does, and exit",
    )
    p.add_argument(
        "--input",
        default=None,
        help="corpus: one text per line (.txt) or a table with a text column (optional with --vectors)",
    )
    p.add_argument("--text-column", default=None, help="column holding the texts (default: text, sentence, ...)")
    add_vectors_argument(p)
    p.add_argument("--method", default="flow", help=f"calibration method: {METHOD_HELP} (default: flow)")
    p.add_argument("--out", required=True, help="folder to write calibrator.safetensors and calibrator.json to")
    add_flow_arguments(p)
    add_model_arguments(p)
    add_endpoint_arguments(p)
    add_json_argument(p)


def _progress(args: argparse.Namespace, stage: str):
    return epoch_bar(args) if stage == "fit" else progress_bar(args, stage)


def run(args: argparse.Namespace) -> dict:
    from isoscope.data import load_corpus
    from isoscope.data.outputs import CALIBRATOR_FOLDER
    from isoscope.evaluate.sts import check_fit_corpus, fit_and_save

    calibrator = calibrator_from_args(args, args.method)
    out = output_from_args(args, args.out, CALIBRATOR_FOLDER)  # before any work: no input, nothing to lose
    space = space_from_args(args, "calibrate")
    given = vector_input(args, space, args.input, kind="corpus")
    if given is not None:
        fitted_on = {"model": given.name, "model_fingerprint": given.fingerprint, "pooling": None}
        if given.origin is not None:
            fitted_on["vectors"] = given.origin.to_dict()
        name = given.texts.name or given.name
        stage = lambda s: _progress(args, s)  # noqa: E731
        result = fit_and_save(
            given.vectors, given.texts, calibrator, out, space=fitted_on, progress=stage, seed=args.seed
        ).to_dict()
        n_texts = len(given)
    else:
        if args.input is None:
            raise InputError("give --input (a corpus), or --vectors")
        corpus = load_corpus(args.input, text_column=args.text_column)
        check_fit_corpus(corpus)
        encoder = encoder_for(args, space)
        result = fit_and_save(
            encoder,
            corpus,
            calibrator,
            out,
            pooling=space.pooling,
            embed_config=embed_config(args),
            cache=cache_from_args(args),
            progress=lambda stage: _progress(args, stage),
            seed=args.seed,
        ).to_dict()
        result["recipe"] = recipe_of(args, space, encoder)
        name, n_texts = corpus.name, len(corpus)
    pooling = f", pooling {result['pooling']}" if result["pooling"] else ""
    lines = [
        f"{name}: {n_texts} texts, {result['model']}{pooling}",
        f"{calibrator.method} fitted in {result['fit_seconds']:.1f} s, saved to {out}",
        f"avg cosine of random pairs {result['avg_cosine_before']:.3f} -> {result['avg_cosine_after']:.3f}",
        *([f"bits/dim {result['bits_per_dim']:.4f}"] if result["bits_per_dim"] is not None else []),
    ]
    diverged = ["the flow diverged; kept the last good epoch"] if result["diverged"] else []
    emit(args, result, lines, warnings=[*diverged, *result["warnings"]])
    return result
