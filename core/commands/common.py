"""Options and helpers shared by sub-commands.

Imported by every command module when ``isoscope COMMAND --help`` builds its parser, so nothing heavy is
imported here at module level: numpy, torch and transformers are imported inside the helpers that need them.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from isoscope.encode.device import DEVICE_HELP, DTYPES, dtype_help, parse_device
from isoscope.encode.endpoints import DEFAULT_BASE_URL, DEFAULT_KEY_ENV, is_endpoint_model
from isoscope.encode.pooling import PoolingSpec, parse_pooling, pooling_help
from isoscope.encode.precision import PRECISIONS
from isoscope.errors import InputError, printable

PRECISION_HELP = (
    "weights and arithmetic of the encoder's Linear layers: fp32, or int8 (dynamic int8 quantisation in ONNX Runtime "
    "on the CPU: about 1.7x the fp32 ONNX speed and 5x PyTorch's, a few hundredths of a Spearman point on STS-B; "
    "cached separately) (default: fp32)"
)

VECTORS_HELP = (
    "vectors computed elsewhere instead of a model: FILE or FILE:COLUMN (.npy, .parquet, .feather/.arrow, "
    ".safetensors, or a Hugging Face datasets folder); its rows are the texts (its text column: --text-column), "
    "or with --input the vectors of those texts are looked up in it (by its text column, else row by row)"
)
MODEL_HELP = (
    "model directory or Hugging Face id (default: embedded all-MiniLM-L6-v2), or openai:NAME: an embeddings "
    "endpoint (see --base-url)"
)

if TYPE_CHECKING:
    from pathlib import Path

    from isoscope.cache import ArrayCache
    from isoscope.data.inputs import InputKind, VectorInput
    from isoscope.data.outputs import OutputKind
    from isoscope.encode.embed import EmbedConfig
    from isoscope.encode.endpoints import Endpoint
    from isoscope.encode.models import Encoder
    from isoscope.encode.remote import EndpointCache
    from isoscope.sources import SourceReaders, SpaceSpec


def pooling_option(text: str) -> PoolingSpec:
    """``--pooling``'s type: the name parsed once, where the user typed it (its message is the usage error)."""
    try:
        return parse_pooling(text)
    except InputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def device_option(text: str) -> str:
    """``--device``'s type: the spelling checked where the user typed it (whether this machine has it: on loading)."""
    try:
        return parse_device(text)
    except InputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_device_arguments(p: argparse.ArgumentParser) -> None:
    """``--device`` and ``--dtype`` (``isoscope.encode.device``): where the model runs and in which float type."""
    p.add_argument("--device", type=device_option, default="auto", metavar="DEVICE", help=DEVICE_HELP)
    p.add_argument(
        "--dtype", choices=DTYPES, default="float32", help=dtype_help().replace("%", "%%")
    )  # argparse formats help with %


def add_model_arguments(
    p: argparse.ArgumentParser,
    *,
    pooling: bool = True,
    max_length: int = 256,
    batch_size: int = 64,
    batch_help: str = "at least this many texts per forward pass; short texts are batched up to a token budget",
    cache_help: str = "do not read or write the embedding cache",
    precision: bool = True,
    precision_help: str = PRECISION_HELP,
    fp32_note: str = "",
    prompt: bool = True,
) -> None:
    """Model options (``--model``, ``--device``, ``--dtype``, ``--precision``, ``--pooling``, ``--prompt``,
    ``--prompt-text``, ``--max-length``, ``--batch-size``, ``--no-cache``, ``--quiet``) with this command's defaults; ``precision=False`` leaves ``--precision`` out (a command that needs fp32 weights, or that
    compares both precisions itself) and sets ``args.precision = "fp32"``; ``fp32_note`` says why in the
    ``--model`` help."""
    p.add_argument("--model", default="", help=f"{MODEL_HELP}; {fp32_note}" if fp32_note else MODEL_HELP)
    add_device_arguments(p)
    if precision:
        p.add_argument("--precision", choices=PRECISIONS, default="fp32", help=precision_help)
    else:
        p.set_defaults(precision="fp32")
    if pooling:
        p.add_argument(
            "--pooling",
            type=pooling_option,
            default=None,
            metavar="POOLING",
            help=f"{pooling_help()} (default: model, the model's own recipe, for a sentence-transformers model; "
            "else mean, enc_mean for T5)",
        )
    if prompt:
        p.add_argument(
            "--prompt",
            default=None,
            metavar="NAME",
            help="one of the model's prompts (its config_sentence_transformers.json, e.g. query or document), put "
            "before every text (default: the model's default prompt, if it names one)",
        )
        p.add_argument("--prompt-text", default=None, metavar="TEXT", help="put TEXT before every text instead")
    p.add_argument("--max-length", type=int, default=max_length, help=f"max tokens per text (default: {max_length})")
    p.add_argument("--batch-size", type=int, default=batch_size, help=f"{batch_help} (default: {batch_size})")
    p.add_argument("--no-cache", action="store_true", help=cache_help)
    p.add_argument(
        "--quiet",
        action="store_true",
        help="no progress, bars or lines (nor the plan isoscope atlas prints before it builds); warnings still go to "
        "stderr",
    )


