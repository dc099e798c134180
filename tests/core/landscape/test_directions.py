"""isoscope.landscape.directions: filter-normalised directions (Li et al. 2018) and sharpness, with known answers.

(a) Rescaling a layer that feeds a LayerNorm by c leaves the function, the filter-normalised surface and
its sharpness unchanged, while the globally normalised surface changes. (b) A quadratic whose curvature is
known row by row gives the sharpness in closed form, for every random direction.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch.func import functional_call
from torch.nn import functional as F

from isoscope.landscape.classifier import build_classifier
from isoscope.landscape.directions import (
    DirectionPlane,
    check_directions,
    curve_alphas,
    direction_seed,
    filter_normalized_direction,
    global_normalized_direction,
    sharpness,
)
from isoscope.landscape.flat import FlatLayout, norm
from isoscope.landscape.surface import curve_1d, surface_2d
from tests.core.landscape.helpers import RowQuadratic

ALPHAS = np.linspace(-1.0, 1.0, 9)  # holds 0 and +-0.25, +-0.5
AT = [-0.5, -0.25, 0.25, 0.5]

# ---------------------------------------------------------------- the direction itself


class Toy(torch.nn.Module):
    """Linear -> LayerNorm (eps 0: exactly scale-invariant) -> Linear head, in float64, on fixed inputs."""

    def __init__(self, seed: int = 0) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.inner = torch.nn.Linear(4, 6, dtype=torch.float64)
        self.norm = torch.nn.LayerNorm(6, eps=0.0, dtype=torch.float64)
        self.head = torch.nn.Linear(6, 3, dtype=torch.float64)
        with torch.no_grad():
            for p in self.parameters():
                p.copy_(torch.randn(p.shape, generator=g, dtype=torch.float64))
        self.register_buffer("x", torch.randn(16, 4, generator=g, dtype=torch.float64))
        self.register_buffer("y", torch.randint(0, 3, (16,), generator=g))
        self.layout = FlatLayout.from_module(self)

    def forward(self) -> torch.Tensor:
        return self.head(self.norm(self.inner(self.x)))  # (16, 3)

    def theta(self) -> torch.Tensor:
        """The parameters as one float64 vector (FlatLayout.flatten gives float32)."""
        return torch.cat([p.detach().reshape(-1) for p in self.parameters()])  # (p,)

    def logits(self, theta: torch.Tensor) -> torch.Tensor:
        return functional_call(self, self.layout.unflatten(theta), args=())

    def evaluate(self, theta: torch.Tensor) -> dict[str, float]:
        loss = float(F.cross_entropy(self.logits(theta), self.y))
        return {"train_loss": loss, "train_acc": 0.0, "heldout_loss": loss, "heldout_acc": 0.0}

    def rescaled(self, theta: torch.Tensor, c: float) -> torch.Tensor:
        """theta with the inner Linear's weight and bias multiplied by c (the same function)."""
        out = theta.clone()
        offsets = self.layout.offsets()
        for name in ("inner.weight", "inner.bias"):
            a, b = offsets[name]
            out[a:b] *= c
        return out


def test_filter_rows_have_the_norms_of_theta_rows_and_1d_parameters_are_zero():
    toy = Toy()
    theta = toy.theta()
    d = filter_normalized_direction(toy.layout, theta, seed=3)
    views, ref = toy.layout.unflatten(d), toy.layout.unflatten(theta)
    for name, shape in zip(toy.layout.names, toy.layout.shapes, strict=True):
        if len(shape) == 1:  # biases and LayerNorm weight/bias
            assert torch.count_nonzero(views[name]) == 0, name
        else:
            np.testing.assert_allclose(views[name].norm(dim=1), ref[name].norm(dim=1), rtol=1e-12)
    torch.testing.assert_close(filter_normalized_direction(toy.layout, theta, seed=3), d, rtol=0, atol=0)
    assert not torch.equal(filter_normalized_direction(toy.layout, theta, seed=4), d)


