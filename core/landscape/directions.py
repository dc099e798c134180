"""Filter-normalised random directions (Li et al. 2018) and the sharpness measured along them.

Why. The task plane (``isoscope.landscape.axes``) scales both axes to |delta1|, and fine-tuning from
pre-trained weights moves far less than training from scratch, so one unit of ``a`` is a different
distance for the two initialisations: flatness does not compare across them on that plane. Worse, a
network with normalisation layers is scale-invariant in many of its weights (a Linear layer feeding a
LayerNorm computes the same function after multiplying its weight and bias by any c > 0), so any flatness
measured in raw parameter units can be changed at will without changing the model.

The remedy of Li et al. (2018), *Visualizing the Loss Landscape of Neural Nets*: a Gaussian direction d,
drawn with one seed, in which every filter is rescaled to the norm of the same filter of the point theta
it is drawn around: d_f <- d_f * |theta_f| / |d_f|. A filter is a row of a weight matrix (the incoming
weights of one output unit; for embedding tables, one token's vector). Biases and LayerNorm parameters
(every 1-D parameter) are set to zero in the direction, as Li et al. do. Moving theta along d then changes
each filter by the same *relative* amount, so the surface L(theta + a d) is unchanged when a layer is
rescaled, and curves drawn around two different points on the same alpha range compare by eye.

Sharpness. For several directions d_k (one seed each) and fixed alphas, the loss increase
L(theta + alpha d_k) - L(theta); the headline is its mean over the alphas (take them symmetric, +-alpha, so
the first-order term cancels at a point that is not a minimum), then the mean and sample standard deviation
over the directions. It is scale-invariant in the sense above; the top Hessian eigenvalue is not.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from isoscope.landscape import records
from isoscope.landscape.flat import FlatLayout, norm
from isoscope.landscape.options import DIRECTIONS

log = logging.getLogger(__name__)

DIRECTION_SEED_OFFSET = 2_000_003  # directions never reuse the seed of data order, head or scratch init
SHARPNESS_DEFINITION = (
    "mean over the fixed alphas of L(theta1 + alpha d) - L(theta1) (training loss), d a filter-normalised "
    "Gaussian direction; mean and sample sd over the directions"
)


def check_directions(value: str) -> str:
    if value not in DIRECTIONS:
        raise ValueError(f"unknown directions '{value}'; choose one of {', '.join(DIRECTIONS)}")
    return value


def direction_seed(seed: int, k: int) -> int:
    """Seed of the k-th random direction of an experiment run with ``seed``."""
    return seed * 1_000 + k + DIRECTION_SEED_OFFSET


def filter_normalized_direction(layout: FlatLayout, theta: torch.Tensor, seed: int) -> torch.Tensor:
    """A Gaussian direction with every filter rescaled to the norm of theta's filter; 1-D parameters zero.

    The whole vector is drawn at once from ``seed`` (so the draw does not depend on the values of theta),
    then parameter by parameter: an (r, ...) parameter is r filters (rows), each scaled to |theta_row|;
    a 1-D parameter (bias, LayerNorm weight or bias) is zeroed. Returns (p,) float32 like theta, on its device (drawn
    on the CPU: one seed, one direction on every device, ``isoscope.landscape.placement``).
    """
    if theta.ndim != 1 or theta.numel() != layout.size:
        raise ValueError(f"theta has shape {tuple(theta.shape)}; expected ({layout.size},)")
    gen = torch.Generator().manual_seed(int(seed))
    d = torch.randn(layout.size, generator=gen, dtype=theta.dtype).to(theta.device)  # (p,) drawn on the CPU
    for (start, stop), shape in zip(layout.offsets().values(), layout.shapes, strict=True):
        if len(shape) < 2:
            d[start:stop] = 0.0
            continue
        rows = d[start:stop].view(shape[0], -1)  # (r, k) view into d
        ref = theta[start:stop].view(shape[0], -1)  # (r, k)
        d_norm = torch.linalg.vector_norm(rows, dim=1, dtype=torch.float64)  # (r,)
        t_norm = torch.linalg.vector_norm(ref, dim=1, dtype=torch.float64)  # (r,)
        scale = torch.where(d_norm > 0, t_norm / d_norm.clamp_min(1e-300), torch.zeros_like(d_norm))  # (r,)
        rows.mul_(scale.to(rows.dtype)[:, None])
    return d


def global_normalized_direction(theta: torch.Tensor, seed: int) -> torch.Tensor:
    """The baseline without filter normalisation: a Gaussian direction scaled to |theta| as a whole. Returns (p,)."""
    gen = torch.Generator().manual_seed(int(seed))
    d = torch.randn(theta.shape, generator=gen, dtype=theta.dtype).to(theta.device)  # (p,) drawn on the CPU
    return d.mul_(norm(theta) / norm(d))


@dataclass
class DirectionPlane:
    """origin + a * e1 + b * e2 for two (not orthogonalised) random directions; what ``surface_2d`` needs."""

    origin: torch.Tensor  # (p,)
    e1: torch.Tensor  # (p,)
    e2: torch.Tensor  # (p,)

    def point(self, a: float, b: float, out: torch.Tensor | None = None) -> torch.Tensor:
        out = torch.add(self.origin, self.e1, alpha=a, out=out)
        return out.add_(self.e2, alpha=b)

    def summary(self) -> dict[str, float]:
        from isoscope.landscape.flat import dot

        n1, n2 = norm(self.e1), norm(self.e2)
        return {
            "norm_d1": n1,
            "norm_d2": n2,
            "norm_theta": norm(self.origin),
            "cos_d1_d2": dot(self.e1, self.e2) / (n1 * n2) if n1 > 0 and n2 > 0 else float("nan"),
        }


def check_alphas(curve_alphas: Sequence[float], at: Sequence[float]) -> list[int]:
    """Indices of the sharpness alphas ``at`` in the curve's alphas; ValueError when one is missing."""
    grid = np.asarray(curve_alphas, np.float64)
    idx = []
    for a in at:
        hits = np.flatnonzero(np.isclose(grid, a, rtol=0.0, atol=1e-12))
        if len(hits) == 0:
            raise ValueError(f"sharpness alpha {a} is not a point of the 1D curves")
        idx.append(int(hits[0]))
    return idx


