"""dashboard/figures/atlas.py: colours, legends, the map component's data and the selection table, on a
hand-built atlas."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd

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


def test_map_labels_by_level_largest_first_and_named_when_wordless():
    sp = space()
    sp.levels = [
        [{"cluster": 0, "size": 9, "x": 0.0, "y": 0.0, "words": ["top"]}],
        [
            {"cluster": 0, "size": 3, "x": 1.0, "y": 2.0, "words": ["small"]},
            {"cluster": 1, "size": 5, "x": -1.0, "y": 0.5, "words": []},
        ],
    ]
    assert fig.map_labels(sp) == [
        [0, 0.0, 0.0, 9, "top"],
        [1, -1.0, 0.5, 5, "cluster 1"],
        [1, 1.0, 2.0, 3, "small"],
    ]
    flat = space()  # an atlas without levels: its default clusters are level 0
    assert [lab[4] for lab in fig.map_labels(flat)[:2]] == ["w0", "cluster 1"] and {
        lab[0] for lab in fig.map_labels(flat)
    } == {0}


def test_map_data_carries_urls_labels_and_a_bounded_selection():
    urls = SimpleNamespace(tiles="/t/{z}/{x}/{y}.png", highlight=None, pick="/pick", mark=None)
    grid = {"x0": 0.0, "y0": 0.0, "size": 4.0, "tile": 256, "maxLevel": 10}
    labels = [[0, 0.0, 0.0, 9, "a"], [2, 1.0, 1.0, 3, "b"]]
    selected = np.zeros((fig.SELECTED_MAX + 5, 2))
    data = fig.map_data("m", grid, (0.0, 0.0, 4.0, 2.0), urls, labels, selected)
    assert data["tiles"] == "/t/{z}/{x}/{y}.png" and data["pick"] == "/pick" and data["highlight"] is None
    assert data["levels"] == 3 and data["showLabels"] and len(data["selected"]) == fig.SELECTED_MAX
    hidden = fig.map_data("m", grid, (0.0, 0.0, 4.0, 2.0), urls, None, selected[:0])
    assert hidden["labels"] == [] and not hidden["showLabels"] and hidden["levels"] == 0
    assert data["fit"] == data["bounds"] == [0.0, 0.0, 4.0, 2.0]  # no bulk box given: the map fits the bounds
    fitted = fig.map_data("m", grid, (0.0, 0.0, 4.0, 2.0), urls, None, selected[:0], fit=(1.0, 0.5, 2.0, 1.5))
    assert fitted["fit"] == [1.0, 0.5, 2.0, 1.5] and fitted["bounds"] == [0.0, 0.0, 4.0, 2.0]
    json.dumps(data)  # what the component gets is plain JSON


def test_selection_events_from_the_component():
    assert fig.selection_event(SimpleNamespace(click={"row": 4, "add": True}, box=None)) == (
        "click",
        {"row": 4, "add": True},
    )
    assert fig.selection_event(SimpleNamespace(click=None, box=[0, 1, 2, 3])) == ("box", (0.0, 1.0, 2.0, 3.0))
    assert fig.selection_event(SimpleNamespace(click=None, box=[0, 1, float("nan"), 3])) is None
    assert fig.selection_event(SimpleNamespace(click={"row": "x"}, box=[1, 2])) is None
    assert fig.selection_event(None) is None


def test_the_selection_table():
    table = fig.selection_table(atlas(), "raw", np.array([1, 2]))
    assert list(table.columns) == ["row", "text", "cluster", "topic", "score", "norm", "length", "overlap"]
    assert table["text"].tolist() == ["text <b>1</b>", "text <b>2</b>"]  # as given, never rendered as HTML
    assert "overlap" not in fig.selection_table(atlas(calibrated=False), "raw", np.array([1])).columns


def test_colour_codes_are_the_colours_one_byte_a_point():
    """The map's colours (codes into a small table, computed chunk by chunk): the same colours and legend as
    ``colours`` for clusters and categories, within two units per channel for a numeric scale (half of
    viridis's steepest step of 159 / 63.75 units, rounded on both sides)."""
    a = atlas()
    for colour_by in fig.colour_options(a):
        want, legend = fig.colours(a, "raw", colour_by)
        codes, lut, got_legend = fig.colour_codes(a, "raw", colour_by)
        assert codes.dtype == np.uint8 and codes.shape == (N,) and lut.dtype == np.uint8
        assert got_legend == legend, colour_by
        diff = np.abs(lut[codes].astype(int) - want.astype(int)).max()
        assert diff <= (2 if colour_by in (*fig.NUMERIC, "score") else 0), colour_by


def test_colour_codes_of_a_folder_read_by_row_group(tmp_path):
    from isoscope.atlas.folder import load_atlas
    from isoscope.atlas.pipeline import AtlasConfig, build_atlas

    n = 300
    rng = np.random.default_rng(1)
    meta = pd.DataFrame({"topic": [f"t{i % 14}" for i in range(n)], "score": rng.normal(0, 1, n)})
    vectors = rng.normal(0, 1, (n, 8)).astype(np.float32)
    build_atlas(
        None,
        [f"text {i}" for i in range(n)],
        tmp_path / "a",
        config=AtlasConfig(layout="pca"),
        meta=meta,
        vectors=vectors,
    )
    lazy, whole = load_atlas(tmp_path / "a"), load_atlas(tmp_path / "a")
    whole.points  # noqa: B018 (read whole: the reference path)
    for colour_by in ("cluster", "topic", "score", "density", "overlap"):
        codes, lut, legend = fig.colour_codes(lazy, "cal", colour_by)
        want, want_legend = fig.colours(whole, "cal", colour_by)
        assert legend == want_legend and np.abs(lut[codes].astype(int) - want.astype(int)).max() <= 2, colour_by
    assert lazy.frame is None
    table = fig.selection_table(lazy, "raw", np.array([299, 3]))
    assert table["text"].tolist() == ["text 299", "text 3"] and table["topic"].tolist() == ["t5", "t3"]