def test_zero_rows_stay_zero_and_global_direction_has_the_norm_of_theta():
    toy = Toy()
    theta = toy.theta()
    a, _ = toy.layout.offsets()["head.weight"]
    theta[a : a + 6] = 0.0  # the head's first row is zero: its direction row must be zero, not NaN
    d = filter_normalized_direction(toy.layout, theta, seed=0)
    assert torch.isfinite(d).all() and torch.count_nonzero(d[a : a + 6]) == 0
    g = global_normalized_direction(theta, seed=0)
    assert norm(g) == pytest.approx(norm(theta), rel=1e-12)


def test_a_tiny_bert_direction_covers_embedding_rows_and_skips_layer_norms(tiny):
    model = build_classifier(tiny, 2, init="scratch", seed=0)
    layout = FlatLayout.from_module(model)
    theta = layout.flatten(model)
    views, ref = layout.unflatten(filter_normalized_direction(layout, theta, seed=1)), layout.unflatten(theta)
    words = "encoder.embeddings.word_embeddings.weight"
    # float32 rows rescaled with float64 norms: equal to float32 rounding (1e-7 relative, 32 terms per row)
    np.testing.assert_allclose(views[words].norm(dim=1), ref[words].norm(dim=1), rtol=1e-6, atol=1e-7)
    for name in layout.names:
        if "LayerNorm" in name or name.endswith(".bias"):
            assert torch.count_nonzero(views[name]) == 0, name


# ---------------------------------------------------------------- (a) scale invariance, known answer


