"""int8 encoders on the CPU through ONNX Runtime: ``quantize_encoder(encoder) -> Encoder``.

The encoder (the whole model, or a T5 model's encoder stack) is exported with ``torch.onnx``
(``isoscope.encode.onnx_runtime.export_onnx``), and every ``MatMul`` with a constant weight (the Linear layers) is
quantised by ONNX Runtime's dynamic quantisation: int8 weights with one scale per output channel, kept to 7 bits
(``reduce_range``), and uint8 activations whose scale is computed per batch at run time. Attention score products,
layer norms, softmax and the embeddings stay in fp32. The int8 models are cached under ``~/.cache/isoscope/int8/``
(keyed by the model's fingerprint and the recipe), verified by size and SHA-256 on every read and rebuilt when
damaged (``isoscope.encode.onnx_cache``); each export (last hidden state only, or every layer) is made on first use.

Why 7-bit weights: on x86 CPUs without VNNI (AVX2, AVX-512F) ONNX Runtime multiplies uint8 activations by int8
weights with ``vpmaddubsw``, which adds two products into a saturating int16: 255 x 127 x 2 overflows it, and
the clipped sums cost accuracy. On all-MiniLM-L6-v2, STS-B test (mean pooling, fp32 82.03), 8-bit weights lost
0.27 Spearman points and 7-bit weights none (82.10), at the same speed (2.21 vs 2.31 CPU-s, one thread, 800
sentences); sentence-transformers' ``avx2`` export avoids the overflow with uint8 weights instead, which the
kernels run 1.3x slower (2.94 CPU-s). VNNI and ARM kernels do not saturate; one recipe everywhere keeps the int8
vectors of two machines as close as their kernels allow.

Measured on all-MiniLM-L6-v2 (``make bench-peers``: bench/encode_peers.py, the 5,385 sentences of STS-B test and
dev, 2 AVX2 cores, otherwise idle; bench/RESULTS.md): 461 sentences/s against 247 for sentence-transformers' own
``avx2`` int8 export (1.9x) and 287 for our fp32 ONNX Runtime engine; 241 vs 111 (2.2x) with two more busy processes
on the cores; 0.10 Spearman points lost on STS-B test (81.93 vs 82.03, mean pooling; theirs lose 0.21; the recipe
before 7-bit weights lost 0.29). Per-tensor activation scales mean a sentence's vector depends slightly on the batch
it is padded with (1 - cosine ~1e-2 at worst, a short sentence next to a long one); results are deterministic for a
given list of texts, and differ across CPUs by more than fp32 does (int8 kernels differ between AVX2, AVX-512 VNNI
and ARM): compare int8 vectors by cosine, never bit for bit.

The returned ``Encoder`` has ``precision="int8"``, ``engine="onnx"``, a fingerprint that carries
``isoscope.encode.precision.INT8_RECIPE`` (so caches never mix precisions), and a ``model`` that answers the calls
``isoscope.encode.embed`` makes (``isoscope.encode.onnx_runtime.OrtEncoderBody``). T5's decoder (one step, for
``encdec_first``) stays in fp32.
"""

from __future__ import annotations

import fnmatch
import logging
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from isoscope.cache import default_cache_dir, make_key
from isoscope.encode.encoder import Encoder
from isoscope.encode.onnx_cache import model_bytes, paths
from isoscope.encode.onnx_runtime import EXPORT_VERSION, OPSET, export_onnx, onnx_encoder, require_onnxruntime
from isoscope.encode.precision import INT8_RECIPE, precision_suffix
from isoscope.errors import InputError

log = logging.getLogger(__name__)

MEMO_SIZE = 2  # int8 encoders kept in memory by fingerprint (a CLI run or a test session reuses its copy)
_MEMO: OrderedDict[str, Encoder] = OrderedDict()


@dataclass(frozen=True)
class Int8Config:
    """What gets quantised. ``keep_fp32``: Linear modules (names as in ``model.named_modules()``, fnmatch
    patterns) left in fp32; ``only``: quantise just these (for sensitivity measurements); ``per_channel``:
    one weight scale per output channel instead of one per matrix; ``reduce_range``: 7-bit weights (the
    module docstring says why)."""

    per_channel: bool = True
    keep_fp32: tuple[str, ...] = ()
    only: tuple[str, ...] | None = None
    reduce_range: bool = True

    def key(self) -> str:
        return make_key(INT8_RECIPE, self.per_channel, self.keep_fp32, self.only, self.reduce_range)


