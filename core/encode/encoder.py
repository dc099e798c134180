"""The loaded model as the library passes it around: a tokenizer, a frozen transformer and what pooling needs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from transformers import PreTrainedModel, PreTrainedTokenizerBase

from isoscope.encode.precision import engine_label

if TYPE_CHECKING:
    from isoscope.encode.pooling import PoolingSpec
    from isoscope.encode.recipe import Recipe


@dataclass
class Encoder:
    """A tokenizer and a frozen transformer, with what pooling needs to know about them."""

    name: str  # what the user asked for (path or hub id)
    tokenizer: PreTrainedTokenizerBase
    model: PreTrainedModel
    fingerprint: str  # stable id of the weights and the precision, for caches
    is_encoder_decoder: bool = False
    precision: str = "fp32"  # isoscope.encode.precision.PRECISIONS; int8 encoders come from isoscope.encode.quantize.quantize_encoder
    engine: str = "torch"  # isoscope.encode.precision.ENGINES: what runs the forward pass (isoscope.encode.engines)
    recipe: Recipe | None = None  # the model's own head (sentence-transformers' modules.json): the pooling ``model``
    device: str = "cpu"  # where the model's weights are (``isoscope.encode.device``): cpu, cuda:0, mps
    dtype: str = "float32"  # their float type (``isoscope.encode.device.DTYPES``); vectors come back as float32
    num_layers: int = field(init=False)
    hidden_size: int = field(init=False)

    def __post_init__(self) -> None:
        cfg = self.model.config
        self.num_layers = int(
            getattr(cfg, "num_hidden_layers", None) or getattr(cfg, "num_layers", None) or cfg.n_layer
        )
        self.hidden_size = int(getattr(cfg, "hidden_size", None) or getattr(cfg, "d_model", None) or cfg.dim)

    @property
    def has_recipe(self) -> bool:
        """True when the model comes with its own recipe (the pooling ``model``)."""
        return self.recipe is not None

    def output_dim(self, pooling: PoolingSpec) -> int:
        """The dimensions of a sentence vector pooled this way: the recipe's last Dense for ``model``."""
        if pooling.kind == "model" and self.recipe is not None:
            return self.recipe.output_dim
        return self.hidden_size

    @property
    def engine_label(self) -> str:
        """What runs this encoder, for people: ``ONNX Runtime fp32``, ``PyTorch fp32``, ``ONNX Runtime int8``."""
        return engine_label(self.precision, self.engine)
