"""A sentence-transformers recipe checked before it runs: ONE pass over its head modules, in order, before any
module is built or any weight allocated (``check_recipe``; ``isoscope.encode.recipe.load_recipe`` runs it first).

For each module after the Transformer, from its parsed ``config.json``:

- only the keys sentence-transformers itself writes for that module type (``ALLOWED_KEYS``, every version's
  spelling): a key it never writes (``init_weight``, ...) would reach the module's constructor as it is;
- each value's type and range; a Pooling's modes from sentence-transformers' list;
- a Dense's activation taken from ``ACTIVATIONS``, torch's own activation modules looked up by name, never
  imported by the dotted path a file names (``torch.nn.Module``, ``os.system`` and ``torch.nosuch.Thing`` are
  refused in one line);
- the dimensions chained: the transformer's hidden size (its ``config.json``) into the Pooling's
  ``embedding_dimension``, the Pooling's output (one block per mode) into the first Dense's ``in_features``, each
  Dense's ``out_features`` into the next;
- a Dense's claimed shapes against its weights file: the ``.safetensors`` header's names and shapes
  (``isoscope.encode.weights``: safetensors checks the header against the file's bytes), or a
  ``pytorch_model.bin`` at least as large as the values claimed at 2 bytes each (float16, the narrowest).

So a config claiming 32 -> 40,000,000 beside 2 kB of weights, an ``in_features`` of 64 after a 32-dimension
pooling, or an unknown key is refused in one line that names the file and the field, before anything is allocated.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from isoscope.encode.weights import FLOAT_DTYPES, MIN_FLOAT_BYTES, tensor_shapes
from isoscope.errors import InputError
from isoscope.paths import check_regular

if TYPE_CHECKING:
    from isoscope.encode.recipe import ModuleRef, RecipeCard

# the module kinds of a recipe (isoscope.encode.recipe re-exports them): one Transformer, then these
TRANSFORMER, POOLING, DENSE, NORMALIZE = "Transformer", "Pooling", "Dense", "Normalize"
HEAD_KINDS: tuple[str, ...] = (POOLING, DENSE, NORMALIZE)  # what may follow the transformer
ENDPOINT_ADVICE = "serve the model behind an OpenAI-compatible embeddings endpoint and use --model openai:NAME"
POOLING_MODES: tuple[str, ...] = ("cls", "max", "mean", "mean_sqrt_len_tokens", "weightedmean", "lasttoken")
LEGACY_MODES: dict[str, str] = {  # sentence-transformers before 6 wrote one flag per mode
    "pooling_mode_cls_token": "cls",
    "pooling_mode_max_tokens": "max",
    "pooling_mode_mean_tokens": "mean",
    "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens",
    "pooling_mode_weightedmean_tokens": "weightedmean",
    "pooling_mode_lasttoken": "lasttoken",
}
ALLOWED_KEYS: dict[str, frozenset[str]] = {  # what sentence-transformers 2 to 6 write in each module's config.json
    POOLING: frozenset(
        {"embedding_dimension", "word_embedding_dimension", "pooling_mode", "include_prompt", *LEGACY_MODES}
    ),
    DENSE: frozenset(
        {"in_features", "out_features", "bias", "activation_function", "module_input_name", "module_output_name"}
        | {"use_residual"}
    ),
    NORMALIZE: frozenset({"module_input_name", "module_output_name"}),
}
# torch.nn's activation modules a Dense may name (sentence-transformers saves torch.nn.modules.activation.Tanh,
# torch.nn.modules.linear.Identity, ...); built with no arguments, as sentence-transformers builds them
ACTIVATIONS: tuple[str, ...] = (
    "Identity",
    "Tanh",
    "ReLU",
    "GELU",
    "Sigmoid",
    "SiLU",
    "Mish",
    "ELU",
    "SELU",
    "CELU",
    "LeakyReLU",
    "ReLU6",
    "Softplus",
    "Softsign",
    "Hardtanh",
    "Hardsigmoid",
    "Hardswish",
    "Tanhshrink",
    "LogSigmoid",
)
DEFAULT_ACTIVATION = "Tanh"  # sentence-transformers' Dense when its config names none
SENTENCE = "sentence_embedding"  # the feature every head module reads and writes
MAX_DIM = 2**31 - 1


@dataclass(frozen=True)
class HeadPlan:
    """One head module as checked: its config, the dimensions it takes and gives, and for a Dense its
    activation's name (in ``ACTIVATIONS``) and the weights file its tensors come from."""

    ref: ModuleRef
    config: dict[str, Any]
    in_dim: int
    out_dim: int
    activation: str | None = None
    weights: Path | None = None
    tensors: dict[str, tuple[int, ...]] = field(default_factory=dict)  # name -> shape the weights must hold


