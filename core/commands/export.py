"""``python -m isoscope export``: take the fix home, a calibrated model or index that runs without Isoscope.

python -m isoscope export --calibrate whitening:64 --fit-on corpus.txt --out fixed-minilm
python -m isoscope export --calibrate flow --fit-on corpus.txt --format onnx --out fixed-minilm-onnx
python -m isoscope export --vectors docs.parquet:emb --calibrate centre --out docs-centred.parquet
python -m isoscope export --vectors docs.npy --calibrate whitening:64 --faiss --out docs.faiss

With ``--model`` (default: the embedded all-MiniLM-L6-v2) the calibrator is fitted on ``--fit-on``'s texts
embedded with the model's recipe and written as a sentence-transformers folder (its recipe, a Dense module
holding the map, Normalize when the recipe had it, a README and a checksum manifest), or with ``--format onnx``
as one ONNX graph with the tokenizer beside it. With ``--vectors`` it is fitted on the file's rows and the
calibrated rows are written in the file's own format (``--faiss``: a FAISS index of the raw rows whose
pre-transform is the map).
"""

from __future__ import annotations

import argparse

from isoscope.calibrate.methods import methods_help
from isoscope.commands.calibrate import add_flow_arguments, calibrator_from_args
from isoscope.commands.common import (
    add_force_argument,
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
    space_from_args,
)
from isoscope.errors import InputError

# isoscope --help's line for this command, read from the file (isoscope.cli imports only the chosen command)
COMMAND = {
    "order": 130,
    "help": "take the fix home: a calibrated sentence-transformers folder, ONNX graph, vectors file or FAISS index",
}

FORMATS = ("sentence-transformers", "onnx")  # isoscope.export.run.EXPORT_FORMATS (a test keeps the two equal)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--calibrate", required=True, metavar="METHOD", help=f"the fix to export: {methods_help()}")
    p.add_argument(
        "--fit-on",
        default=None,
        metavar="CORPUS",
        help="with a model: the corpus to fit on (one text per line, or a table with a text column)",
    )
    p.add_argument("--text-column", default=None, help="column holding the texts (default: text, sentence, ...)")
    add_vectors_argument(
        p, "a vectors file (FILE[:COLUMN]): fit on its rows and write them calibrated in its own format to --out"
    )
    p.add_argument("--out", required=True, help="the folder (a model) or file (vectors, --faiss) to write")
    p.add_argument(
        "--format",
        choices=FORMATS,
        default="sentence-transformers",
        help="with a model: a sentence-transformers folder (default), or one ONNX graph (any method, "
        "the flow too) with the tokenizer beside it",
    )
    p.add_argument(
        "--int8",
        action="store_true",
        help="with --format onnx: quantise the graph's weights to int8 "
        "(the Spearman loss against fp32 on the fit texts is stated)",
    )
    p.add_argument(
        "--faiss",
        action="store_true",
        help="with --vectors: write a FAISS index of the raw rows whose "
        "pre-transform is the fitted map (--out FILE.faiss)",
    )
    add_force_argument(p)
    add_flow_arguments(p)
    add_model_arguments(p, precision=False, fp32_note="exported from its fp32 weights")
    add_json_argument(p)


def _progress(args: argparse.Namespace, stage: str):
    return epoch_bar(args) if stage == "fit" else progress_bar(args, stage)


def _vectors(args: argparse.Namespace, space) -> dict:
    from isoscope.data import load_vector_file
    from isoscope.export.run import export_vectors

    if args.fit_on is not None:
        raise InputError("--vectors is fitted on its own rows; drop --fit-on")
    if args.format != "sentence-transformers" or args.int8:
        raise InputError("--format and --int8 export a model; with --vectors the output is the file's format")
    from isoscope.data.outputs import FAISS, VECTOR_FILES
    from isoscope.data.vectors import vector_format

    kind = FAISS if args.faiss else VECTOR_FILES.get(vector_format(space.vectors))
    if kind is not None:  # a format written as its own kind is checked here, before the file is read
        output_from_args(args, args.out, kind)
    table = load_vector_file(space.vectors, column=space.column)
    calibrator = calibrator_from_args(args, args.calibrate)
    calibrator.fit(table.vectors, progress=_progress(args, "fit"))
    return export_vectors(
        space.vectors, space.column, calibrator, args.out, vectors=table.vectors, faiss=args.faiss, force=args.force
    ).to_dict()


def run(args: argparse.Namespace) -> dict:
    from isoscope.data import load_corpus
    from isoscope.export.run import fit_and_export

    space = space_from_args(args, "export")
    if space.vectors:  # a file to export calibrated; else a model to export with its calibration
        result = _vectors(args, space)
    else:
        if args.faiss:
            raise InputError("--faiss indexes a vectors file: give --vectors FILE[:COLUMN]")
        if args.fit_on is None:
            raise InputError("give --fit-on CORPUS: the texts to fit the calibrator on")
        if args.int8 and args.format != "onnx":
            raise InputError("--int8 quantises an ONNX export: add --format onnx")
        from isoscope.data.outputs import EXPORT_FOLDER

        output_from_args(args, args.out, EXPORT_FOLDER)
        corpus = load_corpus(args.fit_on, text_column=args.text_column)
        calibrator = calibrator_from_args(args, args.calibrate)
        encoder = encoder_for(args, space)
        result = fit_and_export(
            encoder,
            corpus.texts,
            calibrator,
            args.out,
            corpus=corpus.name,
            pooling=space.pooling,
            config=embed_config(args),
            cache=cache_from_args(args),
            progress=lambda stage: _progress(args, stage),
            format=args.format,
            quantize=args.int8,
        ).to_dict()
    before, after = result["before"], result["after"]
    lines = [
        f"{result['method']} ({result['dim_in']} -> {result['dim_out']} dims) fitted on {result['n_fit']} "
        f"{'rows' if space.vectors else 'texts'} of {result['corpus']}",
        f"wrote {result['format']} to {result['out']}",
        f"avg cosine of random pairs {before['avg_cosine']:.3f} -> {after['avg_cosine']:.3f}, "
        f"IsoScore {before['isoscore']:.3f} -> {after['isoscore']:.3f}",
    ]
    emit(args, result, lines)
    return result
