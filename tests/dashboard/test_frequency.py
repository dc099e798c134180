"""AppTest: the Frequency bias page on the demo corpus."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from tests.dashboard.conftest import open_page


def test_static_buckets_raw_and_calibrated(app: AppTest) -> None:
    at = open_page(app, "frequency")
    labels = [m.label for m in at.metric]
    assert labels == ["Spearman(norm, count) raw", "Spearman(norm, count) calibrated"]
    buckets = at.dataframe[0].value
    assert set(buckets["stage"]) == {"raw", "calibrated"}
    assert buckets["n_tokens"].sum() > 0
    assert len(at.get("plotly_chart")) == 1


def test_contextual_space(app: AppTest) -> None:
    at = open_page(app, "frequency")
    at.radio(key="freq_space").set_value("contextual").run()
    assert not at.exception, at.exception
    assert set(at.dataframe[0].value["space"]) == {"contextual"}
