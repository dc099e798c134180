"""dashboard/figures/atlas.py: colours, legends, images and the deck.gl spec, on a hand-built atlas."""

from __future__ import annotations

import base64
import struct
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from isoscope.atlas.pipeline import Atlas, AtlasSpace
from isoscope.dashboard.figures import atlas as fig

N = 40


def space(n: int = N, clusters: int = 14, shift: float = 0.0) -> AtlasSpace:
    rng = np.random.default_rng(0)
    xy = rng.uniform(-1, 1, (n, 2)).astype(np.float32) + shift
    cluster = (np.arange(n) % (clusters + 1) - 1).astype(np.int32)  # -1 .. clusters-1
    meta = [
        {"cluster": c, "size": 3, "x": 0.1 * c, "y": 0.0, "words": [] if c == 1 else [f"w{c}"]} for c in range(clusters)
    ]
    grid = rng.uniform(0, 1, (16, 16)).astype(np.float32)
    return AtlasSpace(xy, rng.uniform(0, 1, n).astype(np.float32), cluster, grid, (-2.0, -2.0, 2.0, 2.0), meta, None)


def atlas(calibrated: bool = True, n: int = N) -> Atlas:
    texts = np.array([f"text <b>{i}</b>" + " long" * (60 if i == 3 else 0) for i in range(n)], dtype=object)
    points = pd.DataFrame({"text": texts, "topic": [f"t{i % 3}" for i in range(n)], "score": np.arange(n, dtype=float)})
    spaces = {"raw": space(n)} | ({"cal": space(n, shift=5.0)} if calibrated else {})
    length = np.arange(n).astype(np.int64)
    return Atlas(Path("."), points, np.linspace(1, 2, n), length, np.linspace(0, 1, n), spaces, {}, texts)


def test_hex_and_palette_order_by_frequency():
    assert fig.hex_colour(np.array([255, 0, 16])) == "#ff0010"
    values = pd.Series(["b"] * 5 + ["a"] * 3 + [f"rare{i}" for i in range(12)])  # 14 categories
    colors, legend = fig.categorical_colours(values)
    assert colors.shape == (20, 3) and colors.dtype == np.uint8
    assert legend[0] == ("b", fig.hex_colour(fig.PALETTE[0])) and legend[1][0] == "a"
    assert (colors[:5] == fig.PALETTE[0]).all() and (colors[5:8] == fig.PALETTE[1]).all()
    assert legend[-1] == ("other (2)", fig.hex_colour(fig.OTHER))  # 12 colours, the two rarest are grey
    assert len(legend) == len(fig.PALETTE) + 1


def test_numeric_colours_span_viridis_between_the_percentiles():
    v = np.r_[np.linspace(0, 1, 101), 1000.0]  # one outlier beyond the 99th percentile
    colors, legend = fig.numeric_colours(v)
    assert (colors[0] == fig.VIRIDIS[0]).all() and (colors[-1] == fig.VIRIDIS[-1]).all()
    assert legend[0][1] == fig.hex_colour(fig.VIRIDIS[0]) and legend[1][1] == fig.hex_colour(fig.VIRIDIS[-1])
    assert float(legend[1][0]) < 2  # the outlier does not stretch the scale
    flat, _ = fig.numeric_colours(np.full(5, 3.0))  # no spread: one colour, no division by zero
    assert (flat == flat[0]).all()


def test_colours_by_cluster_metadata_and_measure():
    a = atlas()
    colors, legend = fig.colours(a, "raw", "cluster")
    sp = a.spaces["raw"]
    assert len(legend) == len(fig.PALETTE) + 1 and legend[0][0] == sp.cluster_names()[0]
    assert (colors[sp.cluster == 0] == fig.PALETTE[0]).all()
    assert (colors[(sp.cluster < 0) | (sp.cluster >= len(fig.PALETTE))] == fig.OTHER).all()
    _, topic = fig.colours(a, "raw", "topic")
    assert [lab for lab, _ in topic] == ["t0", "t1", "t2"]
    _, score = fig.colours(a, "raw", "score")  # 40 distinct numbers: a scale, not 40 categories
    assert len(score) == 2
    norm, _ = fig.colours(a, "raw", "norm")
    assert (norm[0] == fig.VIRIDIS[0]).all()
    assert fig.colour_caption("norm", fig.colours(a, "raw", "norm")[1]).startswith("Colour: norm from ")
    assert fig.colour_caption("topic", topic) == "Colour: t0 · t1 · t2"
    assert fig.colour_caption("topic", []) is None


def test_colour_options_offer_the_overlap_only_with_a_calibrated_space():
    assert fig.colour_options(atlas()) == ["cluster", "topic", "score", "density", "norm", "length", "overlap"]
    assert "overlap" not in fig.colour_options(atlas(calibrated=False))


def test_view_state_fits_the_bounds():
    state = fig.view_state((0.0, 0.0, 4.0, 2.0), 800, 600)
    assert state["target"] == [2.0, 1.0, 0]
    assert 2 ** state["zoom"] * 4.0 == pytest.approx(800)  # the wider side fills the canvas
    assert state["minZoom"] < state["zoom"] < state["maxZoom"]


def test_points_labels_and_spec():
    a = atlas()
    colors = np.zeros((N, 3), np.uint8)
    records = fig.point_records(a, "raw", np.array([0, 3]), colors)
    assert records[0]["i"] == 0 and records[0]["t"] == "#0 · cluster -\ntext <b>0</b>"  # plain text, as given
    assert len(records[1]["t"].split("\n")[1]) == fig.HOVER_CHARS and records[1]["t"].endswith("…")
    labels = fig.cluster_labels(a.spaces["raw"], top=3)
    assert [lab["label"] for lab in labels] == ["w0", "cluster 1", "w2"]
    spec = fig.deck_spec(a, "raw", "data:image/png;base64,", records, records[:1], labels, None).spec
    assert [layer["id"] for layer in spec["layers"]] == ["all-points", "points", "highlight", "labels"]
    assert spec["layers"][0]["bounds"] == [-2.0, -2.0, 2.0, 2.0]
    assert [x["id"] for x in fig.deck_spec(a, "raw", None, [], [], [], "c").spec["layers"]] == ["contours"]


def test_clicked_rows_and_the_selection_table():
    event = SimpleNamespace(selection={"objects": {"points": [{"i": 4}, {"x": 1}], "highlight": [{"i": 2}]}})
    assert fig.clicked_rows(event) == [4, 2]
    assert fig.clicked_rows(None) == [] and fig.clicked_rows(SimpleNamespace(selection=None)) == []
    table = fig.selection_table(atlas(), "raw", np.array([1, 2]))
    assert list(table.columns) == ["row", "text", "cluster", "topic", "score", "norm", "length", "overlap"]
    assert "overlap" not in fig.selection_table(atlas(calibrated=False), "raw", np.array([1])).columns


def _png_size(url: str) -> tuple[int, int]:
    png = base64.b64decode(url.split(",", 1)[1])
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", png[16:24])


def test_images_are_png_data_urls_of_the_map():
    a = atlas()
    colors, _ = fig.colours(a, "raw", "cluster")
    assert _png_size(fig.raster_image(a, "raw", colors, contours=True)) == (1024, 1024)
    assert _png_size(fig.contour_image(a, "raw")) == (1024, 1024)
    assert fig.raster_image(a, "raw", colors, True) != fig.raster_image(a, "raw", colors, False)
