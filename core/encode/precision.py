"""Numeric precision of an encoder: names and cache identity, light to import (no torch).

``fp32`` is the model as loaded; ``int8`` is the copy made by ``isoscope.encode.quantize.quantize_encoder`` (int8 weights
and dynamically quantised int8 activations in the Linear layers of the transformer). Everything that caches
embeddings keys them by ``Encoder.fingerprint``, and an int8 encoder's fingerprint is the fp32 one plus
``precision_suffix("int8")``, so the two precisions never share a cache entry, and a change of the int8
recipe (``INT8_RECIPE``) is a new key too.
"""

from __future__ import annotations

from typing import Literal

from isoscope.errors import InputError

Precision = Literal["fp32", "int8"]
PRECISIONS: tuple[str, ...] = ("fp32", "int8")
INT8_RECIPE = "int8-v1"  # bump when isoscope.encode.quantize changes what the int8 model computes


def parse_precision(value: object) -> str:
    """``value`` as one of ``PRECISIONS`` (case and surrounding spaces ignored); InputError listing them."""
    name = str(value).strip().lower()
    if name not in PRECISIONS:
        raise InputError(f"unknown precision '{value}'; choose one of {', '.join(PRECISIONS)}")
    return name


def precision_suffix(precision: str) -> str:
    """What an encoder's fingerprint carries for ``precision``: nothing for fp32 (existing caches stay valid)."""
    return "" if parse_precision(precision) == "fp32" else f"+{INT8_RECIPE}"
