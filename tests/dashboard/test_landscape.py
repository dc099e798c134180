"""AppTest: the Loss surfaces page: guidance with no results, a tiny live run (pre-trained and scratch, both views),
an older stored result without the new sections, and a result whose schema changed (a bug box, never NaN)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from isoscope.dashboard.ui import ESTIMATE_PREFIX
from tests.conftest import private_cache
from tests.dashboard.conftest import open_page


@pytest.fixture()
def results_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty ISOSCOPE_CACHE, so the page sees no earlier results (isoscope.landscape.results.default_root)."""
    monkeypatch.setenv("ISOSCOPE_CACHE", str(private_cache(tmp_path)))
    return tmp_path / "landscape"


def test_no_results_shows_guidance(app: AppTest, results_root: Path) -> None:
    at = open_page(app, "landscape")
    assert any("No results yet" in i.value for i in at.info)
    assert any("python -m isoscope landscape" in c.value for c in at.code)
    assert not at.get("plotly_chart") and not at.metric
    assert at.button(key="land_run") is not None
    assert not results_root.exists() or not any(results_root.iterdir())


def test_live_tiny_run_shows_both_initialisations(app: AppTest, results_root: Path) -> None:
    at = open_page(app, "landscape")
    at.selectbox(key="land_task").set_value("demo-topic")
    at.select_slider(key="land_n").set_value(32)
    at.select_slider(key="land_epochs").set_value(1)
    at.select_slider(key="land_grid").set_value(3)
    at.select_slider(key="land_maxlen").set_value(32)
    at.select_slider(key="land_eval").set_value(8)
    at.number_input(key="land_hess").set_value(2)
    at.run()
    assert not at.get("plotly_chart"), "nothing is run before the button is pressed"
    at.button(key="land_run").click().run(timeout=1200)
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    assert not [c.value for c in at.caption if ESTIMATE_PREFIX in c.value], "a finished run costs nothing now"

    out_dir = Path(at.selectbox(key="land_pick").value)
    assert out_dir.parent == results_root  # the new folder is selected and shown
    summary = json.loads((out_dir / "summary.json").read_text())
    assert summary["inits"] == ["pretrained", "scratch"] and summary["grid"]["grid"] == 3

    assert len(at.get("plotly_chart")) >= 4
    assert {"Pre-trained", "From scratch"} <= {m.value.strip("*") for m in at.markdown}
    labels = [m.label for m in at.metric]
    for label in ("cos(δ1, δ2)", "δ2 kept", "Top Hessian eigenvalue", "Grid curvature (max)"):
        assert labels.count(label) == 2, label  # one per initialisation
    # both views, the scale-invariant sharpness, learning curves and the headline table (one seed: no spread)
    assert len(at.get("plotly_chart")) >= 14
    assert {"Sharpness · Pre-trained", "Sharpness · From scratch"} <= set(labels)
    sharp = next(m.value for m in at.metric if m.label == "Sharpness · Pre-trained")
    mean = summary["pretrained"]["filter_normalized"]["sharpness"]
    assert float(sharp.split(" ± ")[0]) == pytest.approx(mean["mean"], rel=1e-2, abs=1e-6)
    assert summary["seeds"] == 1 and summary["pretrained"]["learning_curve"]["n_heldout"] > 0
    flat = next(d.value for d in at.dataframe if "scale_invariant" in d.value.columns and "measure" in d.value.columns)
    assert set(flat["scale_invariant"]) == {True, False}
    headline = next(d.value for d in at.dataframe if "label" in d.value.columns)
    assert "filter-normalised sharpness (train loss)" in set(headline["label"])
    captions = " ".join(c.value for c in at.caption)
    assert "NOT a flatness comparison" in captions and "flatness compares by eye" not in captions
    cos = [m.value for m in at.metric if m.label == "cos(δ1, δ2)"]
    assert float(cos[0]) == pytest.approx(summary["pretrained"]["axes"]["cos_delta1_delta2"], rel=1e-3, abs=1e-6)
    assert float(cos[1]) == pytest.approx(summary["scratch"]["axes"]["cos_delta1_delta2"], rel=1e-3, abs=1e-6)

    traj = next(d.value for d in at.dataframe if "surface_train_loss" in d.value.columns)
    assert set(traj["init"]) == {"pretrained", "scratch"}
    theta1 = traj[(traj["run"] == "task1") & (traj["epoch"] == 1)]
    assert theta1["a"].tolist() == pytest.approx([1.0, 1.0], abs=1e-4)  # theta1 sits at (1, 0) on its own plane
    assert theta1["b"].tolist() == pytest.approx([0.0, 0.0], abs=1e-4)
    assert (theta1["residual"] < 1e-4).all()
    rollback = next(d.value for d in at.dataframe if "group" in d.value.columns)
    assert {"none", "embeddings", "lower", "upper", "encoder"} <= set(rollback["group"])

    # a second press of the same configuration is served from the cache and keeps the result selected
    at.button(key="land_run").click().run()
    assert not at.exception and at.selectbox(key="land_pick").value == str(out_dir)


