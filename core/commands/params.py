"""``python -m isoscope params``: parameter budget of an encoder and its embedding share (Chung et al. 2020)."""

from __future__ import annotations

import argparse

from isoscope.anatomy.budget import PRESET_NAMES, Architecture, ParameterBudget, get_preset, parameter_budget
from isoscope.commands.common import add_json_argument, emit
from isoscope.errors import InputError

# isoscope --help's line for this command, read from the file (isoscope.cli imports only the chosen command)
COMMAND = {"order": 60, "help": "parameter budget: embedding vs transformer, pre-training vs fine-tuning"}

SIZE_OPTIONS = ("vocab_size", "hidden_size", "layers", "intermediate_size")


def add_arguments(p: argparse.ArgumentParser) -> None:
    src = p.add_argument_group("what to count (one of: --preset, --model, or explicit sizes)")
    src.add_argument("--preset", default=None, help=f"{', '.join(PRESET_NAMES)}, or 'all'")
    src.add_argument("--model", default=None, help="model directory or Hugging Face id ('default' = embedded model)")
    sizes = p.add_argument_group("explicit sizes (--vocab-size, --hidden-size, --layers, --intermediate-size)")
    sizes.add_argument("--vocab-size", type=int, default=None)
    sizes.add_argument("--hidden-size", type=int, default=None)
    sizes.add_argument("--layers", type=int, default=None, help="number of transformer layers")
    sizes.add_argument("--intermediate-size", type=int, default=None)
    sizes.add_argument("--max-position-embeddings", type=int, default=512)
    sizes.add_argument("--type-vocab-size", type=int, default=2)
    tie = sizes.add_mutually_exclusive_group()
    tie.add_argument("--tied", dest="tied", action="store_true", default=True, help="output embedding = word table")
    tie.add_argument("--untied", dest="tied", action="store_false", help="separate output embedding")
    sizes.add_argument("--input-embedding-size", type=int, default=None, help="E_in (default: hidden size)")
    sizes.add_argument("--output-embedding-size", type=int, default=None, help="E_out (untied; default: hidden)")
    sizes.add_argument("--no-pooler", action="store_true", help="no pooler layer")
    sizes.add_argument("--no-mlm-transform", action="store_true", help="MLM head without the dense + LayerNorm")
    add_json_argument(p)


def _architectures(args: argparse.Namespace) -> list[Architecture]:
    given = {k: getattr(args, k) for k in SIZE_OPTIONS}
    has_sizes = any(v is not None for v in given.values())
    sources = [bool(args.preset), bool(args.model), has_sizes]
    if sum(sources) != 1:
        raise InputError(
            "give exactly one of --preset NAME, --model PATH, or explicit sizes (--vocab-size --hidden-size "
            f"--layers --intermediate-size); presets: {', '.join(PRESET_NAMES)}"
        )
    if args.preset:
        if args.preset.strip().lower() == "all":
            return [get_preset(name) for name in PRESET_NAMES]
        return [get_preset(args.preset)]
    if args.model:
        from isoscope.anatomy.budget import architecture_from_model
        from isoscope.encode.models import load_encoder

        encoder = load_encoder(args.model, "cpu")  # counted, never run: no GPU memory for it
        return [architecture_from_model(encoder.model, name=encoder.name)]
    missing = [f"--{k.replace('_', '-')}" for k, v in given.items() if v is None]
    if missing:
        raise InputError(f"explicit sizes need {', '.join(missing)} too")
    return [
        Architecture(
            vocab_size=args.vocab_size,
            hidden_size=args.hidden_size,
            num_layers=args.layers,
            intermediate_size=args.intermediate_size,
            max_position_embeddings=args.max_position_embeddings,
            type_vocab_size=args.type_vocab_size,
            tied=args.tied,
            input_embedding_size=args.input_embedding_size,
            output_embedding_size=args.output_embedding_size,
            pooler=not args.no_pooler,
            mlm_transform=not args.no_mlm_transform,
        )
    ]


def _line(b: ParameterBudget) -> str:
    return (
        f"{b.architecture.name:<30} embedding {b.input_embedding:>13,} + head {b.output_embedding:>12,}  "
        f"transformer {b.transformer:>13,}  total pre-training {b.pretraining_total:>13,} / fine-tuning "
        f"{b.finetuning_total:>13,}  embedding share {b.embedding_share_pretraining:6.1%} / "
        f"{b.embedding_share_finetuning:6.1%}"
    )


def run(args: argparse.Namespace) -> dict:
    budgets = [parameter_budget(a) for a in _architectures(args)]
    rows = [b.to_dict() for b in budgets]
    result: dict[str, object] = rows[0] if len(rows) == 1 else {"presets": rows}
    emit(args, result, [_line(b) for b in budgets])
    return result
