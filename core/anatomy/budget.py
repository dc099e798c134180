"""Parameter budget of BERT-style encoders: how much of a model is embedding (Chung et al. 2020).

Chung, Févry, Tsai, Johnson & Ruder (2020), "Rethinking embedding coupling in pre-trained language models":
the vocabulary embeddings take a large share of the parameters of multilingual encoders; the input and the
output embedding need not be tied, nor of the hidden size. RemBERT uses a small input embedding ``E_in``
(projected to the hidden size) and a large output embedding ``E_out`` that is dropped after pre-training.

budget = parameter_budget(PRESETS["bert-base-uncased"])
budget.embedding_share_finetuning  # 0.217...

What counts as what (every parameter is in exactly one group; the counts equal ``sum(p.numel())`` of the
transformers modules, shared tied weights counted once):

- ``input_embedding``: word (``V x E_in``), position (``P x E_in``) and token-type (``T x E_in``) tables, the
  embedding LayerNorm (``2 E_in``), and the projection ``E_in -> H`` (``E_in H + H``) when the input embedding
  is decoupled (ALBERT/RemBERT; RemBERT always has it, even when ``E_in == H``).
- ``transformer``: the ``L`` layers (attention Q, K, V, output with biases and LayerNorm; feed-forward
  ``H -> I -> H`` with biases and LayerNorm) and the pooler (``H H + H``) when present.
- ``output_embedding``: the whole masked-LM head, the part that maps hidden states to the vocabulary and is
  dropped for fine-tuning: the transform ``H -> E_out`` (``H E_out + E_out``) plus its LayerNorm
  (``2 E_out``), the output embedding ``E_out x V`` when untied (a tied one *is* the word table, already
  counted in ``input_embedding``) and the per-token output bias (``V``).

Pre-training total = all three groups; fine-tuning total = input embedding + transformer. The NSP head of
original BERT pre-training (``2 H + 2``) is not modelled.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field, replace
from typing import Literal

from isoscope.errors import InputError

log = logging.getLogger(__name__)

__all__ = [
    "GROUPS",
    "PRESETS",
    "PRESET_NAMES",
    "Architecture",
    "ParameterBudget",
    "architecture_from_config",
    "architecture_from_model",
    "get_preset",
    "parameter_budget",
]

Group = Literal["input_embedding", "transformer", "output_embedding"]
GROUPS: tuple[str, ...] = ("input_embedding", "transformer", "output_embedding")
# Model types whose modules follow the BERT layout counted here.
BERT_LIKE_MODEL_TYPES: tuple[str, ...] = ("bert", "roberta", "xlm-roberta", "camembert", "rembert")


@dataclass(frozen=True)
class Architecture:
    """Sizes of a BERT-style encoder. ``input_embedding_size``/``output_embedding_size`` default to hidden."""

    vocab_size: int
    hidden_size: int
    num_layers: int
    intermediate_size: int
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    tied: bool = True  # output embedding shares the word table (needs E_out == E_in)
    input_embedding_size: int | None = None  # E_in; None = hidden_size
    output_embedding_size: int | None = None  # E_out; None = E_in when tied, hidden_size when untied
    embedding_projection: bool | None = None  # E_in -> H projection; None = only when E_in != H
    pooler: bool = True
    mlm_transform: bool = True  # dense H -> E_out + LayerNorm before the vocabulary projection
    biases: bool = True  # biases of every linear layer and the output bias
    output_biases: int = 1  # per-token output bias vectors (V each): 2 when an untied decoder keeps its own
    layer_norms: bool = True
    num_attention_heads: int | None = None  # informational: heads do not change the count
    name: str = "custom"

    @property
    def e_in(self) -> int:
        return self.input_embedding_size or self.hidden_size

    @property
    def e_out(self) -> int:
        if self.output_embedding_size:
            return self.output_embedding_size
        return self.e_in if self.tied else self.hidden_size

    @property
    def has_projection(self) -> bool:
        return self.e_in != self.hidden_size if self.embedding_projection is None else self.embedding_projection

    def validate(self) -> Architecture:
        """Raise InputError naming the bad size; return self."""
        sizes = {
            "vocab_size": self.vocab_size,
            "hidden_size": self.hidden_size,
            "num_layers": self.num_layers,
            "intermediate_size": self.intermediate_size,
            "max_position_embeddings": self.max_position_embeddings,
            "input_embedding_size": self.e_in,
            "output_embedding_size": self.e_out,
        }
        for key, value in sizes.items():
            if int(value) < 1:
                raise InputError(f"{key} must be a positive integer, got {value}")
        if int(self.type_vocab_size) < 0:
            raise InputError(f"type_vocab_size must be >= 0, got {self.type_vocab_size}")
        if self.tied and self.e_out != self.e_in:
            raise InputError(
                f"a tied output embedding is the input table, so its size must equal the input embedding size "
                f"({self.e_in}), got {self.e_out}; use untied or drop the output embedding size"
            )
        if self.e_in != self.hidden_size and self.embedding_projection is False:
            raise InputError("input_embedding_size != hidden_size needs the E_in -> hidden projection")
        return self


@dataclass
class ParameterBudget:
    """Parameter counts by component and group, pre-training (with MLM head) and fine-tuning (without)."""

    architecture: Architecture
    components: dict[str, tuple[str, int]] = field(default_factory=dict)  # name -> (group, count)

    def group(self, name: str) -> int:
        if name not in GROUPS:
            raise ValueError(f"unknown group '{name}'; choose one of {', '.join(GROUPS)}")
        return sum(count for g, count in self.components.values() if g == name)

    @property
    def input_embedding(self) -> int:
        return self.group("input_embedding")

    @property
    def transformer(self) -> int:
        return self.group("transformer")

    @property
    def output_embedding(self) -> int:
        return self.group("output_embedding")

    @property
    def pretraining_total(self) -> int:
        return self.input_embedding + self.transformer + self.output_embedding

    @property
    def finetuning_total(self) -> int:
        return self.input_embedding + self.transformer

    @property
    def embedding_pretraining(self) -> int:
        return self.input_embedding + self.output_embedding

    @property
    def embedding_share_pretraining(self) -> float:
        return self.embedding_pretraining / self.pretraining_total

    @property
    def embedding_share_finetuning(self) -> float:
        return self.input_embedding / self.finetuning_total

    def to_dict(self) -> dict[str, object]:
        """Flat summary for JSON and tables."""
        a = self.architecture
        return {
            "name": a.name,
            "vocab_size": a.vocab_size,
            "hidden_size": a.hidden_size,
            "num_layers": a.num_layers,
            "intermediate_size": a.intermediate_size,
            "input_embedding_size": a.e_in,
            "output_embedding_size": a.e_out,
            "tied": a.tied,
            "input_embedding": self.input_embedding,
            "transformer": self.transformer,
            "output_embedding": self.output_embedding,
            "embedding_pretraining": self.embedding_pretraining,
            "pretraining_total": self.pretraining_total,
            "finetuning_total": self.finetuning_total,
            "embedding_share_pretraining": self.embedding_share_pretraining,
            "embedding_share_finetuning": self.embedding_share_finetuning,
            "components": {k: {"group": g, "params": n} for k, (g, n) in self.components.items()},
            "architecture": asdict(a),
        }


def _linear(n_in: int, n_out: int, bias: bool) -> int:
    return n_in * n_out + (n_out if bias else 0)


def _layer_norm(d: int, on: bool) -> int:
    return 2 * d if on else 0


def _layer(a: Architecture) -> int:
    """One transformer layer: Q, K, V, attention output + LN; H -> I -> H feed-forward + LN."""
    h, i, b = a.hidden_size, a.intermediate_size, a.biases
    attention = 4 * _linear(h, h, b) + _layer_norm(h, a.layer_norms)
    feed_forward = _linear(h, i, b) + _linear(i, h, b) + _layer_norm(h, a.layer_norms)
    return attention + feed_forward


def parameter_budget(arch: Architecture) -> ParameterBudget:
    """Count every component of ``arch``; see the module docstring for the grouping."""
    a = arch.validate()
    v, h, e_in, e_out, b = a.vocab_size, a.hidden_size, a.e_in, a.e_out, a.biases
    c: dict[str, tuple[str, int]] = {
        "word_embeddings": ("input_embedding", v * e_in),
        "position_embeddings": ("input_embedding", a.max_position_embeddings * e_in),
        "token_type_embeddings": ("input_embedding", a.type_vocab_size * e_in),
        "embedding_layer_norm": ("input_embedding", _layer_norm(e_in, a.layer_norms)),
        "embedding_projection": ("input_embedding", _linear(e_in, h, b) if a.has_projection else 0),
        "layers": ("transformer", a.num_layers * _layer(a)),
        "pooler": ("transformer", _linear(h, h, b) if a.pooler else 0),
    }
    if a.mlm_transform:
        head = _linear(h, e_out, b) + _layer_norm(e_out, a.layer_norms)
    else:
        head = _linear(h, e_out, b) if e_out != h else 0  # a bare projection when sizes differ
    c["mlm_transform"] = ("output_embedding", head)
    c["output_embeddings"] = ("output_embedding", 0 if a.tied else e_out * v)
    c["output_bias"] = ("output_embedding", v * a.output_biases if b else 0)
    return ParameterBudget(a, c)


# ------------------------------------------------------------------ presets (public config.json values)

PRESETS: dict[str, Architecture] = {
    "bert-base-uncased": Architecture(30522, 768, 12, 3072, 512, 2, num_attention_heads=12),
    "bert-large-uncased": Architecture(30522, 1024, 24, 4096, 512, 2, num_attention_heads=16),
    "bert-base-multilingual-cased": Architecture(119547, 768, 12, 3072, 512, 2, num_attention_heads=12),
    "xlm-roberta-base": Architecture(250002, 768, 12, 3072, 514, 1, num_attention_heads=12),
    "xlm-roberta-large": Architecture(250002, 1024, 24, 4096, 514, 1, num_attention_heads=16),
    "rembert": Architecture(
        250300,
        1152,
        32,
        4608,
        512,
        2,
        tied=False,
        input_embedding_size=256,
        output_embedding_size=1664,
        embedding_projection=True,
        num_attention_heads=18,
    ),
}
PRESETS = {name: replace(arch, name=name) for name, arch in PRESETS.items()}
PRESET_NAMES: tuple[str, ...] = tuple(PRESETS)


def get_preset(name: str) -> Architecture:
    """A preset by name (case-insensitive; ``google/rembert`` and ``FacebookAI/...`` prefixes accepted)."""
    key = str(name).strip().lower().split("/")[-1]
    if key not in PRESETS:
        raise InputError(f"unknown preset '{name}'; choose one of {', '.join(PRESET_NAMES)}")
    return PRESETS[key]


def architecture_from_config(config: object, pooler: bool = True, name: str | None = None) -> Architecture:
    """Architecture of a transformers config of a BERT-style encoder (bert, roberta, xlm-roberta, rembert)."""
    model_type = str(getattr(config, "model_type", ""))
    if model_type not in BERT_LIKE_MODEL_TYPES:
        raise InputError(
            f"parameter budget supports BERT-style encoders ({', '.join(BERT_LIKE_MODEL_TYPES)}), "
            f"not '{model_type or type(config).__name__}'"
        )
    is_rembert = model_type == "rembert"
    hidden = int(config.hidden_size)
    return Architecture(
        vocab_size=int(config.vocab_size),
        hidden_size=hidden,
        num_layers=int(config.num_hidden_layers),
        intermediate_size=int(config.intermediate_size),
        max_position_embeddings=int(config.max_position_embeddings),
        type_vocab_size=int(config.type_vocab_size),
        tied=bool(getattr(config, "tie_word_embeddings", True)),
        input_embedding_size=getattr(config, "input_embedding_size", None),  # None = hidden size
        output_embedding_size=getattr(config, "output_embedding_size", None) if is_rembert else None,
        embedding_projection=True if is_rembert else None,
        pooler=pooler,
        num_attention_heads=getattr(config, "num_attention_heads", None),
        name=name or str(getattr(config, "_name_or_path", "") or model_type),
    )


def architecture_from_model(model: object, name: str | None = None) -> Architecture:
    """Architecture of an instantiated model: sizes from its config, pooler from its modules.

    Works for a bare encoder (``BertModel``) and for a model with a head (``BertForMaskedLM``): the budget
    always describes the pre-training model (with an MLM head) and the fine-tuning one (without).
    """
    config = model.config  # type: ignore[attr-defined]
    base = getattr(model, "base_model", model)
    has_pooler = getattr(base, "pooler", None) is not None
    arch = architecture_from_config(config, pooler=has_pooler, name=name)
    head = _mlm_head(model, base)
    if head is None:  # a bare encoder: the pre-training head of its config, as the paper's model has it
        return arch
    # count what the model really holds, whatever tying this transformers version applies
    out = model.get_output_embeddings()  # type: ignore[attr-defined]
    tied = out is not None and out.weight is base.get_input_embeddings().weight
    vocab = arch.vocab_size
    biases = {id(p) for _, p in head if p.ndim == 1 and p.shape[0] == vocab}  # shared ones counted once
    return replace(arch, tied=tied, output_biases=max(len(biases), 1) if arch.biases else 1)


def _mlm_head(model: object, base: object) -> list[tuple[str, object]] | None:
    """(name, parameter) of the model's masked-LM head, or None for a bare encoder. A parameter shared with
    the encoder (a tied output embedding) is left out: it is counted once, as the input table."""
    if model is base or getattr(model, "get_output_embeddings", lambda: None)() is None:
        return None
    own = {id(p) for p in base.parameters()}  # type: ignore[attr-defined]
    return [(n, p) for n, p in model.named_parameters() if id(p) not in own]  # type: ignore[attr-defined]
