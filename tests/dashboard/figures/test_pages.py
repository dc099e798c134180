"""The smaller pages' figure modules (projection, neighbours, pairs, sweep, anatomy, scores, frequency,
anisotropy): what each figure or table holds, from hand-made or real core results."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from isoscope.anatomy.budget import PRESET_NAMES, get_preset, parameter_budget
from isoscope.anatomy.spectrum import embedding_spectrum
from isoscope.dashboard.figures import anatomy, anisotropy, frequency, neighbours, pairs, projection, scores, sweep
from isoscope.data import Corpus, Pairs
from isoscope.evaluate.sweep import SweepConfig, run_sweep


def corpus(n: int = 6) -> Corpus:
    meta = pd.DataFrame({"topic": [f"t{i % 2}" for i in range(n)], "score": np.arange(n)})
    return Corpus([f"text {i} <b>" for i in range(n)], meta, [], "test")


# ------------------------------------------------------------------ projection


def test_meta_colours_are_a_scale_only_for_many_numbers():
    values, categorical = projection.meta_colours(pd.Series(np.arange(projection.MAX_CATEGORIES + 10.0)))
    assert not categorical and values.dtype == np.float64
    values, categorical = projection.meta_colours(pd.Series([1, 2, None, 2]))
    assert categorical and values.tolist() == ["1.0", "2.0", "(missing)", "2.0"]


def test_projection_map_groups_escapes_rings_hits_and_maps_selections_back():
    n = projection.MAX_CATEGORIES + 10
    coords = np.random.default_rng(0).normal(size=(n, 2))
    rows = np.arange(n)[::-1].copy()  # a sample in another order than the corpus
    colour = np.array([f"c{i} <x>" for i in range(n)], dtype=object)  # MAX - 1 kept, the rest "other"
    hits = np.zeros(n, bool)
    hits[[2, 5]] = True
    fig = projection.map_figure(coords, rows, ["h"] * n, title="t <i>", colour=colour, categorical=True, hits=hits)
    names = [t.name for t in fig.data]
    assert len(names) == projection.MAX_CATEGORIES + 1 and names[-2] == "other" and names[-1] == "matches (2)"
    hues = [t.marker.color for t in fig.data[:-1]]
    assert len(set(hues)) == len(hues)  # the kept categories and "other": no colour twice
    assert all("<" not in name for name in names) and fig.layout.title.text == "t &lt;i&gt;"
    assert fig.layout.dragmode == "lasso"
    ring = fig.data[-1]
    assert sorted(ring.customdata) == [2, 5]
    event = {"selection": {"points": [{"curve_number": len(fig.data) - 1, "point_index": 0}, {"curve_number": 99}]}}
    assert projection.selected_rows(fig, event) == {ring.customdata[0]}
    assert projection.selected_rows(fig, None) == set()
    scale = projection.map_figure(
        np.c_[coords, coords[:, 0]],
        rows,
        ["h"] * n,
        title="3d",
        colour=np.arange(n) * 1.0,
        categorical=False,
        hits=hits,
    )
    assert scale.data[0].type == "scatter3d" and list(scale.data[0].marker.color) == (rows * 1.0).tolist()


def colour_distance(a: str, b: str) -> float:
    """Euclidean distance of two #rrggbb colours in RGB (0..441)."""
    x, y = (np.array([int(c[i : i + 2], 16) for i in (1, 3, 5)], float) for c in (a, b))
    return float(np.linalg.norm(x - y))


def test_the_demo_topics_each_get_their_own_named_colour():
    """Issue 41: 31 topics repeated plotly's 10 colours (architecture = music) and the legend named 19. Every
    topic of the demo corpus is named in the legend, in a colour of its own, apart from every other's."""
    from isoscope.data import load_corpus
    from isoscope.paths import DEMO_CORPUS

    demo = load_corpus(DEMO_CORPUS)
    colour, categorical = projection.meta_colours(demo.meta["topic"])
    topics = sorted(set(colour))
    assert categorical and len(topics) == 31
    n = len(colour)
    coords = np.random.default_rng(0).normal(size=(n, 2))
    fig = projection.map_figure(
        coords, np.arange(n), ["h"] * n, title="t", colour=colour, categorical=True, hits=np.zeros(n, bool)
    )
    assert [t.name for t in fig.data] == topics  # every topic named, no "other"
    hues = [t.marker.color for t in fig.data]
    closest = min(colour_distance(a, b) for i, a in enumerate(hues) for b in hues[i + 1 :])
    assert len(set(hues)) == len(topics) and closest > 40, closest
    assert projection.category_palette(7) == list(projection.SMALL_PALETTE[:7])  # few categories: plotly's own


