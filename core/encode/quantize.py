"""int8 encoders on the CPU through ONNX Runtime: ``quantize_encoder(encoder) -> Encoder``.

The encoder (the whole model, or a T5 model's encoder stack) is exported once with ``torch.onnx`` (offline,
from a private copy of the model: tracing leaves the traced module computing wrong results on padded
batches afterwards), every ``MatMul`` with a constant weight (the Linear layers) is quantised by ONNX
Runtime's dynamic quantisation: int8 weights with one scale per output channel, and uint8 activations whose
scale is computed per batch at run time. The int8 model is cached on disk under
``~/.cache/isoscope/int8/`` (keyed by the model's fingerprint and the recipe), so the export runs once per
model. Attention score products, layer norms, softmax and the embeddings stay in fp32.

Measured on all-MiniLM-L6-v2 (bench/encode.py, full run, 2 shared AVX2 cores): 2.35x sentence-transformers'
fp32 speed (1.9x our fp32) and 0.29 Spearman points lost on STS-B test (81.74 vs 82.03, mean pooling), with
nothing kept in fp32 (bench/quantize_sensitivity.py measures each group's drop on STS-B dev). Per-tensor
activation scales mean a sentence's vector depends slightly on the batch it is padded with (1 - cosine ~1e-2
at worst, a short sentence next to a long one); results are deterministic for a given list of texts, and
differ across CPUs by more than fp32 does (int8 kernels differ between AVX2, AVX-512 VNNI and ARM): compare
int8 vectors by cosine, never bit for bit.

The returned ``Encoder`` has ``precision="int8"``, a fingerprint that carries ``isoscope.encode.precision.INT8_RECIPE``
(so caches never mix precisions), and a ``model`` that answers the calls ``isoscope.encode.embed`` makes
(``model(input_ids=, attention_mask=, output_hidden_states=)``, ``get_encoder()``, ``get_decoder()``,
``get_input_embeddings()``, ``config``). T5's decoder (one step, for ``encdec_first``) stays in fp32.
"""

from __future__ import annotations

import copy
import dataclasses
import fnmatch
import logging
import os
import tempfile
import warnings
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import torch

from isoscope.cache import default_cache_dir, make_key
from isoscope.encode.encoder import Encoder
from isoscope.encode.precision import INT8_RECIPE, precision_suffix
from isoscope.errors import InputError

log = logging.getLogger(__name__)

OPSET = 17
MEMO_SIZE = 2  # int8 encoders kept in memory by fingerprint (a CLI run or a test session reuses its copy)
_MEMO: OrderedDict[str, Encoder] = OrderedDict()


@dataclass(frozen=True)
class Int8Config:
    """What gets quantised. ``keep_fp32``: Linear modules (names as in ``model.named_modules()``, fnmatch
    patterns) left in fp32; ``only``: quantise just these (for sensitivity measurements); ``per_channel``:
    one weight scale per output channel instead of one per matrix."""

    per_channel: bool = True
    keep_fp32: tuple[str, ...] = ()
    only: tuple[str, ...] | None = None

    def key(self) -> str:
        return make_key(INT8_RECIPE, self.per_channel, self.keep_fp32, self.only)


DEFAULT_CONFIG = Int8Config()


def int8_cache_dir() -> Path:
    return default_cache_dir() / "int8"


# --------------------------------------------------------------------------------------------------
# Export and quantisation
# --------------------------------------------------------------------------------------------------


class _HiddenStates(torch.nn.Module):
    """What gets exported: (input_ids, attention_mask) -> every hidden state (embeddings first, last = output)."""

    def __init__(self, body: torch.nn.Module) -> None:
        super().__init__()
        self.body = body

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple[torch.Tensor, ...]:
        out = self.body(input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=True)
        return tuple(out.hidden_states)


def _body(model: torch.nn.Module, is_encoder_decoder: bool) -> torch.nn.Module:
    return model.get_encoder() if is_encoder_decoder else model


