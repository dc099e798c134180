"""Options and helpers shared by sub-commands.

Imported by every command module when ``isoscope COMMAND --help`` builds its parser, so nothing heavy is
imported here at module level: numpy, torch and transformers are imported inside the helpers that need them.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from isoscope.encode.endpoints import DEFAULT_BASE_URL, DEFAULT_KEY_ENV, is_endpoint_model
from isoscope.encode.pooling import pooling_help
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
    from isoscope.cache import ArrayCache
    from isoscope.data.inputs import InputKind, VectorInput
    from isoscope.encode.embed import EmbedConfig
    from isoscope.encode.endpoints import Endpoint
    from isoscope.encode.models import Encoder
    from isoscope.encode.remote import EndpointCache
    from isoscope.sources import SourceReaders, SpaceSpec


def add_model_arguments(
    p: argparse.ArgumentParser,
    pooling: bool = True,
    batch_size: int = 64,
    batch_help: str = "at least this many texts per forward pass; short texts are batched up to a token budget",
    cache_help: str = "do not read or write the embedding cache",
    precision: bool = True,
    precision_help: str = PRECISION_HELP,
    fp32_note: str = "",
) -> None:
    """Model options; ``precision=False`` leaves ``--precision`` out (a command that needs fp32 weights, or that
    compares both precisions itself) and sets ``args.precision = "fp32"``; ``fp32_note`` says why in the
    ``--model`` help."""
    p.add_argument("--model", default="", help=f"{MODEL_HELP}; {fp32_note}" if fp32_note else MODEL_HELP)
    if precision:
        p.add_argument("--precision", choices=PRECISIONS, default="fp32", help=precision_help)
    else:
        p.set_defaults(precision="fp32")
    if pooling:
        p.add_argument(
            "--pooling",
            default="mean",
            help=f"{pooling_help()} (default: mean)",
        )
    p.add_argument("--max-length", type=int, default=256, help="max tokens per text (default: 256)")
    p.add_argument("--batch-size", type=int, default=batch_size, help=f"{batch_help} (default: {batch_size})")
    p.add_argument("--no-cache", action="store_true", help=cache_help)
    p.add_argument("--quiet", action="store_true", help="no progress bars")


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


def check_space_options(args: argparse.Namespace, command: str) -> None:
    """InputError for model options given with ``--vectors`` (the file is the space)."""
    if not getattr(args, "vectors", None):
        return
    if (getattr(args, "model", "") or "").strip():
        raise InputError(f"{command}: --vectors is the space; drop --model (or drop --vectors to embed with it)")
    if getattr(args, "precision", "fp32") != "fp32":
        raise InputError(f"{command}: --precision is a model's; the vectors of --vectors are used as they are")
    if getattr(args, "pooling", "mean") != "mean":
        raise InputError(f"{command}: --pooling is a model's; the vectors of --vectors are pooled already")


def endpoint_from_args(args: argparse.Namespace, model: str | None = None, base_url: str | None = None) -> Endpoint:
    """The endpoint of ``--model openai:NAME`` (or of ``model``), at ``base_url`` or ``--base-url``."""
    from isoscope.encode.endpoints import endpoint_for

    return endpoint_for(
        model or args.model, base_url or getattr(args, "base_url", None), getattr(args, "api_key_env", None)
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


def space_from_args(args: argparse.Namespace) -> SpaceSpec:
    """The space ``--vectors`` or ``--model`` / ``--pooling`` describe (no --calibrate: commands fit their own)."""
    from isoscope.data.vectors import parse_vectors_ref
    from isoscope.sources import SpaceSpec

    if getattr(args, "vectors", None):
        file, column = parse_vectors_ref(args.vectors)
        return SpaceSpec(vectors=file, column=column)
    model = (getattr(args, "model", "") or "").strip()
    if is_endpoint_model(model):
        return SpaceSpec(model=model)
    return SpaceSpec(model=model, pooling=getattr(args, "pooling", "mean"))


def vector_input(
    args: argparse.Namespace, source: str | None, kind: InputKind = "auto", desc: str = "embed"
) -> VectorInput | None:
    """The texts and vectors of ``--vectors`` (``isoscope.data.load_vector_input``) or of ``--model openai:NAME``
    (``source``'s texts through the endpoint, with a progress bar); None for a model this process runs."""
    from isoscope.data.inputs import VectorInput, load_input, load_vector_input

    if getattr(args, "vectors", None):
        return load_vector_input(args.vectors, source, kind=kind, text_column=args.text_column)
    if not is_endpoint_model(getattr(args, "model", "")):
        return None
    from isoscope.encode.remote import embed_endpoint

    endpoint = endpoint_from_args(args)
    if source is None:
        raise InputError(f"--model {args.model} embeds texts: give --input")
    texts = load_input(source, kind, args.text_column)
    vectors = embed_endpoint(endpoint, texts.texts, progress_bar(args, desc), endpoint_cache(args))
    return VectorInput(texts, vectors, endpoint.name, endpoint.fingerprint)


def option_name(field: str) -> str:
    """The option that sets a config field: ``knn_k`` -> ``--knn-k`` (for a library check's messages)."""
    return "--" + field.replace("_", "-")


def add_json_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")


def encoder_from_args(args: argparse.Namespace) -> Encoder:
    """The model ``--model`` names at ``--precision``; the encoder handed to ``isoscope.cli.main(encoder=...)`` when
    it names the default (so tests and notebooks load the model once), quantised when int8 is asked for."""
    from isoscope.encode.models import DEFAULT_MODEL_ALIASES, load_encoder, with_precision

    if is_endpoint_model(getattr(args, "model", "")):
        raise InputError(
            f"{args.model} is an embeddings endpoint; this needs a model that runs here (its layers or tokens)"
        )
    precision = getattr(args, "precision", "fp32")
    given = getattr(args, "preloaded_encoder", None)
    if given is not None and (getattr(args, "model", "") or "").strip() in DEFAULT_MODEL_ALIASES:
        return with_precision(given, precision)
    return load_encoder(args.model, precision=precision)


def encoder_loader(args: argparse.Namespace) -> Callable[[str], Encoder]:
    """model name -> Encoder at ``--precision``, each name loaded once; an empty name is ``--model`` (the encoder
    handed to ``isoscope.cli.main(encoder=...)`` serves every name of the default model)."""
    loaded: dict[str, Encoder] = {}

    def load(name: str) -> Encoder:
        name = name or args.model
        if name not in loaded:
            one = argparse.Namespace(
                model=name, preloaded_encoder=getattr(args, "preloaded_encoder", None), precision=args.precision
            )
            loaded[name] = encoder_from_args(one)
        return loaded[name]

    return load


def embed_config(args: argparse.Namespace) -> EmbedConfig:
    from isoscope.encode.embed import EmbedConfig

    if args.max_length < 2 or args.batch_size < 1:
        raise InputError("--max-length must be >= 2 and --batch-size >= 1")
    return EmbedConfig(batch_size=args.batch_size, max_length=args.max_length)


def cache_from_args(args: argparse.Namespace) -> ArrayCache | None:
    from isoscope.cache import ArrayCache

    return None if getattr(args, "no_cache", False) else ArrayCache()


def progress_bar(
    args: argparse.Namespace, desc: str, unit: str = "text", postfix: str = "value"
) -> Callable[..., None]:
    """A (done, total[, value]) callback drawing a tqdm bar of ``unit`` on stderr (nothing with ``--quiet``).

    A third value (a flow's bits/dim) is shown after the bar as ``postfix=value``
    (``isoscope.space.progress.progress_callback``, the library's bars).
    """
    from isoscope.space.progress import progress_callback

    bar = progress_callback(desc, unit, postfix, enabled=not getattr(args, "quiet", False), file=sys.stderr)
    return bar or _no_progress


def _no_progress(*_args: object) -> None:
    return None


def epoch_bar(args: argparse.Namespace, desc: str = "flow") -> Callable[[int, int, float], None]:
    """A (epoch, n_epochs, bits_per_dim) callback: a bar of flow epochs showing bits/dim."""
    return progress_bar(args, desc, unit="epoch", postfix="bits_per_dim")


def emit(args: argparse.Namespace, result: dict, text_lines: list[str]) -> None:
    """Print JSON (``--json``) or human-readable lines."""
    if getattr(args, "json", False):
        from isoscope.data.export import to_jsonable

        print(json.dumps(to_jsonable(result)))
    else:
        print("\n".join(printable(line) for line in text_lines))  # names echoed in lines cannot drive the terminal
