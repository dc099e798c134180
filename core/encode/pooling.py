"""Pooling: how a sequence of token vectors becomes one sentence vector.

Modes (BERT-flow and Sentence-T5 compare these):
- ``cls``: the first token of the last layer.
- ``mean``: mean of the last layer over real (non-padding) tokens.
- ``max``: element-wise max of the last layer over real tokens.
- ``last2avg``: mean over tokens of the average of the last two layers.
- ``first_last_avg``: mean over tokens of the average of hidden_states[1] and hidden_states[-1].
- ``layer:K``: mean over tokens of hidden_states[K] (0 = embedding output, num_layers = last layer).
- Encoder-decoder models (T5): ``enc_first`` (first encoder output), ``enc_mean`` (mean of encoder
  outputs), ``encdec_first`` (first decoder output when the decoder is fed only the start token).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

from isoscope.errors import InputError

if TYPE_CHECKING:  # torch is imported where tensors are pooled, so parsing a mode stays cheap
    import torch

PoolingName = Literal[
    "model", "cls", "mean", "max", "last2avg", "first_last_avg", "enc_first", "enc_mean", "encdec_first"
]
MODEL_POOLING = "model"  # the model's own recipe (isoscope.encode.recipe): a sentence-transformers model's head
ENCODER_POOLING_MODES: tuple[str, ...] = ("cls", "mean", "max", "last2avg", "first_last_avg")
T5_POOLING_MODES: tuple[str, ...] = ("enc_first", "enc_mean", "encdec_first")
POOLING_MODES: tuple[str, ...] = (MODEL_POOLING, *ENCODER_POOLING_MODES, *T5_POOLING_MODES)
LAYER_PREFIX = "layer:"
# On an encoder-decoder model ``cls`` and ``mean`` pool the encoder exactly as ``enc_first`` and ``enc_mean`` do
# (``pool`` treats each pair alike), so ``pooling_choices`` offers each of those once, by its T5 name.
ENC_DEC_ALIASES: dict[str, str] = {"cls": "enc_first", "mean": "enc_mean"}


# The one glossary of poolings: tooltips, captions and help texts are generated from it (``describe_pooling``).
POOLING_DESCRIPTIONS: dict[str, str] = {
    MODEL_POOLING: "the model's own recipe, as its authors run it (sentence-transformers' modules.json): its pooling, "
    "then its Dense layers and normalisation, with its prompts",
    "cls": "the vector of the first token ([CLS]) of the last layer",
    "mean": "the average of the last layer's token vectors (padding left out): what sentence encoders are trained for",
    "max": "the largest value of each dimension over the last layer's token vectors",
    "last2avg": "the average of the last two layers, averaged over the tokens",
    "first_last_avg": "the average of the first and the last transformer layer, averaged over the tokens (BERT-flow)",
    f"{LAYER_PREFIX}K": "the average of layer K's token vectors: layer:0 is the input embeddings, the highest K "
    "the last layer (what mean pools)",
    "enc_first": "Sentence-T5: the encoder's output vector of the first token",
    "enc_mean": "Sentence-T5: the average of the encoder's output vectors",
    "encdec_first": "Sentence-T5: the decoder's first output vector, with only the start token fed to the decoder",
}


def describe_pooling(mode: str) -> str:
    """``mode`` in plain words (every ``layer:K`` shares the ``layer:K`` entry); KeyError for an unknown mode."""
    key = f"{LAYER_PREFIX}K" if str(mode).startswith(LAYER_PREFIX) else str(mode)
    return POOLING_DESCRIPTIONS[key]


@dataclass(frozen=True)
class PoolingSpec:
    """A parsed pooling mode (``parse_pooling``); ``layer`` is set only for ``layer:K``. Its ``name`` is what cache
    keys, JSON results and the dashboard's selectors carry."""

    kind: str
    layer: int | None = None

    @property
    def name(self) -> str:
        return f"{LAYER_PREFIX}{self.layer}" if self.kind == "layer" else self.kind

    def __str__(self) -> str:
        return self.name

    @property
    def needs_hidden_states(self) -> bool:
        return self.kind in ("last2avg", "first_last_avg", "layer")

    @property
    def needs_decoder(self) -> bool:
        return self.kind == "encdec_first"

    def check(self, num_layers: int, is_encoder_decoder: bool = False, has_recipe: bool = False) -> PoolingSpec:
        """This pooling, when a model of ``num_layers`` layers (an encoder-decoder or not, with a recipe of its own
        or not) has it; InputError listing the model's choices otherwise."""
        if self.kind == MODEL_POOLING and not has_recipe:
            raise InputError(
                "pooling 'model' is a sentence-transformers model's own recipe (modules.json); this model has none: "
                f"choose one of {', '.join(valid_pooling_modes(is_encoder_decoder))} or layer:K"
            )
        if self.kind == "layer":
            if self.layer is None or not 0 <= self.layer <= num_layers:
                raise InputError(f"pooling '{self.name}': K must be between 0 and {num_layers} for this model")
            return self
        valid = valid_pooling_modes(is_encoder_decoder, has_recipe)
        if self.kind not in valid:
            hint = "" if is_encoder_decoder else " (enc_first, enc_mean and encdec_first need an encoder-decoder model)"
            raise InputError(f"unknown pooling '{self.name}'; choose one of {', '.join(valid)} or layer:K{hint}")
        return self


