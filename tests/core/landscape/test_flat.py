"""isoscope.landscape.flat: flat parameter vectors, views for functional_call and float64 products."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from isoscope.landscape.flat import dot


def test_float64_dot_is_accurate():
    x = torch.full((3_000_000,), 0.1, dtype=torch.float32)
    assert dot(x, x) == pytest.approx(3_000_000 * float(np.float32(0.1)) ** 2, rel=1e-10)


def test_layout_round_trip_views_and_offsets():
    from isoscope.landscape.flat import FlatLayout, layer_index, norm, residual_norm, vector_digest

    module = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.LayerNorm(4))
    layout = FlatLayout.from_module(module)
    assert layout.names == ("0.weight", "0.bias", "1.weight", "1.bias") and layout.size == 12 + 4 + 4 + 4
    assert layout.offsets()["1.weight"] == (16, 20) and layout.prefix_size("0.") == 16
    theta = layout.flatten(module)
    views = layout.unflatten(theta)
    assert views["0.weight"].shape == (4, 3) and views["0.weight"].data_ptr() == theta.data_ptr()  # a view
    theta2 = torch.arange(layout.size, dtype=torch.float32)
    layout.load_into(module, theta2)
    torch.testing.assert_close(layout.flatten(module), theta2)
    with pytest.raises(ValueError, match="expected"):
        layout.unflatten(torch.zeros(5))
    assert vector_digest(theta2) == vector_digest(theta2.clone()) != vector_digest(theta2.double())
    d, e = torch.tensor([3.0, 4.0, 0.0]), torch.tensor([1.0, 0.0, 0.0])
    assert residual_norm(d, (3.0,), (e,)) == pytest.approx(4.0) and norm(d) == pytest.approx(5.0)
    assert layer_index("encoder.encoder.layer.3.attention.self.query.weight") == 3
    assert layer_index("encoder.embeddings.word_embeddings.weight") is None
    assert np.isfinite(dot(theta2, theta2))
