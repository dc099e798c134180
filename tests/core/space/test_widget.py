"""The map widget (isoscope.space.widget) without a browser: what it draws, the selection as row ids, colours,
and the one-line hint when the notebook extras are missing. The mouse selection is tested in a real JupyterLab
(tests/lab, ``make test-lab``)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import isoscope
from isoscope.errors import InputError

pytest.importorskip("jscatter")

RNG = np.random.default_rng(0)


@pytest.fixture()
def space():
    X = RNG.normal(size=(50, 8)).astype(np.float32)
    texts = [f"<b>text</b> {i}" for i in range(50)]
    return isoscope.Space(X, texts, {"topic": [f"t{i % 3}" for i in range(50)]}, name="fifty", cache=False)


def test_the_map_draws_every_point_with_its_text(space) -> None:
    m = space.map(color="topic", method="pca")
    frame = m.scatter._data
    assert len(frame) == 50 and frame["row"].tolist() == list(range(50))
    np.testing.assert_allclose(frame[["x", "y"]].to_numpy(), space.project("pca").coords, rtol=0, atol=0)
    assert frame["text"].iloc[3] == "<b>text</b> 3"  # kept as text: the widget sets textContent
    assert m.scatter.color()["by"] == "topic"
    bundle = m._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in (bundle[0] if isinstance(bundle, tuple) else bundle)


def test_the_selection_is_row_ids_and_observable(space) -> None:
    m = space.map(method="pca")
    seen = []
    m.observe(seen.append)
    m.widget.selection = np.array([7, 2, 30], np.uint32)  # what a lasso in the page sets
    assert m.selection.tolist() == [2, 7, 30] and seen[-1].tolist() == [2, 7, 30]
    assert m.selected().texts == [space.texts[i] for i in (2, 7, 30)]
    m.selection = [4, 5]
    assert m.selection.tolist() == [4, 5]
    m.widget.selection = None
    assert m.selection.tolist() == []


@pytest.mark.parametrize("measure", ["norm", "length", "hubness"])
def test_colour_by_a_measure(space, measure) -> None:
    from isoscope.space.widget import colour_values

    values, name, categorical = colour_values(space, measure)
    assert values.shape == (50,) and not categorical and name
    if measure == "norm":
        np.testing.assert_allclose(values, np.linalg.norm(space.vectors.astype(np.float64), axis=1))
    if measure == "hubness":
        assert values.sum() == 50 * 10  # every text lists 10 neighbours


def test_colour_by_overlap_needs_the_other_space(space) -> None:
    from isoscope.space.widget import colour_values

    values, _, _ = colour_values(space, "overlap", space.calibrate("sn"), k=5)
    assert values.shape == (50,) and (0 <= values).all() and (values <= 1).all()
    with pytest.raises(InputError, match="other="):
        colour_values(space, "overlap")
    with pytest.raises(InputError, match=r"unknown color 'nope'.*topic"):
        space.map(color="nope", method="pca")


def test_linked_maps_of_a_comparison(space) -> None:
    cmp = isoscope.compare(space, space.calibrate("sn"), k=5)
    maps = cmp.maps()
    assert len(maps.a.rows) == 50 and maps.a.widget is not maps.b.widget
    maps.a.widget.selection = np.array([1, 2], np.uint32)
    assert maps.b.selection.tolist() == [1, 2]  # the selection is linked
    assert maps.selection.tolist() == [1, 2]


def test_without_the_extras_the_map_says_what_to_install(space, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "jscatter", None)
    with pytest.raises(InputError, match=r'pip install "isoscope\[notebook\]"'):
        space.map()
