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

from isoscope.encode.pooling import pooling_help
from isoscope.encode.precision import PRECISIONS
from isoscope.errors import InputError, printable

PRECISION_HELP = (
    "weights and arithmetic of the encoder's Linear layers: fp32, or int8 (dynamic int8 quantisation on the CPU: "
    "about 2x faster, a few tenths of a Spearman point; cached separately) (default: fp32)"
)

if TYPE_CHECKING:
    from isoscope.cache import ArrayCache
    from isoscope.encode.embed import EmbedConfig
    from isoscope.encode.models import Encoder


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
    model_help = "model directory or Hugging Face id (default: embedded all-MiniLM-L6-v2)"
    p.add_argument("--model", default="", help=f"{model_help}; {fp32_note}" if fp32_note else model_help)
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


def add_json_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")


def encoder_from_args(args: argparse.Namespace) -> Encoder:
    """The model ``--model`` names at ``--precision``; the encoder handed to ``isoscope.cli.main(encoder=...)`` when
    it names the default (so tests and notebooks load the model once), quantised when int8 is asked for."""
    from isoscope.encode.models import DEFAULT_MODEL_ALIASES, load_encoder, with_precision

    precision = getattr(args, "precision", "fp32")
    given = getattr(args, "preloaded_encoder", None)
    if given is not None and (getattr(args, "model", "") or "").strip() in DEFAULT_MODEL_ALIASES:
        return with_precision(given, precision)
    return load_encoder(args.model, precision=precision)


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
    """A (done, total[, value]) callback drawing a tqdm bar of ``unit`` on stderr.

    A third value (a flow's bits/dim) is shown after the bar as ``postfix=value``.
    """
    from tqdm.auto import tqdm

    state: dict[str, object] = {}

    def update(done: int, total: int, value: float | None = None) -> None:
        if getattr(args, "quiet", False):
            return
        bar = state.get("bar")
        if bar is None:
            bar = state["bar"] = tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, leave=False)
        if value is not None:
            bar.set_postfix({postfix: f"{value:.4f}"})
        bar.update(done - bar.n)
        if done >= total:
            bar.close()

    return update


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
