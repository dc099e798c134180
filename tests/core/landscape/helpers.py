"""Helpers of the landscape tests: exact points in parameter space and an analytic quadratic loss module."""

from __future__ import annotations

import numpy as np
import torch
from torch.func import functional_call

from isoscope.landscape.flat import FlatLayout


def points(p: int = 400, seed: int = 0, dtype=torch.float32) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """theta0, theta1, theta2 with delta2 correlated with delta1 on purpose."""
    g = torch.Generator().manual_seed(seed)
    theta0 = torch.randn(p, generator=g, dtype=dtype)
    d1 = torch.randn(p, generator=g, dtype=dtype)
    d2 = 0.6 * d1 + torch.randn(p, generator=g, dtype=dtype)  # correlated with d1 on purpose
    return theta0, theta0 + d1, theta0 + 0.5 * d2


class Quadratic(torch.nn.Module):
    """A module whose loss is 0.5 (x - x*)^T H (x - x*), x = its two parameters (a vector and a matrix) flattened.

    ``loss`` and ``evaluate`` take a flat theta and go through FlatLayout + functional_call, the same
    path the transformer evaluator uses.
    """

    def __init__(self, n: int = 12, seed: int = 0) -> None:
        super().__init__()
        rng = np.random.default_rng(seed)
        q, _ = np.linalg.qr(rng.standard_normal((n, n)))
        self.eigs = np.r_[10.0, 4.0, np.linspace(2.0, 0.1, n - 2)]
        self.register_buffer("H", torch.tensor(q @ np.diag(self.eigs) @ q.T))
        self.register_buffer("x_star", torch.tensor(rng.standard_normal(n)))
        self.vec = torch.nn.Parameter(torch.zeros(n - 6, dtype=torch.float64))
        self.mat = torch.nn.Parameter(torch.zeros(2, 3, dtype=torch.float64))
        self.layout = FlatLayout.from_module(self)

    def forward(self) -> torch.Tensor:
        d = torch.cat([self.vec, self.mat.reshape(-1)]) - self.x_star
        return 0.5 * d @ self.H @ d

    def loss(self, theta: torch.Tensor) -> torch.Tensor:
        return functional_call(self, self.layout.unflatten(theta), args=())

    def evaluate(self, theta: torch.Tensor) -> dict[str, float]:
        return {"train_loss": float(self.loss(theta))}


class RowQuadratic(torch.nn.Module):
    """L = 0.5 * sum_r h_r |W_r|^2 over the rows r of a matrix W (+ 0.5 * |b|^2 for a bias b), in float64.

    Along a filter-normalised direction d (rows of d have the norms of W's rows; the bias is zero in d):
    L(theta + a d) - L(theta) = a sum_r h_r <W_r, d_r> + 0.5 a^2 sum_r h_r |W_r|^2, so the mean over +-a is
    exactly 0.5 a^2 sum_r h_r |W_r|^2 for EVERY direction: the sharpness is known in closed form.
    """

    def __init__(self, rows: int = 5, cols: int = 7, seed: int = 0) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.weight = torch.nn.Parameter(torch.randn(rows, cols, generator=g, dtype=torch.float64))
        self.bias = torch.nn.Parameter(torch.randn(rows, generator=g, dtype=torch.float64))
        self.register_buffer("h", torch.linspace(0.5, 3.0, rows, dtype=torch.float64))  # curvature per row
        self.layout = FlatLayout.from_module(self)

    def forward(self) -> torch.Tensor:
        return 0.5 * (self.h * (self.weight**2).sum(1)).sum() + 0.5 * (self.bias**2).sum()

    def evaluate(self, theta: torch.Tensor) -> dict[str, float]:
        loss = float(functional_call(self, self.layout.unflatten(theta), args=()))
        return {"train_loss": loss, "train_acc": 0.0, "heldout_loss": 2.0 * loss, "heldout_acc": 0.0}

    def sharpness_at(self, alpha: float) -> float:
        """0.5 a^2 sum_r h_r |W_r|^2: the mean increase over +-alpha along any filter-normalised direction."""
        return float(0.5 * alpha**2 * (self.h * (self.weight.detach() ** 2).sum(1)).sum())


def tiny_config(**over):
    """The small recipe of the tiny-BERT tests (2 epochs on 24 examples, 5 x 5 grids, 3 Hessian steps)."""
    from dataclasses import replace

    from isoscope.landscape.filter_view import FilterConfig
    from isoscope.landscape.pipeline import LandscapeConfig
    from isoscope.landscape.train import TrainConfig

    train = TrainConfig(lr=1e-3, epochs=2, batch_size=8, n_train=24, max_length=48, seed=0)
    base = LandscapeConfig(
        train=train,
        eval_size=8,
        eval_chunk=8,
        grid=5,
        points_1d=5,
        hessian_iters=3,
        filter_config=FilterConfig(directions=3, points_1d=5, grid=5),
    )
    return replace(base, **over)