def add_endpoint_arguments(p: argparse.ArgumentParser) -> None:
    """``--base-url`` and ``--api-key-env``, for ``--model openai:NAME`` (and ``model=openai:NAME`` specs)."""
    p.add_argument(
        "--base-url",
        default=None,
        help=f"with openai:NAME models: the server's address, any server speaking OpenAI's /v1/embeddings "
        f"(Ollama, vLLM, text-embeddings-inference, infinity, ...) (default: {DEFAULT_BASE_URL})",
    )
    p.add_argument(
        "--api-key-env",
        default=None,
        metavar="NAME",
        help=f"with openai:NAME models: the environment variable holding the API key (default: {DEFAULT_KEY_ENV}); "
        "the key is sent to the server only, never printed, cached or saved",
    )


def add_vectors_argument(p: argparse.ArgumentParser, help_text: str = VECTORS_HELP) -> None:
    p.add_argument("--vectors", default=None, metavar="FILE[:COLUMN]", help=help_text)


def space_from_args(args: argparse.Namespace, command: str) -> SpaceSpec:
    """The space a command's options name, decided once (and kept on ``args``): ``--vectors`` (a file's rows),
    ``--model openai:NAME`` (an endpoint), or a model this process runs with ``--pooling`` (None: the model's
    default, decided when it is loaded). InputError for options that belong to another kind of space.
    No ``--calibrate``: commands fit their own."""
    from isoscope.sources import SpaceSpec

    if isinstance(given := getattr(args, "space", None), SpaceSpec):
        return given
    vectors = getattr(args, "vectors", None)
    model = (getattr(args, "model", "") or "").strip()
    pooling = getattr(args, "pooling", None)
    if vectors:
        from isoscope.data.vectors import parse_vectors_ref

        if model:
            raise InputError(f"{command}: --vectors is the space; drop --model (or drop --vectors to embed with it)")
        if getattr(args, "precision", "fp32") != "fp32":
            raise InputError(f"{command}: --precision is a model's; the vectors of --vectors are used as they are")
        if pooling is not None:
            raise InputError(f"{command}: --pooling is a model's; the vectors of --vectors are pooled already")
        if getattr(args, "prompt", None) is not None or getattr(args, "prompt_text", None) is not None:
            raise InputError(f"{command}: a prompt is a model's; the vectors of --vectors are embedded already")
        file, column = parse_vectors_ref(vectors)
        spec = SpaceSpec(vectors=file, column=column)
    elif is_endpoint_model(model):
        if pooling is not None:
            raise InputError(f"{command}: --pooling is a model's; {model} is pooled by its server")
        if getattr(args, "prompt", None) is not None:
            raise InputError(f"{command}: {model} names no prompts; give the prompt's text with --prompt-text")
        spec = SpaceSpec(model=model)
    else:
        spec = SpaceSpec(model=model, pooling=pooling)
    args.space = spec
    return spec


def endpoint_from_args(args: argparse.Namespace, model: str | None = None, base_url: str | None = None) -> Endpoint:
    """The endpoint of ``--model openai:NAME`` (or of ``model``), at ``base_url`` or ``--base-url``."""
    from isoscope.encode.endpoints import endpoint_for

    return endpoint_for(
        model or args.model,
        base_url=base_url or getattr(args, "base_url", None),
        api_key_env=getattr(args, "api_key_env", None),
    )


def endpoint_cache(args: argparse.Namespace) -> EndpointCache | None:
    from isoscope.encode.remote import EndpointCache

    return None if getattr(args, "no_cache", False) else EndpointCache()


def space_sources(args: argparse.Namespace) -> SourceReaders:
    """build_spaces' sources: endpoints with the command's --base-url and --api-key-env, its endpoint cache."""
    from isoscope.sources import SourceReaders

    return SourceReaders(
        endpoints=lambda spec: endpoint_from_args(args, spec.model, spec.base_url or None),
        endpoint_cache=endpoint_cache(args),
    )


