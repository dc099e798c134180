"""dashboard/figures/landscape.py: numbers, shared ranges and figures of the Loss surfaces page."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from isoscope.dashboard.figures import landscape as fig
from isoscope.landscape.results import Grid


def grid(values: np.ndarray) -> Grid:
    n_a, n_b = values.shape
    return Grid(np.linspace(-1, 1, n_a), np.linspace(-1, 1, n_b), {"train_loss": values})


def trajectory() -> pd.DataFrame:
    rows = []
    for run in ("task1", "task2"):
        for epoch in (0, 1, 2):
            rows.append(
                {
                    "run": run,
                    "epoch": epoch,
                    "a": epoch / 2,
                    "b": 0.1 * epoch,
                    "residual": 0.0,
                    "train_loss": 5.0 - epoch,
                }
            )
    t = pd.DataFrame(rows)
    return t.assign(surface_train_loss=t["train_loss"], heldout_loss=t["train_loss"] + 1)


def test_numbers():
    assert fig.fmt(None) == fig.fmt(float("nan")) == fig.fmt(float("inf")) == "n/a"
    assert fig.fmt(0.123456) == "0.1235" and fig.fmt(2, 2) == "2"
    assert fig.pm(1.23456, float("nan")) == "1.23" and fig.pm(1.23456, 0.0123) == "1.23 ± 0.012"


def test_zrange_is_shared_and_ignores_what_is_not_finite():
    g1, g2 = grid(np.array([[1.0, np.nan], [3.0, 2.0]])), grid(np.array([[0.5, 4.0], [1.0, 1.0]]))
    assert fig.zrange([g1, g2, None], "train_loss") == (0.5, 4.0)
    assert fig.zrange([g1], "train_loss", trajectory()) == (1.0, 5.0)  # the true loss of the checkpoints counts
    assert fig.zrange([], "train_loss") == (0.0, 1.0) and fig.zrange([g1], "missing") == (0.0, 1.0)
    lo, hi = fig.zrange([grid(np.full((2, 2), 2.0))], "train_loss")
    assert lo == 2.0 and hi > lo  # a flat grid still gets a range


def test_headline_table_is_wide_in_the_order_of_the_headlines():
    seeds = pd.DataFrame(
        {
            "init": ["pretrained", "scratch", "pretrained", "scratch"],
            "headline": ["b", "b", "a", "a"],
            "label": ["second label", "second label", "first label", "first label"],
            "mean": [1.0, 2.0, 3.0, 4.0],
            "sd": [0.1, math.nan, 0.2, 0.3],
            "n": [2, 1, 2, 2],
            "scale_invariant": [True, True, None, None],
        }
    )
    wide = fig.headline_table(seeds)
    assert wide["label"].tolist() == ["second label", "first label"]
    assert wide["scale_invariant"].tolist() == ["yes", ""]
    assert wide["Pre-trained"].tolist() == ["1 ± 0.1", "3 ± 0.2"] and wide["From scratch"].tolist() == ["2", "4 ± 0.3"]


def test_run_label_names_what_was_run():
    summary = {"task": "stsb", "task2": "demo-topic", "n_train": [300, 300], "config": {"train": {"epochs": 3}}}
    label = fig.run_label({**summary, "grid": {"grid": 11}, "seeds": 3, "model": "m", "mtime": 0})
    assert label.startswith("stsb + demo-topic · n=300 · 3 ep · grid 11x11 · eval ? · 3 seeds · m · ")
    assert "1 seed ·" in fig.run_label({})  # a summary missing fields still gets a label


def test_run_label_names_model_and_tasks_as_told():
    """Classroom mode passes ``classroom.shown_name``: no server path in the selector (issue 28)."""
    summary = {"task": "/srv/data/labels.csv", "task2": "demo-topic", "model": "/srv/models/bert", "mtime": 0}
    label = fig.run_label(summary, lambda name: name.rsplit("/", 1)[-1])
    assert label.startswith("labels.csv + demo-topic · ") and " · bert · " in label
    assert "/srv" not in label
    assert "/srv/models/bert" in fig.run_label(summary)  # by default, names as they are


def test_contour_transposes_the_grid_and_draws_both_runs():
    values = np.arange(6, dtype=float).reshape(3, 2)  # (n_a, n_b)
    figure = fig.contour(grid(values), "train_loss", trajectory(), zrange=(0.0, 5.0), title="train loss")
    np.testing.assert_array_equal(np.asarray(figure.data[0].z), values.T)  # plotly: rows are y (beta)
    runs = [t.name for t in figure.data[1:]]
    assert runs == [r[1] for r in fig.RUNS]
    assert list(figure.data[1].text) == ["θ0", "ep 1", "θ1"] and list(figure.data[2].text) == ["θ0", "ep 1", "θ2"]
    surface = fig.surface3d(grid(values), trajectory(), (0.0, 5.0))
    assert surface.layout.scene.zaxis.range == (0.0, 5.0) and list(surface.data[1].z) == [5.0, 4.0, 3.0]


def test_band_curves_draw_mean_plus_minus_sd():
    df = pd.DataFrame(
        {"init": ["scratch"] * 3, "epoch": [2, 0, 1], "loss_mean": [3.0, 1.0, 2.0], "loss_sd": [0.5, np.nan, 0.1]}
    )
    band, line = fig.band_curves(df, "epoch", "loss", title="loss", x_title="epoch").data
    assert list(line.x) == [0, 1, 2] and list(line.y) == [1, 2, 3]
    assert list(band.y) == [1.0, 2.1, 3.5, 2.5, 1.9, 1.0]  # upper edge forward, lower edge back; NaN sd = 0
    assert line.line.color == fig.INIT_COLOUR["scratch"] and line.name == "From scratch"


def test_rollback_bars_one_trace_per_init():
    df = pd.DataFrame(
        {"init": ["pretrained", "pretrained", "scratch"], "group": ["none", "lower", "none"], "x": [1, 2, 3]}
    )
    bars = fig.bars(df, "x", "x", log=True)
    assert [t.name for t in bars.data] == ["Pre-trained", "From scratch"] and bars.layout.yaxis.type == "log"