def _filter_surface(model, theta: torch.Tensor, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Loss on the plane of two filter-normalised directions around theta (5 x 5), and its sharpness."""
    d1 = filter_normalized_direction(model.layout, theta, direction_seed(seed, 0))
    d2 = filter_normalized_direction(model.layout, theta, direction_seed(seed, 1))
    grid = surface_2d(model.evaluate, DirectionPlane(theta, d1, d2), alphas=ALPHAS[::2], betas=ALPHAS[::2])[
        "train_loss"
    ]
    curves = np.stack([curve_1d(model.evaluate, theta, d, alphas=ALPHAS)["train_loss"] for d in (d1, d2)])
    return grid, curves


@pytest.mark.parametrize("c", [3.7, 0.3])
def test_rescaling_a_linear_before_a_layer_norm_changes_nothing_filter_normalised(c):
    toy = Toy()
    theta = toy.theta()
    scaled = toy.rescaled(theta, c)
    assert not torch.allclose(scaled, theta)
    # the function: float64, a handful of operations per value: equal to ~1e-15 relative; 1e-12 is safe
    torch.testing.assert_close(toy.logits(scaled), toy.logits(theta), rtol=1e-12, atol=1e-12)
    grid, curves = _filter_surface(toy, theta, seed=0)
    grid_c, curves_c = _filter_surface(toy, scaled, seed=0)
    np.testing.assert_allclose(grid_c, grid, rtol=1e-12)
    np.testing.assert_allclose(curves_c, curves, rtol=1e-12)
    s, s_c = sharpness(ALPHAS, curves, AT), sharpness(ALPHAS, curves_c, AT)
    assert s_c.mean == pytest.approx(s.mean, rel=1e-9) and s_c.sd == pytest.approx(s.sd, rel=1e-9)
    assert s.mean > 0.01  # not trivially flat: the surface has something to keep
    # the globally normalised direction is not invariant: same seed, the surface moves
    glob = np.array([toy.evaluate(theta + a * global_normalized_direction(theta, 5))["train_loss"] for a in ALPHAS])
    glob_c = np.array([toy.evaluate(scaled + a * global_normalized_direction(scaled, 5))["train_loss"] for a in ALPHAS])
    assert glob_c[4] == pytest.approx(glob[4], rel=1e-12)  # alpha = 0: the same function
    assert np.max(np.abs(glob_c - glob)) > 0.05


def test_rescaling_the_embeddings_of_a_tiny_bert_changes_nothing_filter_normalised(tiny_eval):
    """The three embedding tables feed the embedding LayerNorm: times 4 (a power of two, so every product and
    norm scales exactly in floating point; LayerNorm's eps 1e-12 moves the result by ~1e-9 relative, far below
    float32 rounding). The function and the filter-normalised curves agree to float32 rounding."""
    model, layout, evaluate = tiny_eval
    theta = layout.flatten(model)
    scaled = theta.clone()
    for name, (a, b) in layout.offsets().items():
        if ".embeddings." in name and "LayerNorm" not in name:
            scaled[a:b] *= 4.0
    torch.testing.assert_close(evaluate.logits(scaled), evaluate.logits(theta), rtol=1e-6, atol=1e-6)

    def curves(t: torch.Tensor, direction) -> np.ndarray:
        return np.stack([curve_1d(evaluate, t, direction(t, k), alphas=ALPHAS)["train_loss"] for k in (0, 1)])

    def filtered(t, k):
        return filter_normalized_direction(layout, t, direction_seed(0, k))

    def glob(t, k):
        return global_normalized_direction(t, direction_seed(0, k))

    f, f_c = curves(theta, filtered), curves(scaled, filtered)
    np.testing.assert_allclose(f_c, f, rtol=1e-5)  # a few float32 ulps through 3 layers
    assert sharpness(ALPHAS, f_c, AT).mean == pytest.approx(sharpness(ALPHAS, f, AT).mean, rel=1e-3, abs=1e-6)
    g, g_c = curves(theta, glob), curves(scaled, glob)
    assert np.max(np.abs(g_c - g)) > 100 * np.max(np.abs(f_c - f)) + 1e-3


# ---------------------------------------------------------------- (b) known curvature, known sharpness


def test_row_quadratic_gives_the_closed_form_sharpness_for_every_direction():
    quad = RowQuadratic()
    theta = torch.cat([p.detach().reshape(-1) for p in quad.parameters()])  # float64
    curves = []
    for k in range(5):
        d = filter_normalized_direction(quad.layout, theta, direction_seed(0, k))
        curve = curve_1d(quad.evaluate, theta, d, alphas=ALPHAS)["train_loss"]
        W, dW = quad.weight.detach(), quad.layout.unflatten(d)["weight"]
        slope = float((quad.h * (W * dW).sum(1)).sum())
        exact = np.array([a * slope + quad.sharpness_at(a) for a in ALPHAS]) + quad.evaluate(theta)["train_loss"]
        np.testing.assert_allclose(curve, exact, rtol=1e-12)  # the bias is zero in d: it never moves
        curves.append(curve)
    s = sharpness(ALPHAS, np.stack(curves), AT)
    expected = np.mean([quad.sharpness_at(a) for a in AT])  # 0.5 * mean(a^2) * sum_r h_r |W_r|^2
    assert s.mean == pytest.approx(expected, rel=1e-10)
    assert s.sd == pytest.approx(0.0, abs=1e-10 * expected)  # the same for every direction: +-a cancels the slope
    assert s.summary()["scale_invariant"] is True and s.summary()["n_directions"] == 5


# ---------------------------------------------------------------- the statistics and the options


def test_sharpness_statistics_and_refusals():
    alphas = np.array([-0.5, 0.0, 0.5])
    losses = np.array([[1.3, 1.0, 1.1], [1.6, 1.0, 1.2]])  # increases (0.3, 0.1) and (0.6, 0.2)
    s = sharpness(alphas, losses, [-0.5, 0.5])
    np.testing.assert_allclose(s.per_direction, [0.2, 0.4])
    assert s.mean == pytest.approx(0.3) and s.sd == pytest.approx(math.sqrt(0.02))  # ddof 1
    assert s.summary()["per_alpha_mean"] == pytest.approx([0.45, 0.15])
    assert math.isnan(sharpness(alphas, losses[:1], [0.5]).sd)
    with pytest.raises(ValueError, match="not a point"):
        sharpness(alphas, losses, [0.25])
    with pytest.raises(ValueError, match="same point"):
        sharpness(alphas, np.array([[1.3, 1.0, 1.1], [1.6, 1.1, 1.2]]), [0.5])


def test_curve_alphas_and_direction_options():
    a = curve_alphas((-1.0, 1.0), 5, [-0.25, 0.25, 0.5])
    np.testing.assert_array_equal(a, [-1.0, -0.5, -0.25, 0.0, 0.25, 0.5, 1.0])
    assert direction_seed(0, 1) != direction_seed(1, 0) and direction_seed(2, 3) == direction_seed(2, 3)
    assert check_directions("both") == "both"
    with pytest.raises(ValueError, match="task, filter, both"):
        check_directions("global")
