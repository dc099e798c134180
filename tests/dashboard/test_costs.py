"""AppTest: a run that will take long says what it will cost before its button is pressed; a short one says
nothing (a finished one, neither: see test_landscape's live run)."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from isoscope.dashboard.ui import ESTIMATE_PREFIX
from tests.dashboard.conftest import APP
from tests.dashboard.test_glossary import small_pairs
from tests.dashboard.test_launched_data import launched, page


def estimates(at: AppTest) -> list[str]:
    return [c.value for c in at.caption if ESTIMATE_PREFIX in c.value]


def test_the_largest_live_run_says_its_time_and_disk_before_it_starts(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("ISOSCOPE_CACHE", str(tmp_path / "cache"))
    at = AppTest.from_file(APP, default_timeout=300)
    at.run()
    at.switch_page("views/landscape.py").run()
    for key, value in (("land_n", 128), ("land_epochs", 3), ("land_grid", 9), ("land_eval", 64)):
        at.select_slider(key=key).set_value(value)
    at.number_input(key="land_hess").set_value(30).run()
    assert not at.exception, at.exception
    # about 60k forward passes of the 6-layer model over 20-token texts, and 4 runs x 4 checkpoints of 22M
    # float32 parameters: minutes and over a GB on any CPU
    (shown,) = estimates(at)
    assert "min" in shown and "GB on disk" in shown, shown
    assert not at.success and not at.get("plotly_chart"), "nothing ran"


def test_short_runs_say_nothing(tmp_path, monkeypatch) -> None:
    at = launched(monkeypatch, tmp_path, small_pairs(tmp_path))
    at = page(at, "pooling")
    at.multiselect(key="pool_methods").set_value(["whitening:64", "sn+abtt:3"]).run()
    assert not estimates(at), "40 sentences, every pooling in one pass, linear fits: seconds"
    at = page(at, "calibration")
    at.radio(key="calp_fit_on").set_value("These sentences only")  # the default adds the demo corpus: minutes cold
    at.multiselect(key="calp_tp").set_value(["mean"])
    at.multiselect(key="calp_tm").set_value(["none", "whitening", "flow"]).run()
    assert not at.exception and not estimates(at), "a flow of 3 epochs on 40 vectors: a fraction of one batch"
