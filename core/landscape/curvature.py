"""Flatness at an optimum: the top Hessian eigenvalue (power iteration on Hessian-vector products) and the
curvature of a 2D grid around a point (local quadratic fit).

Both take a generic function of the flat parameter vector, so the tests check them on a quadratic
0.5 (x - x*)^T H (x - x*) whose Hessian is known exactly.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch

from isoscope.landscape.flat import dot, norm

log = logging.getLogger(__name__)

LossFn = Callable[[torch.Tensor], torch.Tensor]  # theta (p,) -> scalar loss, differentiable
ProgressFn = Callable[[int, int], None]


def hvp(loss_fn: LossFn, theta: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Exact Hessian-vector product H(theta) v by double backward. Returns (p,)."""
    x = theta.detach().clone().requires_grad_(True)
    with torch.enable_grad():
        (g,) = torch.autograd.grad(loss_fn(x), x, create_graph=True)
        (hv,) = torch.autograd.grad(g, x, grad_outputs=v)
    return hv.detach()


@dataclass
class HessianResult:
    """Dominant eigenvalue (largest |lambda|) of the Hessian at a point, by power iteration (the pipeline
    stores it as ``records.Hessian``)."""

    eigenvalue: float
    iterations: int
    converged: bool
    relative_change: float  # |lambda_k - lambda_{k-1}| / |lambda_k| at the last iteration
    history: list[float] = field(default_factory=list)


def hessian_top_eigenvalue(
    loss_fn: LossFn,
    theta: torch.Tensor,
    *,
    iters: int = 20,
    tol: float = 1e-3,
    seed: int = 0,
    progress: ProgressFn | None = None,
) -> HessianResult:
    """Power iteration v <- Hv / |Hv| from a seeded random start; the estimate is the Rayleigh quotient v.Hv.

    Power iteration finds the eigenvalue of largest magnitude; at a minimum that is the sharpest positive
    curvature. Stops when the estimate changes by less than ``tol`` (relative) or after ``iters`` products.
    """
    if iters < 1:
        raise ValueError("iters must be >= 1")
    gen = torch.Generator().manual_seed(seed)
    v = torch.randn(theta.shape, generator=gen, dtype=theta.dtype).to(theta.device)  # (p,) drawn on the CPU
    v /= norm(v)
    history: list[float] = []
    change = float("inf")
    for k in range(iters):
        hv = hvp(loss_fn, theta, v)  # (p,)
        lam = dot(v, hv)
        if history:
            change = abs(lam - history[-1]) / max(abs(lam), 1e-30)
        history.append(lam)
        if progress is not None:
            progress(k + 1, iters)
        n = norm(hv)
        if n == 0.0:
            return HessianResult(0.0, k + 1, True, 0.0, history)
        v = hv / n
        if change < tol:
            if progress is not None:
                progress(iters, iters)
            return HessianResult(lam, k + 1, True, change, history)
    return HessianResult(history[-1], iters, False, change, history)


def grid_curvature(
    alphas: np.ndarray,
    betas: np.ndarray,
    values: np.ndarray,
    *,
    at: tuple[float, float] = (1.0, 0.0),
    gram: np.ndarray | None = None,
    half_width: int = 1,
) -> dict[str, object]:
    """Second derivatives of a grid ``values[i, j] = f(alphas[i], betas[j])`` around ``at``.

    Fits f ~ c + g.x + x^T A x / 2 (x = (a, b) - at) by least squares to the (2w+1) x (2w+1) grid points
    nearest ``at`` (exact for a quadratic, whether or not ``at`` is a grid point). ``hessian_plane`` is A
    in plane coordinates. With the Gram matrix G of the axes, ``eigenvalues_param`` solve A x = lambda G x:
    curvatures along unit-length parameter directions in the plane, comparable with the top Hessian
    eigenvalue (which bounds them from above when H is positive semi-definite).
    """
    alphas, betas, values = np.asarray(alphas), np.asarray(betas), np.asarray(values, np.float64)
    k = 2 * half_width + 1
    if len(alphas) < k or len(betas) < k:
        return {"ok": False, "reason": f"grid smaller than {k} x {k}"}
    if not (alphas[0] <= at[0] <= alphas[-1] and betas[0] <= at[1] <= betas[-1]):
        return {"ok": False, "reason": f"point {at} outside the grid"}
    ia = _window(alphas, at[0], k)
    jb = _window(betas, at[1], k)
    A, B = np.meshgrid(alphas[ia] - at[0], betas[jb] - at[1], indexing="ij")  # (k, k)
    y = values[np.ix_(ia, jb)].ravel()  # (k*k,)
    if not np.isfinite(y).all():
        return {"ok": False, "reason": "non-finite values near the point"}
    a, b = A.ravel(), B.ravel()
    X = np.stack([np.ones_like(a), a, b, 0.5 * a * a, a * b, 0.5 * b * b], axis=1)  # (k*k, 6)
    coef, *_ = np.linalg.lstsq(X, y, rcond=None)
    fit_rmse = float(np.sqrt(np.mean((X @ coef - y) ** 2)))
    hess = np.array([[coef[3], coef[4]], [coef[4], coef[5]]])  # (2, 2)
    out: dict[str, object] = {
        "ok": True,
        "at": list(at),
        "value": float(coef[0]),
        "gradient_plane": [float(coef[1]), float(coef[2])],
        "hessian_plane": hess.tolist(),
        "eigenvalues_plane": np.linalg.eigvalsh(hess).tolist(),
        "step": [float(np.diff(alphas).mean()), float(np.diff(betas).mean())],
        "fit_rmse": fit_rmse,
        "points": int(k * k),
    }
    if gram is not None:
        L = np.linalg.cholesky(np.asarray(gram, np.float64))  # G = L L^T
        Linv = np.linalg.inv(L)
        out["eigenvalues_param"] = np.linalg.eigvalsh(Linv @ hess @ Linv.T).tolist()
    return out


def _window(grid: np.ndarray, x: float, k: int) -> np.ndarray:
    """Indices of the k consecutive grid points centred as closely as possible on x."""
    centre = int(np.argmin(np.abs(grid - x)))
    start = int(np.clip(centre - k // 2, 0, len(grid) - k))
    return np.arange(start, start + k)