def test_unfinished_result_is_one_error_line(app: AppTest, results_root: Path) -> None:
    folder = results_root / "unfinished"
    folder.mkdir(parents=True)
    (folder / "summary.json").write_text(json.dumps({"task": "demo-topic", "inits": ["pretrained", "scratch"]}))
    at = open_page(app, "landscape")
    assert at.selectbox(key="land_pick").value == str(folder)
    assert len(at.error) == 1 and "no finished initialisation" in at.error[0].value
    assert not at.get("plotly_chart") and not at.metric


@pytest.fixture(scope="module")
def stored_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small stored experiment (tiny random BERT on the demo tasks, two seeds, a few seconds), written once."""
    from isoscope.landscape import LandscapeConfig, TrainConfig, load_task, run_landscape
    from tests.tiny_models import tiny_bert

    out = tmp_path_factory.mktemp("stored") / "run"
    train = TrainConfig(lr=1e-3, epochs=2, batch_size=8, n_train=24, max_length=48, seed=0)
    config = LandscapeConfig(train=train, eval_size=8, eval_chunk=8, grid=3, points_1d=3, hessian_iters=2, seeds=2)
    run_landscape(tiny_bert(0), load_task("demo-topic", 0), load_task("demo-pairs", 0), config=config, out_dir=out)
    return out


def _stored(stored_run: Path, results_root: Path, name: str) -> Path:
    folder = results_root / name
    shutil.copytree(stored_run, folder, ignore=shutil.ignore_patterns("checkpoints"))
    return folder


def _edit(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def test_older_result_without_the_new_sections_still_shows(app: AppTest, results_root: Path, stored_run: Path) -> None:
    folder = _stored(stored_run, results_root, "older")

    def old(d: dict) -> None:
        for key in ("seeds", "seed_values", "seed_runs", "summary", "learning_curves", "filter_normalized"):
            d.pop(key, None)
        for key in ("directions", "filter_config", "learning_heldout", "seeds"):
            d.get("config", {}).pop(key, None)
        for part in (d, d.get("pretrained", {}), d.get("scratch", {})):  # summary.json, or one results.json
            part.pop("filter_normalized", None), part.pop("learning_curve", None)

    _edit(folder / "summary.json", old)
    for init in ("pretrained", "scratch"):
        _edit(folder / init / "results.json", old)
    at = open_page(app, "landscape")
    assert not at.error, [e.value for e in at.error]
    infos = " ".join(i.value for i in at.info)
    assert "no filter-normalised view" in infos and "no learning curves" in infos
    labels = [m.label for m in at.metric]
    assert labels.count("Top Hessian eigenvalue") == 2 and not any(lab.startswith("Sharpness") for lab in labels)
    assert len(at.get("plotly_chart")) >= 8  # the task-plane view and the rollback, as before


def test_a_changed_schema_is_a_bug_box_naming_the_field(app: AppTest, results_root: Path, stored_run: Path) -> None:
    folder = _stored(stored_run, results_root, "renamed")
    _edit(
        folder / "scratch" / "results.json", lambda r: r["axes"].__setitem__("cos", r["axes"].pop("cos_delta1_delta2"))
    )
    at = app.switch_page("views/landscape.py").run()
    errors = " ".join(e.value for e in at.error).replace("\\", "")  # Markdown escapes
    assert "This is a bug" in errors and "axes.cos_delta1_delta2" in errors and "results.json" in errors
    assert not at.metric  # nothing is shown as NaN


def test_seeds_show_mean_and_sd(app: AppTest, results_root: Path, stored_run: Path) -> None:
    folder = _stored(stored_run, results_root, "seeds")
    summary = json.loads((folder / "summary.json").read_text())
    at = open_page(app, "landscape")
    assert not at.error, [e.value for e in at.error]
    headline = next(d.value for d in at.dataframe if "label" in d.value.columns)
    row = headline[headline["label"] == "filter-normalised sharpness (train loss)"].iloc[0]
    assert row["scale_invariant"] == "yes" and " ± " in row["Pre-trained"]
    assert headline[headline["label"] == "top Hessian eigenvalue at theta1"].iloc[0]["scale_invariant"] == "no"
    stat = summary["summary"]["scratch"]["filter_sharpness"]
    shown = next(m.value for m in at.metric if m.label == "Sharpness · From scratch")
    mean, sd = (float(x) for x in shown.split(" ± "))
    # shown with 3 and 2 significant digits: rounding moves them by at most 0.5% and 5%
    assert mean == pytest.approx(stat["mean"], rel=6e-3) and sd == pytest.approx(stat["sd"], rel=6e-2)
    assert any("over 2 seeds" in c.value for c in at.caption)
