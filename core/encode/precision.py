"""Numeric precision and engine of an encoder: names, tolerances and cache identity, light to import (no torch).

``fp32`` is the model as loaded; ``int8`` is the copy made by ``isoscope.encode.quantize.quantize_encoder`` (int8
weights and dynamically quantised int8 activations in the Linear layers of the transformer). The *engine* is what
runs the forward pass: ``torch`` (the model as loaded) or ``onnx`` (ONNX Runtime on an export of it,
``isoscope.encode.engines``). int8 always runs on ``onnx``; fp32 runs on either.

Cache identity. Everything that caches embeddings keys them by ``Encoder.fingerprint``. An int8 encoder's
fingerprint is the fp32 one plus ``precision_suffix("int8")``, so the two precisions never share a cache entry,
and a change of the int8 recipe (``INT8_RECIPE``) is a new key too. The fp32 engines share one fingerprint: their
vectors are equal within ``FP32_ENGINE_TOLERANCE`` (below), which ``isoscope.encode.engines`` checks on every
model before it uses ONNX Runtime, and the tests check on tiny models of each architecture and the real one.

``FP32_ENGINE_TOLERANCE``: the largest relative L2 difference ``|v_onnx - v_torch| / |v_torch|`` of any token or
sentence vector between two fp32 engines. Both compute the same function in float32 (unit round-off
u = 2^-24 = 6e-8) with other summation orders and fused kernels: a dot product of K <= 4096 terms differs by about
sqrt(K) u <= 4e-6 relative between two orders; a layer chains a handful of such products, residual additions and a
layer norm, and L <= 24 layers add their errors: about 24 x 4 x 4e-6 = 4e-4 in the worst ordering, ~1e-5 typical.
1e-4 sits between the two: far above the 1e-7..1e-6 that the two engines differ by in practice (all-MiniLM-L6-v2:
see tests/core/encode/test_engines.py), far below anything a wrong graph produces (a dropped mask, a missing
layer norm: 1e-1 and more). Through a cosine of two unit vectors, a relative error e of each moves the cosine by at
most 2e: 2e-4 at the tolerance, invisible in a Spearman or a neighbour list except between exact near-ties.
"""

from __future__ import annotations

from typing import Literal

from isoscope.errors import InputError

Precision = Literal["fp32", "int8"]
PRECISIONS: tuple[str, ...] = ("fp32", "int8")
Engine = Literal["torch", "onnx"]
ENGINES: tuple[str, ...] = ("torch", "onnx")
PRECISION_DESCRIPTIONS: dict[str, str] = {  # the one glossary of precisions (the sidebar's tooltip)
    "fp32": "32-bit floats: the model as trained",
    "int8": "its Linear layers in 8-bit integers through ONNX Runtime: about twice as fast on a CPU for a few "
    "tenths of a Spearman point (built once per model; cached apart from fp32)",
}
INT8_RECIPE = "int8-v2"  # bump when isoscope.encode.quantize changes what the int8 model computes
FP32_ENGINE_TOLERANCE = 1e-4  # relative L2 difference of any vector between two fp32 engines (module docstring)
ENGINE_LABELS: dict[tuple[str, str], str] = {
    ("fp32", "torch"): "PyTorch fp32",
    ("fp32", "onnx"): "ONNX Runtime fp32",
    ("int8", "onnx"): "ONNX Runtime int8",
}


def parse_precision(value: object) -> str:
    """``value`` as one of ``PRECISIONS`` (case and surrounding spaces ignored); InputError listing them."""
    name = str(value).strip().lower()
    if name not in PRECISIONS:
        raise InputError(f"unknown precision '{value}'; choose one of {', '.join(PRECISIONS)}")
    return name


def precision_suffix(precision: str) -> str:
    """What an encoder's fingerprint carries for ``precision``: nothing for fp32 (existing caches stay valid)."""
    return "" if parse_precision(precision) == "fp32" else f"+{INT8_RECIPE}"


def engine_label(precision: str, engine: str) -> str:
    """How the app and the commands name what embedded: ``ONNX Runtime fp32``, ``PyTorch fp32``, ..."""
    return ENGINE_LABELS.get((precision, engine), f"{engine} {precision}")