@dataclass(frozen=True)
class RecipePlan:
    """The checked recipe: its head modules in order and the sentence vector's dimensions."""

    modules: tuple[HeadPlan, ...]
    output_dim: int


def check_recipe(card: RecipeCard, configs: Sequence[Any], *, hidden: int | None) -> RecipePlan:
    """The head of ``card`` checked from its modules' parsed configs (``configs[i]`` for ``card.head[i]``; ``{}``
    where a module has no config file) and its weights' headers, ``hidden`` (the transformer's hidden size; None:
    taken from the Pooling) starting the chain of dimensions. InputError naming the file and field otherwise."""
    folder = Path(card.folder)
    if not card.head or card.head[0].kind != POOLING:
        raise InputError(f"{folder.name}: its recipe has no Pooling after the Transformer; {ENDPOINT_ADVICE}")
    plans: list[HeadPlan] = []
    dim = hidden or None
    for ref, config in zip(card.head, configs, strict=True):
        where = f"{folder.name}/{ref.path}/config.json" if ref.path else f"{folder.name}/config.json"
        if not isinstance(config, dict):
            raise InputError(f"{where}: not a JSON object of settings; save the model again")
        unknown = sorted(str(k) for k in set(config) - ALLOWED_KEYS[ref.kind])
        if unknown:
            raise InputError(
                f"{where}: '{unknown[0][:60]}' is not a setting sentence-transformers writes for {ref.kind} "
                f"({', '.join(sorted(ALLOWED_KEYS[ref.kind]))}); save the model again"
            )
        if ref.kind == POOLING:
            if plans:
                raise InputError(f"{where}: a second Pooling; a recipe pools once, right after the Transformer")
            plan = _pooling(ref, config, dim, where)
        elif ref.kind == DENSE:
            assert dim is not None  # a Pooling came first and set it
            plan = _dense(ref, config, dim, where, folder)
        else:
            _names(config, where, ref.kind)
            assert dim is not None
            plan = HeadPlan(ref, config, dim, dim)
        plans.append(plan)
        dim = plan.out_dim
    assert dim is not None
    return RecipePlan(tuple(plans), dim)


def _whole(config: dict[str, Any], key: str, where: str) -> int:
    value = config.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_DIM:
        raise InputError(f"{where}: {key} must be a whole number from 1 to 2**31 - 1, got {str(value)[:40]}")
    return value


def _flag(config: dict[str, Any], key: str, default: bool, where: str) -> bool:
    value = config.get(key, default)
    if not isinstance(value, bool):
        raise InputError(f"{where}: {key} must be true or false, got {str(value)[:40]}")
    return value


def _names(config: dict[str, Any], where: str, kind: str) -> None:
    """A head module reads and writes the sentence vector (a module on the token vectors is another recipe)."""
    for key in ("module_input_name", "module_output_name"):
        value = config.get(key, SENTENCE)
        if value is not None and value != SENTENCE:
            raise InputError(
                f"{where}: {key} is '{str(value)[:60]}'; Isoscope runs a {kind} on the {SENTENCE} only; "
                f"{ENDPOINT_ADVICE}"
            )
    if config.get("module_input_name", SENTENCE) is None:
        raise InputError(f"{where}: module_input_name must name a feature, got null")


def _modes(config: dict[str, Any], where: str) -> tuple[str, ...]:
    """The pooling modes, as sentence-transformers 6 reads them: ``pooling_mode`` (a name or a list), else the old
    flags, else mean."""
    for key in LEGACY_MODES:
        _flag(config, key, False, where)
    if "pooling_mode" not in config:
        return tuple(mode for key, mode in LEGACY_MODES.items() if config.get(key)) or ("mean",)
    raw = config["pooling_mode"]
    modes = [raw] if isinstance(raw, str) else raw
    if not isinstance(modes, list) or not modes or not all(isinstance(m, str) and m in POOLING_MODES for m in modes):
        raise InputError(
            f"{where}: pooling_mode must be one or a list of {', '.join(POOLING_MODES)}, got {str(raw)[:60]}"
        )
    return tuple(modes)