# ------------------------------------------------------------------ neighbours


def test_neighbour_tables_name_the_moves():
    c = corpus()
    raw = neighbours.neighbour_table(
        c, ["topic"], np.array([1, 2, 3]), scores=np.ones(3), other=np.array([1, 5, 2]), k=3, space="raw"
    )
    assert raw["shift"].tolist() == ["0", "dropped", "+1"] and raw["calibrated rank"].tolist() == [1, 5, 2]
    assert list(raw.columns) == ["rank", "score", "shift", "text", "topic", "calibrated rank"]
    cal = neighbours.neighbour_table(
        c, [], np.array([4, 1]), scores=np.ones(2), other=np.array([9, 1]), k=2, space="calibrated"
    )
    assert cal["shift"].tolist() == ["new", "-1"] and "raw rank" in cal.columns
    assert [neighbours.shift_colour(v) for v in ("new", "+2", "-1", "dropped", "0")] == [
        neighbours.UP,
        neighbours.UP,
        neighbours.DOWN,
        neighbours.DOWN,
        "",
    ]
    changed = neighbours.changed_table(c, ["topic"], np.array([5, 0]), overlap=np.array([0.12345, 1.0]), k=4)
    assert changed["row"].tolist() == [5, 0] and changed["overlap@4"].tolist() == [0.123, 1.0]
    bars = neighbours.overlap_bars(pd.DataFrame({"calibration": ["a", "b"], "mean_overlap": [0.5, 0.25]}), "b", 4)
    assert list(bars.data[0].marker.color) == [neighbours.OTHERS, neighbours.CHOSEN]


# ------------------------------------------------------------------ pairs


def test_the_pairs_table_keeps_the_cosines_in_view_and_whole():
    """Issue 41: the cosine column of Sentence pairs was cut mid-word behind two long sentence columns. The
    cosines come first, each column as wide as its header (so neither it nor a value is cut), text after."""
    p = Pairs(["a long first sentence " * 5, "c", "d"], ["x " * 40, "y", "z"], np.array([1.0, 2.0, 3.0]), [], "t")
    variants = [("mean", np.array([0.91234567, 0.5, 0.1])), ("mean + whitening:64", np.array([0.2, 0.3, 0.4]))]
    table = pairs.pairs_table(p.to_frame(), variants)
    cosines = ["cosine mean", "cosine mean + whitening:64"]
    assert list(table.columns)[:2] == cosines and list(table.columns)[2:] == list(p.to_frame().columns)
    assert table["cosine mean"].tolist() == [0.9123, 0.5, 0.1] and table["sentence1"][0] == p.sentence1[0]
    widths = pairs.column_widths(table)
    for column in cosines:
        needed = pairs.NUMBER_CHAR_PX * max(len(column), len("-0.1234"))  # the header, and any value
        assert isinstance(widths[column], int) and widths[column] >= needed
    assert widths["sentence1"] == widths["sentence2"] == "large"