@dataclass
class LossIncreases:
    """Loss increases along k filter-normalised directions at fixed alphas, and their statistics."""

    alphas: list[float]  # the fixed alphas (symmetric, +-alpha, so the first-order term cancels)
    base_loss: float  # L(theta)
    increase: np.ndarray  # (k, len(alphas)) L(theta + alpha d_k) - L(theta)

    @property
    def per_direction(self) -> np.ndarray:
        """Mean increase over the alphas, one per direction. Returns (k,)."""
        return self.increase.mean(axis=1)

    @property
    def mean(self) -> float:
        return float(self.per_direction.mean())

    @property
    def sd(self) -> float:
        """Sample standard deviation over directions (NaN for a single direction)."""
        k = len(self.per_direction)
        return float(self.per_direction.std(ddof=1)) if k > 1 else float("nan")

    def record(self) -> records.Sharpness:
        """The statistics as results.json holds them (scale-invariant by construction)."""
        k = self.increase.shape[0]
        per_alpha_sd = self.increase.std(axis=0, ddof=1) if k > 1 else np.full(len(self.alphas), np.nan)
        return records.Sharpness(
            mean=self.mean,
            sd=self.sd,
            alphas=tuple(float(a) for a in self.alphas),
            n_directions=int(k),
            per_direction=tuple(self.per_direction.tolist()),
            per_alpha_mean=tuple(self.increase.mean(axis=0).tolist()),
            per_alpha_sd=tuple(per_alpha_sd.tolist()),
            base_loss=float(self.base_loss),
            scale_invariant=True,
            definition=SHARPNESS_DEFINITION,
        )

    def summary(self) -> dict[str, object]:
        return self.record().to_json()


def sharpness(curve_alphas: Sequence[float], losses: np.ndarray, at: Sequence[float]) -> LossIncreases:
    """Sharpness from 1D curves ``losses`` (k, n) along k directions at ``curve_alphas`` (n,), which hold 0 and ``at``."""
    losses = np.atleast_2d(np.asarray(losses, np.float64))  # (k, n)
    i0 = check_alphas(curve_alphas, [0.0])[0]
    idx = check_alphas(curve_alphas, at)
    base = losses[:, i0]  # (k,) the same value L(theta) for every direction
    if not np.allclose(base, base[0], rtol=1e-12, atol=0.0):
        raise ValueError("the curves disagree at alpha = 0: they were not drawn around the same point")
    return LossIncreases([float(a) for a in at], float(base[0]), losses[:, idx] - base[:, None])


def curve_alphas(range_: tuple[float, float], points: int, at: Sequence[float]) -> np.ndarray:
    """The 1D grid along each direction: ``points`` evenly spaced in ``range_`` plus 0 and the sharpness alphas."""
    values = np.r_[np.linspace(*range_, points), 0.0, np.asarray(at, np.float64)]
    return np.unique(np.round(values, 12))  # 0.1 from linspace and 0.1 given: one point
