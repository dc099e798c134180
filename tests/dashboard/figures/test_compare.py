"""dashboard/figures/compare.py: the Compare spaces page's figures and tables, on a real comparison."""

from __future__ import annotations

import numpy as np
import pytest

from isoscope.comparison import compare_spaces
from isoscope.dashboard.figures import compare as fig
from isoscope.dashboard.text import plot_text
from isoscope.encode.pooling import parse_pooling
from isoscope.sources import SpaceSpec

TEXTS = [f"text {i} <i>" for i in range(30)]


@pytest.fixture(scope="module")
def report():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(30, 8)).astype(np.float32)
    b = a + 0.5 * rng.normal(size=(30, 8)).astype(np.float32)
    return compare_spaces(a, b, k=5, maps=True, map_method="pca", map_points=20)


def test_distinct_keeps_first_occurrences_in_order():
    assert fig.distinct(["a", "b", "a", "c", "b"]).tolist() == [0, 1, 3]
    cls, mean = parse_pooling("cls"), parse_pooling("mean")
    assert fig.describe("MiniLM", SpaceSpec(init="random", pooling=cls, calibrate="whitening")) == (
        "MiniLM, random init · cls, whitening"
    )
    assert fig.describe("MiniLM", SpaceSpec(pooling=mean)) == "MiniLM · mean"
    assert fig.describe("v.npy", SpaceSpec(vectors="v.npy", calibrate="sn")) == "v.npy · vectors file, sn"


def test_heatmap_and_its_table():
    m = np.array([[1.0, 0.5], [0.2, 0.9], [0.1, 0.3]])
    heat = fig.heatmap(m, ["l0", "l1", "l2"], ["l0", "l1"], "t")
    assert list(heat.data[0].y) == ["A l0", "A l1", "A l2"] and list(heat.data[0].x) == ["B l0", "B l1"]
    table = fig.matrix_table(m, ["l0", "l1", "l2"], ["l0", "l1"])
    assert list(table.columns) == ["layer", "B l0", "B l1"] and table["B l1"].tolist() == [0.5, 0.9, 0.3]


def test_tables_follow_the_report(report):
    keep = np.arange(30) * 2  # corpus rows of the distinct texts
    per_text = fig.per_text_table(report, TEXTS, keep)
    assert per_text["row"].tolist() == keep.tolist() and per_text["overlap"].tolist() == report.overlap.overlap.tolist()
    moved = report.overlap.most_changed(4)
    changed = fig.most_changed_table(report, TEXTS, keep, moved)
    assert changed["row"].tolist() == (2 * moved).tolist() and changed["text"].tolist() == [TEXTS[i] for i in moved]
    maps = fig.maps_table(report, TEXTS, keep)
    assert len(maps) == len(report.maps.rows) and maps["a_x"].tolist() == report.maps.a[:, 0].tolist()
    hubs = fig.hubness_table(report, ("space a", "space b"), TEXTS)
    assert hubs["space"].tolist() == ["A", "B"] and hubs["top hub"][0] == TEXTS[int(report.hubness_a.top(1)[0])]
    hist = fig.overlap_histogram(report)
    assert sum(hist.data[0].y) == 30 and len(hist.data[0].x) == report.overlap.k + 1


def test_neighbour_list_marks_what_both_sides_share():
    table = fig.neighbour_list(TEXTS, np.array([3, 1, 7]), np.array([0.9, 0.8, 0.1], np.float32), np.array([7, 3]))
    assert table["rank"].tolist() == [1, 2, 3] and table["in both"].tolist() == [True, False, True]
    assert table["text"][0] == TEXTS[3]  # a table shows text literally; plotly hovers are escaped instead


def test_maps_share_ranges_and_draw_moves(report):
    a, b = report.maps.a, report.maps.b
    (x0, x1), (y0, y1) = fig.map_ranges(a, b)
    both = np.vstack([a, b])
    assert x0 < both[:, 0].min() and x1 > both[:, 0].max() and y0 < both[:, 1].min() and y1 > both[:, 1].max()
    hover = [plot_text(TEXTS[i]) for i in report.maps.rows]
    ranges = fig.map_ranges(a, b)
    numeric = fig.map_figure(
        b, hover, "B", colour=report.overlap.overlap[report.maps.rows], categorical=False, k=5, ranges=ranges, lines=a
    )
    lines, points = numeric.data
    assert len(lines.x) == 3 * len(b) and np.isnan(lines.x[2])  # start, end, gap per point
    assert "overlap@5" in points.hovertemplate and "&lt;i&gt;" in points.text[0]
    cats = np.array(["x", "y <b>"] * (len(b) // 2) + ["x"] * (len(b) % 2))
    categorical = fig.map_figure(a, hover, "A", colour=cats, categorical=True, k=5, ranges=ranges)
    assert [t.name for t in categorical.data] == ["x", "y &lt;b&gt;"]
    assert list(categorical.layout.xaxis.range) == list(ranges[0])


def test_plain_summary_reads_the_numbers(report):
    """Issue 26: Compare spaces had no plain-language reading; the summary is built from the report's numbers."""
    text = fig.plain_summary(report)
    assert f"share {report.overlap_at_k:.0%} of each text's {report.overlap.k} nearest neighbours" in text
    assert f"CKA says {report.cka_linear:.2f}" in text and f"skewness {report.hubness_b.skewness:.1f}" in text
    rng = np.random.default_rng(1)
    x = rng.standard_normal((60, 8))
    same = fig.plain_summary(compare_spaces(x, x, k=5, maps=False))
    assert "share 100%" in same and "nearly the same geometry" in same
    other = fig.plain_summary(compare_spaces(x, rng.standard_normal((60, 8)), k=5, maps=False))
    assert "largely different geometry" in other


def fill(xy: np.ndarray, ranges) -> float:
    """The smaller share of its axes a map's points span (1 = edge to edge)."""
    return min(float(np.ptp(xy[:, j])) / (ranges[j][1] - ranges[j][0]) for j in (0, 1))


def test_an_unrelated_b_map_gets_its_own_axes_not_a_dot():
    """Issue 41: for an untrained model B's aligned map shrank to a dot in A's axes (Procrustes' least-squares
    scale of an unrelated map is small). A has topic blobs, B is noise: B's panel gets axes its points fill."""
    rng = np.random.default_rng(0)
    centres = 4 * rng.normal(size=(6, 16))
    a = (centres[np.arange(300) % 6] + 0.3 * rng.normal(size=(300, 16))).astype(np.float32)  # (300, 16) blobs
    b = rng.normal(size=(300, 16)).astype(np.float32)  # unrelated, like random weights
    maps = compare_spaces(a, b, k=5, maps=True, map_method="pca", map_points=300).maps
    shared = fig.map_ranges(maps.a, maps.b)
    assert fill(maps.b, shared) < 0.35  # the defect: a dot in the shared axes
    ranges_a, ranges_b, own = fig.panel_ranges(maps.a, maps.b)
    assert own and fill(maps.a, ranges_a) > 0.9 and fill(maps.b, ranges_b) > 0.9
    fig_b = fig.map_figure(
        maps.b, ["t"] * len(maps.b), "B", colour=maps.b[:, 0] * 0, categorical=False, k=5, ranges=ranges_b
    )
    assert list(fig_b.layout.xaxis.range) == list(ranges_b[0])


def test_maps_of_a_like_scale_share_their_axes(report):
    ranges_a, ranges_b, own = fig.panel_ranges(report.maps.a, report.maps.b)
    assert not own and ranges_a == ranges_b == fig.map_ranges(report.maps.a, report.maps.b)
