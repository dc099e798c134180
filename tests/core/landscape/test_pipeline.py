"""isoscope.landscape.pipeline: the whole experiment on the tiny BERT, cached, resumed, with seeds and both views."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from isoscope.landscape.pipeline import LandscapeConfig, run_landscape
from isoscope.landscape.results import load_results
from isoscope.landscape.train import TrainConfig


def _tiny_config(**over) -> LandscapeConfig:
    train = TrainConfig(lr=1e-3, epochs=2, batch_size=8, n_train=24, max_length=48, seed=0)
    base = LandscapeConfig(train=train, eval_size=8, eval_chunk=8, grid=5, points_1d=5, hessian_iters=3)
    return replace(base, **over)


def test_pipeline_end_to_end_cached_and_resumed(tiny, tasks, tmp_path):
    out = tmp_path / "out"
    s = run_landscape(tiny, tasks[0], tasks[1], config=_tiny_config(), out_dir=out)
    for init in ("pretrained", "scratch"):
        r = s[init]
        assert r["theta1_coords"]["a"] == pytest.approx(1.0, abs=1e-5)
        assert r["theta1_coords"]["b"] == pytest.approx(0.0, abs=1e-5)
        assert r["theta2_coords"]["residual"] < 1e-5 and r["theta2_coords"]["b"] > 0
        assert abs(r["axes"]["cos_e1_e2"]) < 1e-5
        traj = {(t["run"], t["epoch"]): t for t in r["trajectory"]}
        assert traj[("task1", 2)]["residual"] < 1e-5 and traj[("task1", 0)]["distance"] == 0.0
        assert traj[("task1", 1)]["residual"] > 0.0  # the epoch-1 point is off the plane
        assert traj[("task1", 2)]["train_loss"] == r["theta1"]["train_loss"]
        # the surface under theta1 is the true loss there (theta1 is on the plane)
        assert traj[("task1", 2)]["surface_train_loss"] == pytest.approx(
            r["surface"]["train_loss_at_theta1"], rel=1e-9
        )  # theta1 = (1, 0) is a grid point of the default range
        assert [row["group"] for row in r["rollback"]] == ["none", "embeddings", "lower", "middle", "upper", "encoder"]
        assert r["flatness"]["hessian"]["iterations"] >= 1 and r["flatness"]["grid_train_loss"]["ok"]
    assert s["pretrained"]["digests"]["origin"] != s["scratch"]["digests"]["origin"]

    loaded = load_results(out)
    assert set(loaded.inits) == {"pretrained", "scratch"}
    surface = loaded.inits["pretrained"].surface
    assert surface["train_loss"].shape == (5, 5) and surface["heldout_error"].shape == (5, 5)
    assert not loaded.inits["scratch"].trajectory_frame().empty

    # a second run reads everything back: no training, identical arrays
    again = run_landscape(tiny, tasks[0], tasks[1], config=_tiny_config(), out_dir=out)
    assert again["pretrained"]["train"]["task1"]["trained_epochs"] == 0
    np.testing.assert_array_equal(load_results(out).inits["pretrained"].surface["train_loss"], surface["train_loss"])
    assert again["pretrained"]["flatness"] == s["pretrained"]["flatness"]

    # a training run interrupted in its second epoch resumes after the first and ends at the same weights
    final = json.loads(next((out / "checkpoints").glob("pretrained-task1-*")).joinpath("epoch_002.json").read_text())

    def interrupt(desc: str):
        def callback(done: int, total: int) -> None:
            if desc == "train pretrained task1" and done > total // 2:
                raise KeyboardInterrupt

        return callback

    out2 = tmp_path / "out2"
    with pytest.raises(KeyboardInterrupt):
        run_landscape(
            tiny, tasks[0], tasks[1], config=_tiny_config(inits=("pretrained",)), out_dir=out2, progress=interrupt
        )
    resumed = run_landscape(tiny, tasks[0], tasks[1], config=_tiny_config(inits=("pretrained",)), out_dir=out2)
    assert resumed["pretrained"]["train"]["task1"]["trained_epochs"] == 1
    run_dir = next((out2 / "checkpoints").glob("pretrained-task1-*"))
    assert json.loads((run_dir / "epoch_002.json").read_text())["digest"] == final["digest"]
    assert not (run_dir / "optimizer.safetensors").exists()  # removed once the run is complete


# ---------------------------------------------------------------- seeds, views, learning curves


def test_every_seed_in_its_folder_and_the_summary_over_them(tiny_run, tmp_path):
    import shutil

    from isoscope.landscape.results import seed_dir

    out, summary, config, (encoder, task_pair) = tiny_run
    assert summary["seeds"] == 2 and summary["seed_values"] == [0, 1]
    assert summary["seed_runs"] == [str(out), str(seed_dir(out, 1))]
    seed1 = json.loads((seed_dir(out, 1) / "summary.json").read_text())
    assert seed1["seed"] == 1 and seed1["config"]["train"]["seed"] == 1 and seed1["grid"]["grid"] == 5
    assert seed1["config"]["seeds"] == 1 and summary["config"]["seeds"] == 2 and summary["config"]["train"]["seed"] == 0
    for init in ("pretrained", "scratch"):
        values = summary["summary"][init]["train_loss_theta1"]["values"]
        assert values == pytest.approx([summary[init]["theta1"]["train_loss"], seed1[init]["theta1"]["train_loss"]])
        assert summary["filter_normalized"][init]["sharpness"] == summary[init]["filter_normalized"]["sharpness"]
        assert summary[init]["flatness"]["hessian"]["scale_invariant"] is False
        lc = summary[init]["learning_curve"]
        assert [r["epoch"] for r in lc["rows"]] == [0, 1, 2] and lc["n_heldout"] == 16
        assert lc["rows"][-1]["train_loss"] == pytest.approx(summary[init]["theta1"]["train_loss"], rel=1e-6)
    # different seeds: different samples, heads, scratch inits and directions
    assert seed1["pretrained"]["digests"]["e1"] != summary["pretrained"]["digests"]["e1"]
    assert (
        seed1["scratch"]["filter_normalized"]["directions"]["seeds"]
        != summary["scratch"]["filter_normalized"]["directions"]["seeds"]
    )
    # a re-run reads every seed back (resumable per seed): nothing is trained again
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    again = run_landscape(encoder, *task_pair, config=config, out_dir=copy)
    assert again["pretrained"]["train"]["task1"]["trained_epochs"] == 0
    assert (
        json.loads((seed_dir(copy, 1) / "summary.json").read_text())["scratch"]["train"]["task2"]["trained_epochs"] == 0
    )
    assert again["summary"]["scratch"]["filter_sharpness"] == summary["summary"]["scratch"]["filter_sharpness"]


def test_task_only_and_filter_only_views(tiny, tasks, tmp_path):
    from isoscope.landscape.results import FILTER_CURVES, SURFACE
    from tests.core.landscape.helpers import tiny_config

    out = tmp_path / "views"
    config = tiny_config(inits=("scratch",), learning_heldout=0, hessian_iters=0)
    task_only = run_landscape(tiny, tasks[0], tasks[1], config=replace(config, directions="task"), out_dir=out)
    r = task_only["scratch"]
    assert "filter_normalized" not in r and "learning_curve" not in r and not (out / "scratch" / FILTER_CURVES).exists()
    loaded = load_results(out).inits["scratch"]
    assert loaded.filter_normalized is None and loaded.learning_curve is None and loaded.flatness.hessian is None
    assert task_only["filter_normalized"] == {}

    (out / "scratch" / SURFACE).unlink()  # the filter-only run must not need (or write) the task-plane surface
    filter_only = run_landscape(tiny, tasks[0], tasks[1], config=replace(config, directions="filter"), out_dir=out)
    r = filter_only["scratch"]
    assert r["train"]["task1"]["trained_epochs"] == 0  # the checkpoints are shared with the first run
    assert "surface" not in r and "curve_1d" not in r and not (out / "scratch" / SURFACE).exists()
    assert r["flatness"]["grid_train_loss"]["ok"] is False and "filter" in r["flatness"]["grid_train_loss"]["reason"]
    assert all(t["surface_train_loss"] is None for t in r["trajectory"])  # NaN in JSON: no surface under them
    loaded = load_results(out).inits["scratch"]
    assert loaded.surface is None and loaded.curve is None and loaded.filter_normalized is not None
    assert np.isnan(loaded.trajectory[0].surface_train_loss)


@pytest.mark.parametrize(
    ("over", "message"),
    [
        ({"directions": "global"}, "task, filter, both"),
        ({"seeds": 0}, "seeds must be between"),
        ({"learning_heldout": -1}, "learning_heldout"),
        ({"inits": ("random",)}, "unknown init"),
        ({"range_a": (1.0, 0.0)}, "increasing"),
    ],
)
def test_bad_options_are_input_errors(over, message):
    from isoscope.errors import InputError
    from tests.core.landscape.helpers import tiny_config

    with pytest.raises(InputError, match=message):
        tiny_config(**over).validate()