def layer_pooling(k: int) -> PoolingSpec:
    """``layer:K``: the mean of hidden state K's token vectors (0 = the input embeddings)."""
    return PoolingSpec("layer", int(k))


def layer_names(num_layers: int) -> list[str]:
    """``layer:0`` .. ``layer:num_layers``: every hidden state of a model, by the names its arrays are kept under."""
    return [layer_pooling(k).name for k in range(num_layers + 1)]


def valid_pooling_modes(is_encoder_decoder: bool = False, has_recipe: bool = False) -> tuple[str, ...]:
    """Names a model of this kind accepts (``layer:K`` comes on top): ``model`` first when it has a recipe."""
    named = (*ENCODER_POOLING_MODES, *T5_POOLING_MODES) if is_encoder_decoder else ENCODER_POOLING_MODES
    return (MODEL_POOLING, *named) if has_recipe else named


def pooling_specs(num_layers: int, is_encoder_decoder: bool = False, has_recipe: bool = False) -> list[PoolingSpec]:
    """The one list of poolings a model offers (sidebar, pages, pooling explorer): ``model`` when it has a recipe,
    its named modes, each once (an encoder-decoder's ``cls``/``mean`` aliases left out), then ``layer:0`` ..
    ``layer:num_layers``."""
    valid = valid_pooling_modes(is_encoder_decoder, has_recipe)
    named = [m for m in valid if not (is_encoder_decoder and m in ENC_DEC_ALIASES)]
    return [PoolingSpec(m) for m in named] + [layer_pooling(k) for k in range(num_layers + 1)]


def pooling_choices(num_layers: int, is_encoder_decoder: bool = False, has_recipe: bool = False) -> list[str]:
    """``pooling_specs`` by name."""
    return [spec.name for spec in pooling_specs(num_layers, is_encoder_decoder, has_recipe)]


def canonical_pooling(mode: str, is_encoder_decoder: bool = False) -> str:
    """``mode`` as ``pooling_choices`` lists it: an encoder-decoder's ``cls``/``mean`` by their T5 names."""
    return ENC_DEC_ALIASES.get(mode, mode) if is_encoder_decoder else mode


def pooling_help() -> str:
    """Every mode, for a help text: ``cls, mean, ..., layer:K, enc_first, ...``."""
    return ", ".join([MODEL_POOLING, *ENCODER_POOLING_MODES, f"{LAYER_PREFIX}K", *T5_POOLING_MODES])


