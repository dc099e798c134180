"""Every affine fitted map as one exact map ``y = x @ W + b`` (``isoscope.linalg.AffineMap``): what a Dense layer, a
FAISS ``LinearTransform`` or a graph's matmul carries out of Isoscope. Each class says its own form
(``affine_map``; ``Chain`` composes its steps' in float64); the flow is not affine: ``affine_map`` refuses it in one
line that offers the ONNX export.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from isoscope.errors import InputError
from isoscope.linalg import AffineMap

if TYPE_CHECKING:
    from isoscope.calibrate.base import FittedMap

__all__ = ["FLOW_REFUSAL", "AffineMap", "affine_map", "is_affine"]

FLOW_REFUSAL = (
    "{method}: a flow is not an affine map, so it cannot ride along as a Dense layer or a FAISS pre-transform; "
    "export it with --format onnx (the encoder, pooling and flow in one ONNX graph)"
)


def is_affine(calibrator: FittedMap) -> bool:
    """Whether ``calibrator`` (every step of a chain) is an affine map."""
    return bool(calibrator.affine)


def affine_map(calibrator: FittedMap) -> AffineMap:
    """The fitted ``calibrator`` as an exact ``AffineMap`` (float64); InputError for a flow or another map that is
    not affine, and for an unfitted calibrator."""
    from sklearn.exceptions import NotFittedError

    if not is_affine(calibrator):
        raise InputError(FLOW_REFUSAL.format(method=calibrator.method))
    try:
        return calibrator.affine_map()
    except NotFittedError:
        raise InputError(f"{calibrator.method}: fit the calibrator before exporting it") from None
