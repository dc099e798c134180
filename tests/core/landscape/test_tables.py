"""isoscope.landscape.tables: flat tables of typed results, each column equal to the typed value it shows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from isoscope.landscape import tables
from isoscope.landscape.results import load_results
from isoscope.landscape.seeds import HEADLINES


def test_tables_of_a_finished_run(tiny_run):
    res = load_results(tiny_run[0])
    axes = pd.DataFrame([tables.axes_row(r) for r in res.inits.values()]).set_index("init")
    for init, r in res.inits.items():
        assert axes.loc[init, "cos_delta1_delta2"] == r.axes.cos_delta1_delta2
        assert axes.loc[init, "hessian_top_eigenvalue"] == r.flatness.hessian.eigenvalue
        assert axes.loc[init, "filter_sharpness"] == r.filter_normalized.sharpness.mean
        assert axes.loc[init, "theta1_heldout_acc"] == r.theta1.heldout_acc
    grids = tables.grid_tables(res)
    assert len(grids["surfaces"]) == 2 * 25 and len(grids["filter_surfaces"]) == 2 * 25
    fc = grids["filter_curves"]
    assert len(fc) == 2 * 3 * 9 and set(fc["direction"]) == {0, 1, 2}
    bands = tables.filter_bands(fc)
    mine = bands[(bands["init"] == "scratch") & (bands["alpha"] == 0.5)]
    curves = res.inits["scratch"].filter_normalized.curves
    k = int(np.flatnonzero(curves["alpha"] == 0.5)[0])
    assert mine["train_loss_mean"].item() == pytest.approx(curves["train_loss"][:, k].mean())
    assert mine["train_loss_sd"].item() == pytest.approx(curves["train_loss"][:, k].std(ddof=1))
    traj = tables.trajectory_table(res)
    np.testing.assert_allclose(traj["surface_minus_true_train_loss"], traj["surface_train_loss"] - traj["train_loss"])
    assert set(tables.rollback_table(res)["group"]) >= {"none", "embeddings", "encoder"}


def test_flatness_table_says_what_is_scale_invariant(tiny_run):
    sharp = tables.sharpness_table(load_results(tiny_run[0]))
    by = {(r.init, r.measure.split(" (")[0]): r for r in sharp.itertuples()}
    assert by[("pretrained", "filter-normalised sharpness")].scale_invariant is True
    assert by[("scratch", "top Hessian eigenvalue")].scale_invariant is False
    assert len(sharp) == 2 * 3


def test_seed_and_learning_tables(tiny_run):
    res = load_results(tiny_run[0])
    seeds = tables.seed_table(res)
    assert len(seeds) == 2 * len(HEADLINES) and set(seeds["n"]) <= {0, 2}
    row = seeds[(seeds["init"] == "pretrained") & (seeds["headline"] == "train_loss_theta1")].iloc[0]
    assert row["mean"] == res.summary.seeds.stats["pretrained"]["train_loss_theta1"].mean
    learning = tables.learning_table(res)
    assert sorted(set(learning["epoch"])) == [0, 1, 2]
    assert np.isfinite(learning["heldout_acc_sd"]).all()  # two seeds: a spread at every epoch


def test_result_tables_hold_every_table_of_the_run(tiny_run):
    res = load_results(tiny_run[0])
    view = tables.result_tables(res)
    assert view.summary is res.summary and view.inits is res.inits and view.out_dir == str(tiny_run[0])
    pd.testing.assert_frame_equal(view.trajectory, tables.trajectory_table(res))
    pd.testing.assert_frame_equal(view.seeds, tables.seed_table(res))
    pd.testing.assert_frame_equal(view.filter_bands, tables.filter_bands(view.filter_curves))
    assert list(view.axes["init"]) == list(res.inits)
    files = [p for p in tiny_run[0].rglob("*") if p.is_file()]
    assert view.disk_mb == pytest.approx(sum(p.stat().st_size for p in files) / 2**20)
