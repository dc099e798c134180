"""AppTest: the Calibration page fits whitening and a flow, and fills the pooling x calibrator table."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from tests.dashboard.conftest import open_page


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def test_fit_whitening_then_flow(app: AppTest) -> None:
    at = open_page(app, "calibration")
    at.selectbox(key="calp_method").set_value("whitening").run()
    assert not metrics(at), "nothing is fitted before the button is pressed"
    at.button(key="calp_fit").click().run()
    assert not at.exception
    m = metrics(at)
    assert {"Spearman raw", "Spearman whitening", "avg cosine whitening"} <= set(m)
    assert abs(float(m["avg cosine whitening"])) < abs(float(m["avg cosine raw"]))

    at.selectbox(key="calp_method").set_value("flow").run()
    at.number_input(key="calp_epochs").set_value(3).run()
    at.button(key="calp_fit").click().run()
    assert not at.exception, at.exception
    m = metrics(at)
    assert "Spearman flow" in m
    assert len(at.get("plotly_chart")) >= 1  # the training curve


def test_pooling_by_calibrator_table(app: AppTest) -> None:
    at = open_page(app, "calibration")
    at.multiselect(key="calp_tp").set_value(["mean", "cls"]).run()
    at.multiselect(key="calp_tm").set_value(["none", "whitening", "sn+abtt:3"]).run()
    at.button(key="calp_table_go").click().run()
    assert not at.exception, at.exception
    grid = at.dataframe[-1].value
    assert list(grid.index) == ["mean", "cls"]
    assert list(grid.columns) == ["none", "whitening", "sn+abtt:3"]
    assert at.success[0].value.startswith("Best:")


def test_pairs_without_scores_get_one_info_line(app: AppTest) -> None:
    """Typed sentences have no gold score: the page says what it needs instead of failing."""
    at = open_page(app, "calibration")
    at.radio(key="calp_source").set_value("Type two sentences").run()
    assert not at.exception and not at.error
    assert any("gold scores" in i.value for i in at.info), [i.value for i in at.info]
    assert not at.button, "nothing to fit without gold scores"


def test_new_pairs_wait_for_a_new_press(app: AppTest) -> None:
    """A fit runs on a press; loading other pairs afterwards does not start another fit by itself."""
    at = open_page(app, "calibration")
    at.selectbox(key="calp_method").set_value("whitening").run()
    at.button(key="calp_fit").click().run()
    assert "Spearman whitening" in metrics(at)
    at.radio(key="calp_source").set_value("Upload a file").run()
    pairs = b"sentence1,sentence2,score\n" + b"".join(
        f"Sentence number {i} here.,Another line {i} there.,{i % 5}\n".encode() for i in range(12)
    )
    at.file_uploader(key="calp_upload").set_value(("pairs.csv", pairs, "text/csv")).run()
    assert not at.exception
    assert not metrics(at), "no fit before the button is pressed again"
    assert any("Press **Fit calibrator**" in i.value for i in at.info)
