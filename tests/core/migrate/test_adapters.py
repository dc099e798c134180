"""Known answers of the adapters (issue 53): a target that is the source rotated, rotated and padded, plus noise,
or through a known affine map is recovered; a fit set smaller than the dimension is regularised and says so; every
adapter saves, loads and maps the same; bad pairs are refused in one line."""

from __future__ import annotations

import numpy as np
import pytest

from isoscope.calibrate.methods import choices
from isoscope.errors import InputError
from isoscope.migrate.adapters import Adapter, ProcrustesAdapter, RidgeAdapter, unit_rows
from isoscope.migrate.methods import make_adapter

N, D = 600, 24
ALL = ("procrustes", "ridge", "ridge:procrustes", "lowrank:24", "mlp", "local:3")


def rotation(d: int, seed: int) -> np.ndarray:
    q, r = np.linalg.qr(np.random.default_rng(seed).normal(size=(d, d)))
    return q * np.sign(np.diag(r))  # (d, d) orthogonal


@pytest.fixture(scope="module")
def source() -> np.ndarray:
    """Anisotropic unit rows, as sentence vectors are: a shared mean direction and uneven variances."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(N, D)) * np.linspace(2.0, 0.2, D) + 1.5
    return unit_rows(X, "X")


def cosines(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    return np.einsum("ij,ij->i", A, B) / (np.linalg.norm(A, axis=1) * np.linalg.norm(B, axis=1))


def test_the_methods_are_the_registered_adapters():
    assert choices("adapter") == ("procrustes", "ridge", "ridge:procrustes", "lowrank:R", "mlp", "local:C")
    assert all(make_adapter(m).method == m for m in ALL)


@pytest.mark.parametrize("method", ALL)
def test_a_rotation_is_recovered_by_every_adapter(method, source):
    Y = source @ rotation(D, 1)  # (N, D): the same texts in a rotated space
    adapter = make_adapter(method).fit(source, Y)
    # float64 least squares on well-conditioned unit rows: exact to round-off; the MLP starts at the ridge map
    # and its early stop keeps the best held-out epoch, so it is no worse than that to its float32 arithmetic
    assert cosines(adapter.transform(source), Y).min() > 1 - 1e-5


def test_procrustes_recovers_the_rotation_itself_and_pads_the_smaller_side(source):
    R = rotation(D, 2)
    assert np.allclose(ProcrustesAdapter().fit(source, source @ R).weight_, R, atol=1e-10)
    wide = np.hstack([source, np.zeros((N, 8))]) @ rotation(D + 8, 3)  # (N, 32): rotated and padded
    up = ProcrustesAdapter().fit(source, wide)
    # transform returns float32: each cosine is exact to a few float32 roundings (~1e-7 each)
    assert up.weight_.shape == (D, D + 8) and cosines(up.transform(source), wide).min() > 1 - 1e-6
    down = ProcrustesAdapter().fit(wide, source)  # and back: the wider side mapped into the narrower
    assert cosines(down.transform(wide), source).min() > 1 - 1e-6


def test_a_known_affine_map_is_recovered_by_ridge(source):
    rng = np.random.default_rng(4)
    W, b = rng.normal(size=(D, 16)), rng.normal(size=16)
    Y = source @ W + b  # (N, 16): the targets as the model gives them, not unit rows
    ridge = RidgeAdapter().fit(source, Y)
    assert ridge.alpha_ == 0.0  # the held-out pairs pick no penalty: there is no noise to shrink
    np.testing.assert_allclose(ridge.weight_, W, atol=1e-8)
    np.testing.assert_allclose(ridge.bias_, b, atol=1e-8)


def test_noise_is_shrunk_and_the_held_out_cosine_says_how_close(source):
    rng = np.random.default_rng(5)
    Y = source @ rotation(D, 6) + 0.05 * rng.normal(size=(N, D))
    ridge = RidgeAdapter(toward="procrustes").fit(source, Y)
    got = cosines(ridge.transform(source), source @ rotation(D, 6)).mean()
    assert got > 0.99 and 0.9 < ridge.holdout_cosine_ < 1.0  # the map is near the rotation, not the noise


def test_fewer_pairs_than_dimensions_are_regularised_and_said_so(source):
    Y = source @ rotation(D, 7)
    few = source[:12]  # 12 pairs for 24 dimensions
    ridge = RidgeAdapter(toward="procrustes").fit(few, Y[:12])
    assert ridge.notes_ and "fewer pairs than dimensions" in ridge.notes_[0]
    assert np.isfinite(ridge.weight_).all() and cosines(ridge.transform(few), Y[:12]).mean() > 0.9
    with pytest.raises(InputError, match="mlp needs at least 20 pairs"):
        make_adapter("mlp").fit(few, Y[:12])


@pytest.mark.parametrize("method", [m.replace("lowrank:24", "lowrank:16") for m in ALL])
def test_every_adapter_saves_and_loads_the_same_map(method, source, tmp_path):
    Y = source @ rotation(D, 8)[:, :20] + 0.01  # (N, 20): another width
    adapter = make_adapter(method).fit(source, Y)
    adapter.save(tmp_path / "a")
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["adapter.json", "adapter.safetensors"]
    loaded = Adapter.load(tmp_path / "a")
    assert type(loaded) is type(adapter) and loaded.method == adapter.method
    np.testing.assert_array_equal(loaded.transform(source[:50]), adapter.transform(source[:50]))


@pytest.mark.parametrize(
    ("X", "Y", "message"),
    [
        (np.ones((10, 4)), np.ones((9, 4)), "hold 10 and 9 rows"),
        (np.full((10, 4), np.nan), np.ones((10, 4)), "source vectors row 0 holds NaN or inf"),
        (np.ones((10, 4)), np.zeros((10, 4)), "target vectors row 0 is all zeros"),
        (np.ones((3, 4)), np.ones((3, 4)), "at least 4 pairs"),
    ],
)
def test_bad_pairs_are_refused_in_one_line(X, Y, message):
    with pytest.raises(InputError, match=message):
        ProcrustesAdapter().fit(X, Y)


def test_a_map_of_another_width_is_refused(source):
    adapter = ProcrustesAdapter().fit(source, source)
    with pytest.raises(InputError, match="X has 5 columns; this ProcrustesAdapter was fitted on 24"):
        adapter.transform(np.ones((2, 5)))
