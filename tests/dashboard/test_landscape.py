"""AppTest: the Loss surfaces page: guidance with no results, then a tiny live run (pre-trained and scratch)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.dashboard.conftest import open_page


@pytest.fixture()
def results_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty ISOSCOPE_CACHE, so the page sees no earlier results (core.landscape.results.default_root)."""
    monkeypatch.setenv("ISOSCOPE_CACHE", str(tmp_path))
    return tmp_path / "landscape"


def test_no_results_shows_guidance(app: AppTest, results_root: Path) -> None:
    at = open_page(app, "landscape")
    assert any("No results yet" in i.value for i in at.info)
    assert any("python -m core landscape" in c.value for c in at.code)
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

    out_dir = Path(at.selectbox(key="land_pick").value)
    assert out_dir.parent == results_root  # the new folder is selected and shown
    summary = json.loads((out_dir / "summary.json").read_text())
    assert summary["inits"] == ["pretrained", "scratch"] and summary["grid"]["grid"] == 3

    assert len(at.get("plotly_chart")) >= 4
    assert {"Pre-trained", "From scratch"} <= {m.value.strip("*") for m in at.markdown}
    labels = [m.label for m in at.metric]
    for label in ("cos(δ1, δ2)", "δ2 kept", "Top Hessian eigenvalue", "Grid curvature (max)"):
        assert labels.count(label) == 2, label  # one per initialisation
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