def vector_input(
    args: argparse.Namespace, space: SpaceSpec, source: str | None, *, kind: InputKind = "auto", desc: str = "embed"
) -> VectorInput | None:
    """The texts of ``source`` (``--text-column``) and their vectors in a space this process runs no model for
    (``isoscope.sources.space_vectors``: a vectors file's rows, an endpoint's answers to the texts with
    ``--prompt-text`` before them, with a progress bar), or without ``source`` a vectors file's own rows; None for
    a model this process runs (the command needs its passes: ``encoder_for``)."""
    from isoscope.data.inputs import VectorInput, load_input, rows_input
    from isoscope.encode.embed import EmbedConfig
    from isoscope.sources import space_vectors

    if space.has_model:
        return None
    readers = space_sources(args)
    if source is None:
        table = readers.rows_of(replace(space, text_column=args.text_column))
        if table is None:
            raise InputError(f"--model {space.model} embeds texts: give --input")
        return rows_input(table)
    texts = load_input(source, kind, args.text_column)
    config = EmbedConfig(prompt=getattr(args, "prompt_text", None))
    got = space_vectors(space, texts.texts, readers=readers, config=config, progress=progress_bar(args, desc))
    texts.warnings = [*got.warnings, *texts.warnings]
    return VectorInput(texts, got.raw, got.model_name, got.fingerprint, got.origin, True, readers.rows_of(space))


def option_name(field: str) -> str:
    """The option that sets a config field: ``knn_k`` -> ``--knn-k`` (for a library check's messages)."""
    return "--" + field.replace("_", "-")


def add_json_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")


def encoder_for(args: argparse.Namespace, space: SpaceSpec) -> Encoder:
    """The encoder of a model space at ``--precision`` (``isoscope.sources.load_space_encoder``: a folder, a hub
    id, a landscape checkpoint); the encoder handed to ``isoscope.cli.main(encoder=...)`` when it names the default
    (so tests and notebooks load the model once). InputError for a space this process cannot run."""
    from isoscope.sources import load_space_encoder

    if not space.has_model:
        raise InputError(f"{space.what()}; this needs a model that runs here (its layers or tokens)")
    return load_space_encoder(space, encoder_loader(args))


def _load_model(args: argparse.Namespace, name: str) -> Encoder:
    """``name`` at ``--precision`` on ``--device`` in ``--dtype``: the preloaded encoder for the default model when
    it is already there in that dtype, else ``load_encoder``. Records what ran for the result (``emit``)."""
    from isoscope.encode.device import resolve_device
    from isoscope.encode.models import DEFAULT_MODEL_ALIASES, load_encoder, with_precision

    precision = getattr(args, "precision", "fp32")
    device, dtype = getattr(args, "device", "auto"), getattr(args, "dtype", "float32")
    given = getattr(args, "preloaded_encoder", None)
    encoder = None
    if given is not None and name.strip() in DEFAULT_MODEL_ALIASES:
        where = "cpu" if precision != "fp32" and parse_device(device) == "auto" else device  # int8: the CPU's
        if str(resolve_device(where)) == given.device and given.dtype == dtype:
            encoder = with_precision(given, precision)
    if encoder is None:
        with hub_bars(args):
            encoder = load_encoder(name, device, precision, dtype=dtype)
    args.ran_on = {"device": encoder.device, "dtype": encoder.dtype}
    return encoder


def encoder_loader(args: argparse.Namespace) -> Callable[[str], Encoder]:
    """model name -> Encoder at ``--precision``, each name loaded once; an empty name is ``--model`` (the encoder
    handed to ``isoscope.cli.main(encoder=...)`` serves every name of the default model)."""
    loaded: dict[str, Encoder] = {}

    def load(name: str) -> Encoder:
        name = name or getattr(args, "model", "") or ""
        if name not in loaded:
            loaded[name] = _load_model(args, name)
        return loaded[name]

    return load


def embed_config(args: argparse.Namespace) -> EmbedConfig:
    from isoscope.encode.embed import EmbedConfig

    if args.max_length < 2 or args.batch_size < 1:
        raise InputError("--max-length must be >= 2 and --batch-size >= 1")
    if getattr(args, "prompt", None) is not None and getattr(args, "prompt_text", None) is not None:
        raise InputError("give --prompt NAME or --prompt-text TEXT, not both")
    return EmbedConfig(
        batch_size=args.batch_size,
        max_length=args.max_length,
        prompt_name=getattr(args, "prompt", None),
        prompt=getattr(args, "prompt_text", None),
    )


def recipe_of(args: argparse.Namespace, space: SpaceSpec, encoder: Encoder) -> str:
    """What ran, in words, for a result's ``recipe`` (``isoscope.encode.embed.describe_run``)."""
    from isoscope.encode.embed import describe_run

    return describe_run(encoder, space.pooling, embed_config(args))