def _pooling(ref: ModuleRef, config: dict[str, Any], dim: int | None, where: str) -> HeadPlan:
    keys = [k for k in ("embedding_dimension", "word_embedding_dimension") if k in config]
    if not keys:
        raise InputError(f"{where}: no embedding_dimension; save the model again")
    width = _whole(config, keys[0], where)
    if len(keys) == 2 and _whole(config, keys[1], where) != width:
        raise InputError(f"{where}: embedding_dimension and word_embedding_dimension differ; save the model again")
    if dim is not None and width != dim:
        raise InputError(
            f"{where}: {keys[0]} is {width} but the transformer's token vectors have {dim} dimensions (hidden size in "
            "its config.json); the recipe does not belong to this model"
        )
    modes = _modes(config, where)
    _flag(config, "include_prompt", True, where)
    return HeadPlan(ref, config, width, len(modes) * width)


def activation_name(value: object, where: str) -> str:
    """The name in ``ACTIVATIONS`` a Dense config's ``activation_function`` spells (``torch.nn.Tanh`` or its full
    path ``torch.nn.modules.activation.Tanh``, as sentence-transformers saves it); InputError for anything else.
    Nothing is imported by the path the file gives."""
    import torch

    name = value.rsplit(".", 1)[-1] if isinstance(value, str) else ""
    cls = getattr(torch.nn, name, None) if name in ACTIVATIONS else None
    if cls is None or value not in (f"torch.nn.{name}", f"{cls.__module__}.{cls.__qualname__}"):
        raise InputError(
            f"{where}: activation_function '{str(value)[:80]}' is not a torch activation Isoscope runs "
            f"({', '.join(ACTIVATIONS[:5])} and {len(ACTIVATIONS) - 5} more); a path a recipe names is never imported"
        )
    return name


def _dense(ref: ModuleRef, config: dict[str, Any], dim: int, where: str, folder: Path) -> HeadPlan:
    d_in, d_out = _whole(config, "in_features", where), _whole(config, "out_features", where)
    if d_in != dim:
        raise InputError(
            f"{where}: in_features is {d_in} but the module before it gives {dim} dimensions; the recipe does not "
            "chain (save the model again)"
        )
    bias = _flag(config, "bias", True, where)
    residual = _flag(config, "use_residual", False, where)
    _names(config, where, DENSE)
    activation = activation_name(config.get("activation_function", f"torch.nn.{DEFAULT_ACTIVATION}"), where)
    tensors: dict[str, tuple[int, ...]] = {"linear.weight": (d_out, d_in)}
    if bias:
        tensors["linear.bias"] = (d_out,)
    if residual and d_in != d_out:
        tensors["residual.weight"] = (d_out, d_in)
    weights = _dense_weights(folder, ref, tensors, f"{d_in} -> {d_out}")
    return HeadPlan(ref, config, d_in, d_out, activation, weights, tensors)


def _dense_weights(folder: Path, ref: ModuleRef, tensors: dict[str, tuple[int, ...]], claim: str) -> Path:
    """The file a Dense's weights come from, its contents checked against the shapes its config claims."""
    module = folder / ref.path
    safetensors, pickled = module / "model.safetensors", module / "pytorch_model.bin"
    if safetensors.is_file():
        label = f"{folder.name}/{ref.path}/model.safetensors"
        held = tensor_shapes(safetensors, label)  # header checked against the file's bytes by safetensors
        if set(held) != set(tensors):
            raise InputError(
                f"{label} holds {', '.join(sorted(held))[:120] or 'no tensors'} but its Dense ({claim}) needs "
                f"{', '.join(sorted(tensors))}; save the model again"
            )
        for name, shape in tensors.items():
            if held[name].shape != shape:
                got = " x ".join(map(str, held[name].shape))
                raise InputError(
                    f"{label}: {name} is {got} but config.json claims {' x '.join(map(str, shape))} ({claim}); the "
                    "config does not belong to these weights"
                )
            if held[name].dtype not in FLOAT_DTYPES:
                raise InputError(f"{label}: {name} holds {held[name].dtype}, not floats; save the model again")
        return safetensors
    if pickled.is_file():
        label = f"{folder.name}/{ref.path}/pytorch_model.bin"
        size = check_regular(pickled).st_size
        values = sum(math.prod(shape) for shape in tensors.values())
        if values * MIN_FLOAT_BYTES > size:
            raise InputError(
                f"{label}: config.json claims {values:,} weights ({claim}) but the file holds {size:,} bytes; the "
                "config does not belong to these weights"
            )
        return pickled
    raise InputError(f"{folder.name}/{ref.path}: no model.safetensors or pytorch_model.bin for its Dense module")
