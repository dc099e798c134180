"""``python -m isoscope compare``: how two spaces of the same texts differ (CKA, neighbour overlap, hubness, maps).

A space is ``model=...,init=pretrained|random,pooling=mean,calibrate=none``, ``vectors=FILE[:COLUMN]`` or
``model=openai:NAME`` (``isoscope.sources.spec``), e.g. ``--a pooling=mean --b pooling=cls,calibrate=whitening``
or ``--a vectors=openai.parquet:emb --b pooling=mean``. A vectors file gives the vectors of the --input texts by
its text column (or row by row when it has none); without --input its own texts (rows) are compared. With
``--layers`` also the linear CKA of every mean-pooled layer of A's model against every layer of B's (embeddings
first), one forward pass per model.
"""

from __future__ import annotations

import argparse
import time

from isoscope.commands.common import (
    add_endpoint_arguments,
    add_json_argument,
    add_model_arguments,
    cache_from_args,
    embed_config,
    emit,
    encoder_loader,
    progress_bar,
    space_sources,
)
from isoscope.data.inputs import INPUT_KINDS
from isoscope.errors import InputError

# isoscope --help's line for this command, read from the file (isoscope.cli imports only the chosen command)
COMMAND = {
    "order": 80,
    "help": "compare two spaces of the same texts: CKA, neighbour overlap, hubness and aligned maps (and CKA per layer)",
}