def cache_from_args(args: argparse.Namespace) -> ArrayCache | None:
    from isoscope.cache import ArrayCache

    return None if getattr(args, "no_cache", False) else ArrayCache()


def progress_bar(
    args: argparse.Namespace, desc: str, unit: str = "text", *, postfix: str = "value"
) -> Callable[..., None]:
    """A (done, total[, value]) callback showing the progress of ``unit``s on stderr (nothing with ``--quiet``): a
    tqdm bar on a terminal, whole lines elsewhere (one per stage, at most one per tenth of a long one: a log or CI
    never gets ``\\r`` frames; ``isoscope.space.progress.progress_callback``, the library's bars).

    A third value (a flow's bits/dim) is shown after the bar as ``postfix=value``.
    """
    from isoscope.space.progress import progress_callback

    bar = progress_callback(desc, unit, postfix, enabled=not getattr(args, "quiet", False), file=sys.stderr)
    return bar or _no_progress


def _no_progress(*_args: object) -> None:
    return None


@contextlib.contextmanager
def hub_bars(args: argparse.Namespace) -> Iterator[None]:
    """huggingface_hub's own download bars (a hub model, STS-B) only where ``progress_bar`` draws bars: on a
    terminal without ``--quiet``. In a log their ``\\r`` frames would pile up into one line."""
    from isoscope.space.progress import draws_bars

    if draws_bars(sys.stderr) and not getattr(args, "quiet", False):
        yield
        return
    import warnings

    from huggingface_hub.utils import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars

    was_off = are_progress_bars_disabled()
    with warnings.catch_warnings():  # HF_HUB_DISABLE_PROGRESS_BARS=0 has priority, and says so
        warnings.simplefilter("ignore")
        disable_progress_bars()
    try:
        yield
    finally:
        if not was_off:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                enable_progress_bars()


def epoch_bar(args: argparse.Namespace, desc: str = "flow") -> Callable[[int, int, float], None]:
    """A (epoch, n_epochs, bits_per_dim) callback: a bar of flow epochs showing bits/dim."""
    return progress_bar(args, desc, unit="epoch", postfix="bits_per_dim")


def emit(
    args: argparse.Namespace, result: dict, text_lines: list[str], *, warnings: Sequence[str] | None = None
) -> None:
    """Print the result on stdout: JSON (``--json``) or human-readable lines; then its warnings on stderr, one
    ``warning: ...`` line each, in both modes (``warnings``, else the result's ``"warnings"``; ``--json`` keeps them
    in the object too). Stdout holds the result alone, so ``> out 2> log`` puts every diagnostic in the log;
    ``--quiet`` silences progress, never a warning. A result of a command that ran a model says where and in
    which dtype (``device``, ``dtype``: what ``_load_model`` recorded)."""
    if warnings is None:
        warnings = (result.get("warnings") or []) if isinstance(result, dict) else []
    ran_on = getattr(args, "ran_on", None)
    if isinstance(result, dict) and isinstance(ran_on, dict):
        result = {**result, **{k: v for k, v in ran_on.items() if k not in result}}
    if getattr(args, "json", False):
        from isoscope.data.export import to_jsonable

        print(json.dumps(to_jsonable(result)))
    else:
        print("\n".join(printable(line) for line in text_lines))  # names echoed in lines cannot drive the terminal
    sys.stdout.flush()  # the result before the warnings, where both streams are one terminal
    for warning in warnings:
        print(f"warning: {printable(warning)}", file=sys.stderr)


# ---------------------------------------------------------------- outputs (isoscope.data.outputs)

# every option that names something a command reads: an output is compared with all of them
INPUT_OPTIONS: tuple[str, ...] = (
    *("input", "vectors", "pairs", "fit_on", "beir", "table", "queries_vectors", "docs_vectors", "qrels"),
    *("model", "retrieval", "stsb_dir", "data_file"),
)


def add_force_argument(p: argparse.ArgumentParser) -> None:
    """``--force``: replace an existing file at the output that is not one the command writes."""
    p.add_argument(
        "--force",
        action="store_true",
        help="replace an existing file at the output that is not one this command writes (another format, "
        "or not Isoscope's); never a folder, never an input",
    )


def output_from_args(args: argparse.Namespace, value: str, kind: OutputKind, *, option: str = "--out") -> Path:
    """``isoscope.data.outputs.check_output`` of ``value`` (the ``option`` naming it) against every input the
    command's options name (``INPUT_OPTIONS``) and ``--force``, before any work."""
    from isoscope.data.outputs import check_output

    inputs = [(option_name(name), getattr(args, name, None)) for name in INPUT_OPTIONS]
    return check_output(value, kind=kind, inputs=inputs, force=getattr(args, "force", False), option=option)