def export_onnx(encoder: Encoder, path: Path) -> int:
    """Export the encoder body of ``encoder`` (fp32) to ONNX at ``path``; returns the number of outputs
    (hidden states). Dynamic batch and sequence axes; traced on a padded batch."""
    body = copy.deepcopy(_body(encoder.model, encoder.is_encoder_decoder)).eval()
    n_out = encoder.num_layers + 1
    ids = torch.full((2, 8), 5, dtype=torch.long)  # (2, 8): any in-vocabulary id traces the same graph
    mask = torch.ones((2, 8), dtype=torch.long)
    mask[1, 5:] = 0  # one padded row, so the mask path is traced as it runs
    names = [f"hidden_{i}" for i in range(n_out)]
    axes = {name: {0: "batch", 1: "sequence"} for name in ["input_ids", "attention_mask", *names]}
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # tracer and deprecation warnings of the TorchScript exporter
        torch.onnx.export(
            _HiddenStates(body),
            (ids, mask),
            str(path),
            input_names=["input_ids", "attention_mask"],
            output_names=names,
            dynamic_axes=axes,
            opset_version=OPSET,
            dynamo=False,
        )
    return n_out


def _module_of(node: object) -> str:
    """The torch module a node came from: ``/encoder/layer.5/output/dense/MatMul`` -> ``encoder.layer.5.output.dense``
    (the TorchScript exporter's scope names), or the innermost ``pkg.torch.onnx.name_scopes`` entry (dynamo)."""
    for prop in getattr(node, "metadata_props", []):
        if prop.key == "pkg.torch.onnx.name_scopes":
            scopes = [s.strip(" '\"") for s in prop.value.strip("[]").split(",")]
            return scopes[-1].removeprefix("body.") if scopes else ""
    parts = [p for p in node.name.split("/") if p][:-1]  # drop the op name
    return ".".join(parts).removeprefix("body.")


def linear_nodes(onnx_path: Path) -> dict[str, str]:
    """ONNX node name -> torch module name, for every MatMul with a constant (initializer) weight."""
    import onnx

    model = onnx.load(str(onnx_path), load_external_data=False)
    weights = {t.name for t in model.graph.initializer}
    return {
        n.name: _module_of(n)
        for n in model.graph.node
        if n.op_type == "MatMul" and len(n.input) == 2 and n.input[1] in weights
    }


def _excluded(nodes: dict[str, str], config: Int8Config) -> list[str]:
    def hit(module: str, patterns: tuple[str, ...]) -> bool:
        return any(fnmatch.fnmatchcase(module, p) for p in patterns)

    out = [n for n, m in nodes.items() if hit(m, config.keep_fp32)]
    if config.only is not None:
        out += [n for n, m in nodes.items() if not hit(m, config.only) and n not in out]
    return out