DEFAULT_CONFIG = Int8Config()


def int8_cache_dir() -> Path:
    return default_cache_dir() / "int8"


# --------------------------------------------------------------------------------------------------
# Quantisation
# --------------------------------------------------------------------------------------------------


def _module_of(node: object) -> str:
    """The torch module a node came from: ``/body/encoder/layer.5/output/dense/MatMul`` -> ``encoder.layer.5.output.dense``
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
            reduce_range=config.reduce_range,
            weight_type=QuantType.QInt8,
            nodes_to_exclude=exclude,
        )
    finally:
        logging.root.setLevel(level)
    log.debug("int8: %d Linear MatMuls, %d kept in fp32", len(nodes), len(exclude))
    return sorted(nodes[n] for n in exclude)


def int8_key(encoder: Encoder, config: Int8Config = DEFAULT_CONFIG, outputs: str = "last") -> str:
    """The cache key of the int8 export ``outputs`` of ``encoder``."""
    return make_key(encoder.fingerprint, OPSET, EXPORT_VERSION, config.key(), outputs)


def int8_built(encoder: Encoder, config: Int8Config = DEFAULT_CONFIG, cache_dir: Path | None = None) -> bool:
    """Whether the int8 cache holds ``encoder``'s default export (``quantize_encoder`` then builds nothing; a
    damaged copy found on reading is rebuilt all the same)."""
    folder = Path(cache_dir) if cache_dir is not None else int8_cache_dir()
    model, sidecar = paths(folder, int8_key(encoder, config, "last"))
    return model.is_file() and sidecar.is_file()


def build_int8_onnx(
    encoder: Encoder, config: Int8Config = DEFAULT_CONFIG, *, cache_dir: Path | None = None, outputs: str = "last"
) -> bytes:
    """The verified bytes of the int8 ONNX model of ``encoder`` (export ``outputs``): read from the cache, or
    exported, quantised and written atomically (with its SHA-256 sidecar)."""
    folder = Path(cache_dir) if cache_dir is not None else int8_cache_dir()

    def build(path: Path) -> None:
        fp32_path = path.with_name("fp32.onnx")
        log.info("exporting %s to ONNX (%s) and quantising it to int8 (once per model)", encoder.name, outputs)
        export_onnx(encoder, fp32_path, outputs)
        kept = quantize_onnx(fp32_path, path, config)
        if kept:
            log.info("int8: kept in fp32: %s", ", ".join(kept))

    return model_bytes(folder, int8_key(encoder, config, outputs), build, what="int8 model")


# --------------------------------------------------------------------------------------------------
# The Encoder
# --------------------------------------------------------------------------------------------------


def quantize_encoder(encoder: Encoder, config: Int8Config = DEFAULT_CONFIG, cache_dir: Path | None = None) -> Encoder:
    """The int8 copy of an fp32 torch ``encoder`` (the fp32 one is left untouched and still usable)."""
    if encoder.precision != "fp32" or encoder.engine != "torch":
        raise ValueError(f"quantize_encoder needs an fp32 torch encoder, got {encoder.engine_label}")
    if encoder.device != "cpu" or encoder.dtype != "float32":
        raise InputError(
            f"int8 is built from the float32 model on the CPU, not from one on {encoder.device} in {encoder.dtype}; "
            "load it with device='cpu' (--device cpu)"
        )
    require_onnxruntime()
    suffix = precision_suffix("int8") + ("" if config == DEFAULT_CONFIG else f"-{config.key()[:12]}")
    fingerprint = encoder.fingerprint + suffix
    if fingerprint in _MEMO:
        _MEMO.move_to_end(fingerprint)
        return _MEMO[fingerprint]
    build_int8_onnx(
        encoder, config, cache_dir=cache_dir, outputs="last"
    )  # the export every default pooling needs, built now

    def source(outputs: str) -> bytes:
        return build_int8_onnx(encoder, config, cache_dir=cache_dir, outputs=outputs)

    int8 = onnx_encoder(encoder, source, fingerprint, precision="int8")
    _MEMO[fingerprint] = int8
    while len(_MEMO) > MEMO_SIZE:
        _MEMO.popitem(last=False)
    return int8
