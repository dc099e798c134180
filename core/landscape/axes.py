"""The plane of a loss surface: origin theta0, axes from two fine-tuning runs, and signed projection onto it.

delta1 = theta1 - theta0 and delta2 = theta2 - theta0. The axes are e1 = delta1 and e2 = the component
of delta2 orthogonal to delta1 (Gram-Schmidt), rescaled to |delta1|, so theta1 sits at (1, 0) and both
axes have the same length. Nothing is assumed: cos(delta1, delta2), the share of delta2 that survives
the orthogonalisation and the measured cos(e1, e2) are all reported.

A point theta gets SIGNED coordinates (a, b) from the least-squares problem
min |d - a e1 - b e2| with d = theta - theta0, i.e. the 2x2 normal equations G [a, b] = [e1.d, e2.d]
with the Gram matrix G of (e1, e2); the off-plane residual is |d - a e1 - b e2| / |d|.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import torch

from isoscope.landscape.flat import dot, norm, residual_norm
from isoscope.landscape.records import Axes, Coords

log = logging.getLogger(__name__)

MIN_KEPT = 1e-4  # below this share of delta2 left after orthogonalisation the plane is degenerate


@dataclass
class Plane:
    """theta0 + a * e1 + b * e2, with the measurements that justify it."""

    origin: torch.Tensor  # (p,) theta0
    e1: torch.Tensor  # (p,) delta1
    e2: torch.Tensor  # (p,) delta2 orthogonalised to delta1, length |delta1|
    norm_delta1: float
    norm_delta2: float
    cos_delta1_delta2: float
    kept_fraction: float  # |delta2_perp| / |delta2| = sqrt(1 - cos^2)
    gram: np.ndarray  # (2, 2) float64 Gram matrix of (e1, e2)

    @property
    def cos_e1_e2(self) -> float:
        """Measured cosine between the two axes after Gram-Schmidt (should be ~0)."""
        return float(self.gram[0, 1] / np.sqrt(self.gram[0, 0] * self.gram[1, 1]))

    def point(self, a: float, b: float, out: torch.Tensor | None = None) -> torch.Tensor:
        """theta0 + a e1 + b e2, written into ``out`` when given (no allocation). Returns (p,)."""
        out = torch.add(self.origin, self.e1, alpha=a, out=out)
        return out.add_(self.e2, alpha=b)

    def axes(self) -> Axes:
        """The measurements that justify the plane, as results.json holds them."""
        return Axes(
            self.norm_delta1,
            self.norm_delta2,
            self.cos_delta1_delta2,
            self.kept_fraction,
            self.cos_e1_e2,
            float(np.sqrt(self.gram[0, 0])),
            float(np.sqrt(self.gram[1, 1])),
        )


Projection = Coords  # the signed coordinates of a point, as results.json holds them


def make_plane(theta0: torch.Tensor, theta1: torch.Tensor, theta2: torch.Tensor) -> Plane:
    """Axes from two end points; ValueError when delta1 is zero or delta2 is (nearly) parallel to it."""
    delta1 = theta1 - theta0  # (p,)
    n1 = norm(delta1)
    if n1 == 0.0:
        raise ValueError("theta1 equals theta0: the first run did not move (check lr and epochs)")
    delta2 = theta2 - theta0  # (p,)
    n2 = norm(delta2)
    if n2 == 0.0:
        raise ValueError("theta2 equals theta0: the second run did not move (check lr and epochs)")
    cos = dot(delta1, delta2) / (n1 * n2)
    delta2.sub_(delta1, alpha=dot(delta1, delta2) / n1**2)  # in place: now delta2_perp
    n_perp = norm(delta2)
    kept = n_perp / n2
    if kept < MIN_KEPT:
        raise ValueError(
            f"delta2 is parallel to delta1 (cos {cos:.6f}); use a second task that moves the weights differently"
        )
    e2 = delta2.mul_(n1 / n_perp)
    gram = np.array([[dot(delta1, delta1), dot(delta1, e2)], [0.0, dot(e2, e2)]])
    gram[1, 0] = gram[0, 1]
    plane = Plane(theta0, delta1, e2, n1, n2, float(cos), float(kept), gram)
    log.info("plane: |d1| %.4g |d2| %.4g cos %.4f kept %.4f cos(e1,e2) %.2e", n1, n2, cos, kept, plane.cos_e1_e2)
    return plane


def project(plane: Plane, theta: torch.Tensor) -> Projection:
    """Signed (a, b) of ``theta`` by least squares with the Gram matrix, and the relative off-plane residual."""
    d = theta - plane.origin  # (p,)
    dist = norm(d)
    if dist == 0.0:
        return Projection(0.0, 0.0, 0.0, 0.0)
    rhs = np.array([dot(plane.e1, d), dot(plane.e2, d)])  # (2,)
    a, b = np.linalg.solve(plane.gram, rhs)
    res = residual_norm(d, (float(a), float(b)), (plane.e1, plane.e2))
    return Projection(float(a), float(b), res / dist, dist)