def quantize_onnx(fp32_path: Path, int8_path: Path, config: Int8Config = DEFAULT_CONFIG) -> list[str]:
    """Dynamic int8 quantisation of the Linear MatMuls of ``fp32_path`` into ``int8_path``; returns the torch
    module names left in fp32."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    nodes = linear_nodes(fp32_path)
    exclude = _excluded(nodes, config)
    level = logging.root.level
    logging.root.setLevel(max(level, logging.ERROR))  # ORT's quantiser logs a line per tensor and a hint
    try:
        quantize_dynamic(
            str(fp32_path),
            str(int8_path),
            op_types_to_quantize=["MatMul"],
            per_channel=config.per_channel,
            weight_type=QuantType.QInt8,
            nodes_to_exclude=exclude,
        )
    finally:
        logging.root.setLevel(level)
    log.debug("int8: %d Linear MatMuls, %d kept in fp32", len(nodes), len(exclude))
    return sorted(nodes[n] for n in exclude)


def build_int8_onnx(encoder: Encoder, config: Int8Config = DEFAULT_CONFIG, cache_dir: Path | None = None) -> Path:
    """The int8 ONNX file of ``encoder``: read from the cache, or exported, quantised and written atomically."""
    folder = Path(cache_dir) if cache_dir is not None else int8_cache_dir()
    path = folder / f"{make_key(encoder.fingerprint, OPSET, config.key())}.onnx"
    if path.exists():
        return path
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder, prefix=".export-") as tmp:
        fp32_path, int8_path = Path(tmp) / "fp32.onnx", Path(tmp) / "int8.onnx"
        log.info("exporting %s to ONNX and quantising it to int8 (once per model)", encoder.name)
        export_onnx(encoder, fp32_path)
        kept = quantize_onnx(fp32_path, int8_path, config)
        if kept:
            log.info("int8: kept in fp32: %s", ", ".join(kept))
        os.replace(int8_path, path)  # same folder: atomic, never a half-written model under the final name
    return path


# --------------------------------------------------------------------------------------------------
# The model behind the Encoder
# --------------------------------------------------------------------------------------------------


def _session(path: Path):
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = torch.get_num_threads()
    opts.inter_op_num_threads = 1
    return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])


class OrtEncoderBody(torch.nn.Module):
    """An ONNX Runtime session answering like a transformers encoder: last_hidden_state and hidden_states."""

    def __init__(self, path: Path, config: object, input_embeddings: torch.nn.Module) -> None:
        super().__init__()
        self.session = _session(path)
        self.config = config
        self.embeddings_fp32 = input_embeddings  # static token vectors (frequency pages) stay fp32

    def get_input_embeddings(self) -> torch.nn.Module:
        return self.embeddings_fp32

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        output_hidden_states: bool = False,
        **_: object,
    ):
        from transformers.modeling_outputs import BaseModelOutput

        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        feed = {"input_ids": input_ids.cpu().numpy(), "attention_mask": attention_mask.cpu().numpy()}
        hidden = tuple(torch.from_numpy(h) for h in self.session.run(None, feed))  # each (b, t, d)
        return BaseModelOutput(last_hidden_state=hidden[-1], hidden_states=hidden if output_hidden_states else None)


class OrtSeq2Seq(torch.nn.Module):
    """A T5-style model whose encoder runs in ONNX Runtime int8 and whose decoder stays the fp32 torch one."""

    def __init__(self, body: OrtEncoderBody, fp32_model: torch.nn.Module) -> None:
        super().__init__()
        self.body = body
        self.decoder = fp32_model.get_decoder()
        self.config = fp32_model.config

    def get_encoder(self) -> OrtEncoderBody:
        return self.body

    def get_decoder(self) -> torch.nn.Module:
        return self.decoder

    def get_input_embeddings(self) -> torch.nn.Module:
        return self.body.get_input_embeddings()

    def forward(self, *args: object, **kwargs: object):
        raise TypeError("call get_encoder() and get_decoder() of an int8 encoder-decoder model")


def _require_onnxruntime() -> None:
    """int8 needs onnxruntime and onnx; without them, one line that says what to install."""
    import importlib.util

    missing = [m for m in ("onnxruntime", "onnx") if importlib.util.find_spec(m) is None]
    if missing:
        raise InputError(f"--precision int8 needs {' and '.join(missing)}: pip install onnxruntime onnx")


def quantize_encoder(encoder: Encoder, config: Int8Config = DEFAULT_CONFIG, cache_dir: Path | None = None) -> Encoder:
    """The int8 copy of an fp32 ``encoder`` (the fp32 one is left untouched and still usable)."""
    if encoder.precision != "fp32":
        raise ValueError(f"quantize_encoder needs an fp32 encoder, got {encoder.precision}")
    _require_onnxruntime()
    suffix = precision_suffix("int8") + ("" if config == DEFAULT_CONFIG else f"-{config.key()[:12]}")
    fingerprint = encoder.fingerprint + suffix
    if fingerprint in _MEMO:
        _MEMO.move_to_end(fingerprint)
        return _MEMO[fingerprint]
    int8 = encoder_from_onnx(encoder, build_int8_onnx(encoder, config, cache_dir), fingerprint)
    _MEMO[fingerprint] = int8
    while len(_MEMO) > MEMO_SIZE:
        _MEMO.popitem(last=False)
    return int8


def encoder_from_onnx(encoder: Encoder, path: Path, fingerprint: str) -> Encoder:
    """An int8 ``Encoder`` running the quantised ONNX body at ``path`` (made from ``encoder`` by
    ``export_onnx`` + ``quantize_onnx``); T5's decoder and the input embeddings come from ``encoder``."""
    fp32 = encoder.model
    body = OrtEncoderBody(path, fp32.config, fp32.get_input_embeddings())
    model = OrtSeq2Seq(body, fp32) if encoder.is_encoder_decoder else body
    model.eval()
    return dataclasses.replace(encoder, model=model, fingerprint=fingerprint, precision="int8")