def test_pair_panels_and_rank_moves():
    p = Pairs(["a <b>", "c", "d"], ["x", "y", "z"], np.array([1.0, 2.0, 3.0]), [], "t")
    assert pairs.pair_hover(p)[0] == "a &lt;b&gt; || x"  # escaped, spaces collapsed
    fig = pairs.scatter_panels(
        p.scores,
        [("raw", np.ones(3)), ("cal", np.zeros(3))],
        ["h"] * 3,
        x_title="gold",
        hovertemplate="%{x}",
        y_title="cos",
    )
    assert [t.name for t in fig.data] == ["raw", "cal"] and fig.layout.yaxis.title.text == "cos"
    assert fig.layout.xaxis2.title.text == "gold"
    assert fig.layout.yaxis2.matches == "y"  # issue 26: side-by-side cosine panels on one y range
    apart = pairs.scatter_panels(
        p.scores,
        [("gold", p.scores), ("cos", np.ones(3))],
        ["h"] * 3,
        x_title="edits",
        hovertemplate="%{x}",
        shared_y=False,
    )
    assert apart.layout.yaxis2.matches is None  # gold 0-5 next to cosines: each its own range, titled
    assert (apart.layout.yaxis.title.text, apart.layout.yaxis2.title.text) == ("gold", "cos")
    moved = pairs.rank_moves(p.to_frame(), np.array([0.1, 0.2, 0.3]), np.array([0.3, 0.2, 0.1]), top=2)
    assert moved["rank shift"].abs().tolist() == [2, 2] and set(moved["sentence1"]) == {"a <b>", "d"}


# ------------------------------------------------------------------ sweep


def test_sweep_figure_and_the_smallest_variant_kept():
    x = np.random.default_rng(0).normal(size=(40, 64)).astype(np.float32)
    result = run_sweep(x, config=SweepConfig(dims=(32, 64), k=5))
    fig = sweep.sweep_figure(result, "overlap_at_k")
    assert [t.name for t in fig.data][:2] == ["first k dims", "PCA to k"] and fig.layout.xaxis.type == "log"
    fp32 = result.table[result.table["variant"] == "fp32"]
    assert fp32["overlap_at_k"].item() == 1.0
    line = sweep.smallest_kept(result.table)
    assert line is not None and "**" in line and "smaller than fp32" in line
    assert sweep.smallest_kept(result.table, overlap=1.01) is None


# ------------------------------------------------------------------ anatomy, scores, frequency, anisotropy


def test_anatomy_tables_and_figures():
    budget = parameter_budget(get_preset(PRESET_NAMES[0]))
    bars = anatomy.budget_bars(budget)
    assert (
        sum(sum(t.y) for t in bars.data)
        == 2 * budget.input_embedding + 2 * budget.transformer + budget.output_embedding
    )
    presets = anatomy.presets_table([parameter_budget(get_preset(n)) for n in PRESET_NAMES])
    assert list(presets.columns) == list(anatomy.PRESET_COLUMNS) and len(presets) == len(PRESET_NAMES)
    assert anatomy.components_table(budget)["parameters"].sum() == sum(n for _, n in budget.components.values())
    spectrum = embedding_spectrum(np.random.default_rng(0).normal(size=(50, 8)))
    fig = anatomy.spectrum_figure(spectrum)
    assert fig.data[1].yaxis == "y2" and fig.layout.yaxis.type == "log"
    right = fig.layout.yaxis2  # issue 26: "energy kept" was garbled: a linear 0-100 % axis with five ticks
    assert right.type == "linear" and right.tickformat == ".0%" and list(right.tickvals) == [0, 0.25, 0.5, 0.75, 1.0]
    curve = pd.DataFrame({"k": [2, 4], "spearman": [50.0, 70.0], "overlap_at_10": [0.5, 0.75]})
    assert [t.name for t in anatomy.shrink_figure(curve, True).data] == ["Spearman", "neighbour overlap@10 (%)"]
    assert list(anatomy.shrink_figure(curve, False).data[0].y) == [50.0, 75.0]


def test_score_grids_keep_the_requested_order():
    table = pd.DataFrame(
        {"pooling": ["mean", "mean", "cls", "cls"], "calibration": ["none", "w", "none", "w"], "spearman": [1, 2, 3, 4]}
    )
    grid = scores.spearman_grid(table, ["cls", "mean"], ["w", "none"])
    assert grid.to_numpy().tolist() == [[4, 3], [2, 1]]
    assert scores.spearman_heatmap(grid, 200, "Spearman").layout.height == 200
    history = pd.DataFrame({"epoch": [1, 2], "bits_per_dim": [3.0, 2.0]})
    fig = scores.flow_training(history, 2.5)
    assert list(fig.data[0].y) == [3.0, 2.0] and fig.layout.shapes[0].y0 == 2.5


