"""Every linear calibrator as one exact affine map ``y = x @ W + b``: what a Dense layer, a FAISS
``LinearTransform`` or a graph's matmul carries out of Isoscope.

- ``Identity``: ``W = I``, ``b = 0``; ``Centering``: ``W = I``, ``b = -mu``;
- ``Whitening`` (``whitening``, ``whitening:K``): ``W = C`` (d, k), ``b = -mu C``;
- ``StandardNormalization``: ``W = diag(1 / sigma)``, ``b = -mu / sigma``;
- ``AllButTheTop``: ``W = P = I - U U^T`` (the projector off the top directions), ``b = -mu P``;
- ``Chain``: ``(x W1 + b1) W2 + b2 = x (W1 W2) + (b1 W2 + b2)``, composed in float64.

The flow is not affine: ``affine_map`` refuses it in one line that offers the ONNX export.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from isoscope.errors import InputError

if TYPE_CHECKING:
    from isoscope.calibrate import Calibrator

FLOW_REFUSAL = (
    "{method}: a flow is not an affine map, so it cannot ride along as a Dense layer or a FAISS pre-transform; "
    "export it with --format onnx (the encoder, pooling and flow in one ONNX graph)"
)


@dataclass(frozen=True)
class AffineMap:
    """``y = x @ weight + bias``: weight (d_in, d_out), bias (d_out,), both float64."""

    weight: np.ndarray  # (d_in, d_out)
    bias: np.ndarray  # (d_out,)

    @property
    def d_in(self) -> int:
        return int(self.weight.shape[0])

    @property
    def d_out(self) -> int:
        return int(self.weight.shape[1])

    def apply(self, X: np.ndarray) -> np.ndarray:
        """(n, d_in) -> (n, d_out) float32, computed in float64."""
        return (np.asarray(X, np.float64) @ self.weight + self.bias).astype(np.float32)

    @property
    def centre(self) -> np.ndarray:
        """c (d_in,) with ``x @ W + b = (x - c) @ W + r`` and r small: the least-squares solution of ``c W = -b``.
        Subtracting c first keeps float32 arithmetic accurate on vectors in a narrow cone (x close to the mean),
        where ``x @ W`` and ``b`` nearly cancel."""
        c, *_ = np.linalg.lstsq(self.weight.T, -self.bias, rcond=None)  # (d_in,)
        return c

    def then(self, other: AffineMap) -> AffineMap:
        """This map followed by ``other``: ``(x W1 + b1) W2 + b2``."""
        return AffineMap(self.weight @ other.weight, self.bias @ other.weight + other.bias)


def is_affine(calibrator: Calibrator) -> bool:
    """Whether ``calibrator`` (every step of a chain) is one of the linear calibrators."""
    from isoscope.calibrate.linear import AllButTheTop, Centering, Chain, Identity, StandardNormalization, Whitening

    if isinstance(calibrator, Chain):
        return all(is_affine(s) for s in calibrator.steps)
    return isinstance(calibrator, AllButTheTop | Centering | Identity | StandardNormalization | Whitening)


def affine_map(calibrator: Calibrator) -> AffineMap:
    """The fitted ``calibrator`` as an exact ``AffineMap`` (float64); InputError for a flow or another map that is
    not affine, and for an unfitted calibrator."""
    from sklearn.exceptions import NotFittedError

    from isoscope.calibrate.linear import AllButTheTop, Centering, Chain, Identity, StandardNormalization, Whitening

    if not is_affine(calibrator):
        raise InputError(FLOW_REFUSAL.format(method=calibrator.method))
    try:
        calibrator._check_fitted()
    except NotFittedError:
        raise InputError(f"{calibrator.method}: fit the calibrator before exporting it") from None
    d = int(calibrator.n_features_in_)
    if isinstance(calibrator, Chain):
        out = AffineMap(np.eye(d), np.zeros(d))
        for step in calibrator.steps_:
            out = out.then(affine_map(step))
        return out
    if isinstance(calibrator, Identity):
        return AffineMap(np.eye(d), np.zeros(d))
    mean = np.asarray(calibrator.mean_, np.float64)  # (d,)
    if isinstance(calibrator, Centering):
        return AffineMap(np.eye(d), -mean)
    if isinstance(calibrator, Whitening):
        W = np.asarray(calibrator.components_, np.float64)  # (d, k)
        return AffineMap(W, -mean @ W)
    if isinstance(calibrator, StandardNormalization):
        inv = 1.0 / np.asarray(calibrator.scale_, np.float64)  # (d,)
        return AffineMap(np.diag(inv), -mean * inv)
    assert isinstance(calibrator, AllButTheTop)
    U = np.asarray(calibrator.components_, np.float64)  # (d, D)
    P = np.eye(d) - U @ U.T  # (d, d)
    return AffineMap(P, -mean @ P)