MAP_CHOICES: tuple[str, ...] = ("pca", "umap", "tsne", "none")
SPEC_HELP = (
    "comma-separated key=value: model= (folder, hub id, landscape:FOLDER[:INIT[:EPOCH[:TASK]]] or openai:NAME; "
    "default --model), init=pretrained|random[:SEED], pooling= (default mean), calibrate= (default none); or "
    "vectors=FILE[:COLUMN] (text=COLUMN: its text column), vectors computed elsewhere"
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--input",
        default=None,
        help="texts: corpus (.txt/.csv/.tsv/.jsonl/.parquet) or pairs file (optional when a space is vectors=: "
        "then its file's rows)",
    )
    p.add_argument("--kind", choices=INPUT_KINDS, default="auto", help="how to read --input (default: auto)")
    p.add_argument("--text-column", default=None, help="corpus: column holding the texts (default: text)")
    p.add_argument("--a", default="", metavar="SPEC", help=f"space A: {SPEC_HELP}")
    p.add_argument("--b", default="", metavar="SPEC", help="space B, same form as --a")
    p.add_argument("--k", type=int, default=10, help="neighbours per text for overlap and hubness (default: 10)")
    p.add_argument("--layers", action="store_true", help="also the layer x layer CKA of A's and B's models")
    p.add_argument("--map", choices=MAP_CHOICES, default="pca", help="2-D maps to align (default: pca)")
    p.add_argument("--map-points", type=int, default=5000, help="texts on the maps, seeded sample (default: 5000)")
    p.add_argument("--top", type=int, default=10, help="texts listed as most changed and as hubs (default: 10)")
    p.add_argument(
        "--keep-duplicates", action="store_true", help="keep repeated texts (default: each distinct text once)"
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the map samples (default: 0)")
    add_model_arguments(p, pooling=False)
    add_endpoint_arguments(p)
    add_json_argument(p)


def _check_options(args: argparse.Namespace) -> None:
    if args.k < 1:
        raise InputError(f"--k must be >= 1; got {args.k}")
    if args.map_points < 10:
        raise InputError(f"--map-points must be >= 10; got {args.map_points}")
    if args.top < 0:
        raise InputError(f"--top must be >= 0; got {args.top}")


def _layers(a, b) -> dict:
    from isoscope.comparison import spaces_layer_cka

    matrix = spaces_layer_cka(a, b)
    return {
        "layers_a": a.layer_names,
        "layers_b": b.layer_names,
        "cka_layers": matrix.linear,
        "cka_layers_debiased": matrix.debiased,
    }


def _fmt(x: float | None, spec: str = ".3f") -> str:
    return "n/a" if x is None or x != x else format(x, spec)


def _lines(result: dict) -> list[str]:
    hub = result["hubness"]
    hist = {r["shared"]: r["share"] for r in result["overlap_histogram"]}
    k = result["k"]
    lines = [
        f"{result['n_texts']} texts ({result['n_read']} read)",
        f"A: {result['a']['spec']}  [{result['a']['model']}, {result['a']['dims']} dims]",
        f"B: {result['b']['spec']}  [{result['b']['model']}, {result['b']['dims']} dims]",
        f"CKA linear {_fmt(result['cka_linear'])}  debiased {_fmt(result['cka_debiased'])}",
        f"overlap@{k} {_fmt(result['overlap_at_k'])}  (all {k} shared: {hist.get(k, 0):.1%}, none: {hist.get(0, 0):.1%})",
        f"{'hubness':<10}{'skewness':>9}{'anti-hubs':>11}{'max N_k':>9}",
    ]
    for side in ("a", "b"):
        h = hub[side]
        lines.append(
            f"  {side.upper():<8}{_fmt(h['skewness'], '9.2f')}{h['antihub_share']:>11.1%}{h['max_occurrence']:>9}"
        )
    m = result["map"]
    if m is not None:
        lines.append(
            f"{m['method']} maps: Procrustes disparity {_fmt(result['procrustes_disparity'])}; trustworthiness "
            f"A {_fmt(m['trustworthiness_a'])} B {_fmt(m['trustworthiness_b'])}, continuity "
            f"A {_fmt(m['continuity_a'])} B {_fmt(m['continuity_b'])} ({m['quality_points']} texts, k={m['quality_k']})"
        )
    if result["most_changed"]:
        lines.append("most changed neighbourhoods (overlap, text):")
        lines += [f"  {r['overlap']:.3f}  {r['text'][:100]}" for r in result["most_changed"]]
    if "cka_layers" in result:
        lines.append("linear CKA, layers of A (rows) x layers of B (columns), layer 0 = embeddings:")
        lines.append("        " + "".join(f"{name:>9}" for name in result["layers_b"]))
        for name, row in zip(result["layers_a"], result["cka_layers"], strict=True):
            lines.append(f"{name:>8}" + "".join(f"{_fmt(v, '9.3f')}" for v in row))
    return lines


def _texts(args: argparse.Namespace, specs: list, sources):
    """(the texts read, the name they are reported under): --input, or the first vectors file's rows."""
    from isoscope.data import TextInput, load_input

    if args.input is not None:
        return load_input(args.input, args.kind, args.text_column), args.input  # a pairs file gives its sentences
    table = next((t for s in specs if (t := sources.rows_of(s)) is not None), None)  # the first file's rows
    if table is None:
        raise InputError("give --input: the texts to embed in both spaces (optional only when a space is vectors=)")
    texts = table.texts if table.texts is not None else [f"row {i}" for i in range(len(table))]
    return TextInput(list(texts), None, [], table.origin.file), table.name


def _side(space) -> dict:
    side = {"spec": space.spec.label(), "model": space.model_name, "dims": int(space.vectors.shape[1])}
    if space.origin is not None:
        side["vectors"] = space.origin.to_dict()
    return side


def run(args: argparse.Namespace) -> dict:
    from isoscope.comparison import compare_spaces
    from isoscope.sources import build_spaces, parse_space

    _check_options(args)
    specs = [parse_space(args.a), parse_space(args.b)]  # before loading anything
    if args.precision != "fp32" and any(s.init == "random" or (s.model or "").startswith("landscape:") for s in specs):
        raise InputError(
            f"--precision {args.precision} quantises pretrained models only; compare random-init or "
            "landscape spaces with --precision fp32"
        )
    sources = space_sources(args)  # reads each vectors file once (the texts may come from one)
    read, input_name = _texts(args, specs, sources)
    texts = read.texts if args.keep_duplicates else read.distinct_texts()
    rows = None if args.keep_duplicates else read.distinct_rows()
    if len(texts) < args.k + 1:
        raise InputError(f"--k {args.k} needs at least {args.k + 1} distinct texts; {input_name} has {len(texts)}")
    start = time.perf_counter()
    spaces = build_spaces(
        specs,
        texts,
        layers=args.layers,
        loader=encoder_loader(args),
        config=embed_config(args),
        progress=lambda stage: progress_bar(args, stage, unit="epoch" if stage.startswith("calibrate") else "text"),
        cache=cache_from_args(args),
        sources=sources,
        rows=rows,
        n_input=len(read),
    )
    embed_seconds = time.perf_counter() - start
    a, b = spaces
    report = compare_spaces(
        a.vectors,
        b.vectors,
        args.k,
        maps=args.map != "none",
        map_method=args.map if args.map != "none" else "pca",
        map_points=args.map_points,
        seed=args.seed,
        progress=lambda stage: progress_bar(args, stage),
    )
    result = {
        "input": input_name,
        "n_read": len(read),
        "a": _side(a),
        "b": _side(b),
        **report.to_dict(texts, args.top),
    }
    if args.layers:
        t = time.perf_counter()
        result.update(_layers(a, b))
        result["seconds"]["cka_layers"] = time.perf_counter() - t
    result["seconds"]["embed"] = embed_seconds
    result["warnings"] = [*read.warnings, *a.warnings, *b.warnings]
    emit(args, result, _lines(result))
    return result
