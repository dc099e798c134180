"""Which engine runs an fp32 encoder: ``fastest_fp32_encoder(encoder) -> Encoder``.

On the CPU the fastest engine whose vectors are the fp32 model's within ``FP32_ENGINE_TOLERANCE``
(``isoscope.encode.precision``, where the bound is derived) is ONNX Runtime on an fp32 export of the model
(``isoscope.encode.onnx_runtime``: several batches at once, one non-spinning thread each). Each export is checked
against the torch model on a padded probe batch when its session is made, every hidden state it returns, token
by token; an export that differs by more than the tolerance is never used (a warning says so, torch answers).
So the ONNX engine may share the torch engine's fingerprint, and every cache keyed by it: the two give the same
vectors to within the tolerance. On a GPU, or without onnxruntime, the torch encoder itself is the answer.

``isoscope atlas`` and the app's corpus embedding use this; int8 (``isoscope.encode.quantize``) stays an explicit
choice because it changes results. Measured with ``make bench-peers`` (bench/RESULTS.md).
"""

from __future__ import annotations

import importlib.util
import logging
from collections import OrderedDict
from pathlib import Path

import torch

from isoscope.cache import default_cache_dir, make_key
from isoscope.encode.encoder import Encoder
from isoscope.encode.onnx_cache import model_bytes
from isoscope.encode.onnx_runtime import (
    EXPORT_VERSION,
    OPSET,
    EngineMismatch,
    OrtEncoderBody,
    encoder_body,
    export_onnx,
    onnx_encoder,
    require_onnxruntime,
)
from isoscope.encode.precision import FP32_ENGINE_TOLERANCE

log = logging.getLogger(__name__)

MEMO_SIZE = 2
_MEMO: OrderedDict[str, Encoder] = OrderedDict()
PROBE_TEXTS: tuple[str, ...] = (  # one padded batch: lengths 1 to ~40 tokens, so padding and the mask are exercised
    "A man is playing a guitar on a small stage in front of a quiet audience, while the rain falls outside.",
    "Stock markets fell sharply.",
    "ok",
    "The cat sat on the mat while the dog slept by the fire.",
)


def fp32_cache_dir() -> Path:
    return default_cache_dir() / "onnx"


def fp32_key(encoder: Encoder, outputs: str) -> str:
    return make_key(encoder.fingerprint, OPSET, EXPORT_VERSION, "fp32", outputs)


def relative_error(candidate: torch.Tensor, reference: torch.Tensor, mask: torch.Tensor) -> float:
    """Largest ``|c - r| / |r|`` over the real tokens of (b, t, d) hidden states (mask (b, t))."""
    keep = mask.bool()
    c, r = candidate[keep].double(), reference[keep].double()  # (tokens, d)
    return float(((c - r).norm(dim=1) / r.norm(dim=1).clamp(min=1e-30)).max())


def probe_error(encoder: Encoder, body: OrtEncoderBody, kind: str) -> float:
    """The largest relative error of export ``kind`` against the torch ``encoder`` on ``PROBE_TEXTS``."""
    batch = encoder.tokenizer(list(PROBE_TEXTS), padding=True, truncation=True, max_length=64, return_tensors="pt")
    ids, mask = batch["input_ids"], batch["attention_mask"]  # (4, t) each, right-padded
    with torch.inference_mode():
        out = encoder_body(encoder.model, encoder.is_encoder_decoder)(
            input_ids=ids, attention_mask=mask, output_hidden_states=kind == "all"
        )
    reference = tuple(out.hidden_states) if kind == "all" else (out.last_hidden_state,)
    got = body.run(kind, ids, mask)
    if len(got) != len(reference):
        return float("inf")
    return max(relative_error(g, r, mask) for g, r in zip(got, reference, strict=True))


def onnx_fp32_encoder(encoder: Encoder, cache_dir: Path | None = None) -> Encoder:
    """The fp32 ``encoder`` run by ONNX Runtime, with the same fingerprint; each export is checked against the
    torch model when first used (``probe_error`` <= ``FP32_ENGINE_TOLERANCE``, else torch answers)."""
    if encoder.precision != "fp32" or encoder.engine != "torch":
        raise ValueError(f"onnx_fp32_encoder needs an fp32 torch encoder, got {encoder.engine_label}")
    require_onnxruntime("the ONNX Runtime engine")
    folder = Path(cache_dir) if cache_dir is not None else fp32_cache_dir()

    def source(outputs: str) -> bytes:
        def build(path: Path) -> None:
            log.info("exporting %s to ONNX (%s, fp32; once per model)", encoder.name, outputs)
            export_onnx(encoder, path, outputs)

        return model_bytes(folder, fp32_key(encoder, outputs), build, what="fp32 ONNX model")

    def check(kind: str, body: OrtEncoderBody) -> None:
        err = probe_error(encoder, body, kind)
        log.debug("ONNX Runtime fp32 (%s) vs torch: relative error %.2e", kind, err)
        if not err <= FP32_ENGINE_TOLERANCE:
            raise EngineMismatch(
                f"its vectors differ from torch's by {err:.1e} (tolerance {FP32_ENGINE_TOLERANCE:.0e})"
            )

    return onnx_encoder(encoder, source, encoder.fingerprint, precision="fp32", check=check)


def _on_cpu(encoder: Encoder) -> bool:
    """True when ``encoder`` runs on the CPU in float32: the only place the ONNX engines run (the engine follows
    the device; a half dtype is a torch model's choice, ``isoscope.encode.device``)."""
    return encoder.dtype == "float32" and all(p.device.type == "cpu" for p in encoder.model.parameters())


def fastest_fp32_encoder(encoder: Encoder, cache_dir: Path | None = None) -> Encoder:
    """The fastest engine for ``encoder`` whose vectors equal its own within ``FP32_ENGINE_TOLERANCE``: the ONNX
    Runtime copy on the CPU in float32 (memoised by fingerprint), else ``encoder`` itself (a GPU, a half dtype).
    An encoder that is not fp32 torch (int8, or already ONNX) is returned as it is."""
    if encoder.precision != "fp32" or encoder.engine != "torch":
        return encoder
    if (
        not _on_cpu(encoder)
        or importlib.util.find_spec("onnxruntime") is None
        or importlib.util.find_spec("onnx") is None
    ):
        return encoder
    key = make_key(encoder.fingerprint, cache_dir)
    if key not in _MEMO:
        _MEMO[key] = onnx_fp32_encoder(encoder, cache_dir)
    _MEMO.move_to_end(key)
    while len(_MEMO) > MEMO_SIZE:
        _MEMO.popitem(last=False)
    return _MEMO[key]


def engine_in_use(encoder: Encoder, hidden_states: bool = False) -> str:
    """What runs ``encoder`` for poolings with (or without) hidden states: its label, or ``PyTorch fp32`` when
    that ONNX export failed its check. Makes (and checks) the export's session now, so a long job can say which
    engine it runs on before it starts."""
    if encoder.engine != "onnx":
        return encoder.engine_label
    body = encoder.model.get_encoder() if encoder.is_encoder_decoder else encoder.model
    return encoder.engine_label if body.session("all" if hidden_states else "last") is not None else "PyTorch fp32"