def test_the_flow_chart_sets_like_beside_like():
    """Issue 41: the training curve (noised vectors) sat above the dashed "untrained flow = whitening" line
    (clean vectors) at every epoch. On a real flow: the curve is named as the noised loss, the dotted line and
    the trained flow's point are both on the clean fit vectors, and the point is the flow's own clean bits/dim."""
    from isoscope.calibrate import Flow

    rng = np.random.default_rng(0)
    x = (rng.normal(size=(400, 6)) @ rng.normal(size=(6, 6))).astype(np.float32)
    flow = Flow(epochs=3, n_steps=2, hidden=16, seed=0).fit(x)
    fig = scores.flow_training(
        pd.DataFrame(flow.history_),
        flow.gaussian_bits_per_dim_,
        trained_bits_per_dim=flow.bits_per_dim_,
        noise_std=flow.noise_std,
    )
    curve, trained = fig.data
    assert "noised" in curve.name and f"noise {flow.noise_std:g}" in curve.name
    assert list(curve.y) == [h["bits_per_dim"] for h in flow.history_]
    line = fig.layout.annotations[0].text
    assert fig.layout.shapes[0].y0 == flow.gaussian_bits_per_dim_ and scores.CLEAN in line and "whitening" in line
    assert scores.CLEAN in trained.name and list(trained.y) == [flow.bits_per_dim_]
    assert list(trained.x) == [flow.history_[-1]["epoch"]]
    au = pd.DataFrame({"uniformity": [1.0], "alignment": [2.0], "calibration": ["raw"], "pooling": ["mean"]})
    assert scores.alignment_uniformity(au).layout.height == 420


def test_frequency_and_anisotropy_figures():
    tokens = pd.DataFrame(
        {"token": ["<s>", "a"], "rank": [0, 9], "norm": [1.0, 2.0], "count": [9, 1], "knn_dist": [0.1, 0.2]}
    ).assign(bucket="top", stage="raw")
    fig = frequency.norm_vs_rank(tokens)
    assert list(fig.data[0].x) == pytest.approx([0.0, 1.0]) and "&lt;s&gt;" in fig.data[0].hovertext
    assert "log10 rank" not in tokens.columns  # the caller's table is left as it was
    assert [a.text for a in fig.layout.annotations] == ["raw"]  # issue 26: the panel read "stage=raw"
    both = frequency.norm_vs_rank(pd.concat([tokens, tokens.assign(stage="whitening", norm=[0.5, 0.6])]))
    assert [a.text for a in both.layout.annotations] == ["raw", "whitening"]
    # issue 41: the calibrated panel (its own y scale) had no y-axis label; every panel names both axes
    y_titles = [both.layout[name].title.text for name in ("yaxis", "yaxis2")]
    x_titles = [both.layout[name].title.text for name in ("xaxis", "xaxis2")]
    assert y_titles == [frequency.NORM_TITLE] * 2 and x_titles == [frequency.RANK_TITLE] * 2
    assert both.layout.yaxis2.matches is None and both.layout.yaxis2.showticklabels
    assert frequency.buckets_table(pd.DataFrame({"mean_norm": [1.23456]}))["mean_norm"].tolist() == [1.235]
    hist = anisotropy.cosine_histograms({"raw": np.zeros(4), "whitening": np.ones(4)})
    assert [t.name for t in hist.data] == ["raw", "whitening"] and hist.layout.barmode == "overlay"
    spec = anisotropy.spectra({"raw": np.array([3.0, 1.0])})
    assert list(spec.data[0].y) == [0.75, 0.25]
    per_layer = pd.DataFrame({"avg_cosine": [0.9, 0.5, 0.1], "isoscore": [0.2, 0.2, 0.2]})
    heat = anisotropy.layer_heatmap(per_layer)
    assert np.asarray(heat.data[0].z).tolist() == [[1.0, 0.5, 0.0], [0.0, 0.0, 0.0]]  # a constant metric stays 0