def parse_pooling(mode: str) -> PoolingSpec:
    """A pooling name as a user types it (the CLI's ``--pooling``, a SPEC string, the sidebar, a notebook's
    ``pooling="cls"``) -> ``PoolingSpec``; InputError listing the valid choices. Whether a model has it is
    ``PoolingSpec.check``, once the model is known."""
    mode = str(mode).strip()
    if mode.startswith(LAYER_PREFIX):
        try:
            k = int(mode[len(LAYER_PREFIX) :])
        except ValueError:
            raise InputError(f"pooling '{mode}': K in layer:K must be an integer, e.g. layer:3") from None
        if k < 0:
            raise InputError(f"pooling '{mode}': K must be between 0 and num_layers for this model")
        return layer_pooling(k)
    if mode not in POOLING_MODES:
        raise InputError(f"unknown pooling '{mode}'; choose one of {', '.join(POOLING_MODES)} or layer:K")
    return PoolingSpec(mode)


class PoolingModel(Protocol):
    """What deciding a pooling needs to know of a model (an ``Encoder``, or the dashboard's ``Settings``)."""

    num_layers: int
    is_encoder_decoder: bool
    has_recipe: bool


def default_pooling(model: PoolingModel) -> PoolingSpec:
    """The one place that decides a model's pooling when none is asked for: ``model``, the model's own recipe,
    when it has one (a sentence-transformers model, run as its authors run it); else ``mean`` (``enc_mean`` on
    an encoder-decoder model), the pooling sentence encoders are trained for."""
    if getattr(model, "has_recipe", False):
        return PoolingSpec(MODEL_POOLING)
    return PoolingSpec(canonical_pooling("mean", model.is_encoder_decoder))


Pooling = PoolingSpec | str | None  # what a library function takes: a spec, a name a user typed, None = the default


def resolve_pooling(pooling: Pooling, model: PoolingModel) -> PoolingSpec:
    """The pooling a run uses on ``model``: ``default_pooling`` for None, a typed name parsed, then checked
    against the model (InputError naming its choices)."""
    if pooling is None:
        return default_pooling(model)
    spec = pooling if isinstance(pooling, PoolingSpec) else parse_pooling(pooling)
    return spec.check(model.num_layers, model.is_encoder_decoder, getattr(model, "has_recipe", False))


def masked_mean(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean over real tokens. hidden (b, t, d), mask (b, t) -> (b, d)."""
    m = mask.unsqueeze(-1).to(hidden.dtype)  # (b, t, 1)
    return (hidden * m).sum(1) / m.sum(1).clamp(min=1.0)


def masked_max(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Element-wise max over real tokens. hidden (b, t, d), mask (b, t) -> (b, d)."""
    import torch

    fill = torch.finfo(hidden.dtype).min
    return hidden.masked_fill(~mask.bool().unsqueeze(-1), fill).max(1).values


def pool(
    spec: PoolingSpec,
    last_hidden: torch.Tensor,
    mask: torch.Tensor,
    *,
    hidden_states: tuple[torch.Tensor, ...] | None = None,
    decoder_first: torch.Tensor | None = None,
) -> torch.Tensor:
    """Apply a pooling spec to (encoder) outputs. last_hidden (b, t, d) -> (b, d)."""
    kind = spec.kind
    if kind in ("cls", "enc_first"):
        return last_hidden[:, 0]
    if kind in ("mean", "enc_mean"):
        return masked_mean(last_hidden, mask)
    if kind == "max":
        return masked_max(last_hidden, mask)
    if kind == "encdec_first":
        if decoder_first is None:
            raise ValueError("encdec_first pooling needs the decoder output")
        return decoder_first
    if hidden_states is None:
        raise ValueError(f"{spec.name} pooling needs hidden states")
    if kind == "last2avg":
        return masked_mean((hidden_states[-1] + hidden_states[-2]) / 2, mask)
    if kind == "first_last_avg":
        return masked_mean((hidden_states[1] + hidden_states[-1]) / 2, mask)
    if kind == "layer":
        return masked_mean(hidden_states[spec.layer], mask)
    raise ValueError(f"unknown pooling kind {kind!r}")
