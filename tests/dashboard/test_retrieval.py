"""The Retrieval page on the demo task: the table with every fix's test against raw, the per-query scatter, the
queries that moved with their top documents, and clustering on the demo corpus's topics."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from tests.dashboard.conftest import open_page


def _frame(at: AppTest, column: str):
    return next(d.value for d in at.dataframe if column in d.value.columns)


def test_the_demo_task_runs_offline_and_calls_fixes_by_their_test(app: AppTest) -> None:
    at = open_page(app, "retrieval")
    assert at.radio(key="ret_source").value == "Demo task"
    defaults = at.multiselect(key="ret_fixes").value
    assert "whitening" not in defaults and "flow" not in defaults  # 300 documents: too few for 384 dimensions
    assert {"centre", "whitening:64", "csls"} <= set(defaults)
    at.multiselect(key="ret_fixes").set_value(["centre", "whitening", "csls"]).run()
    at.button(key="ret_run").click().run()
    assert not at.exception, at.exception
    table = _frame(at, "verdict")
    assert list(table["variant"]) == ["raw", "centre", "whitening", "csls"]
    assert table["verdict"].iloc[0] == "baseline"
    assert set(table["verdict"].iloc[1:]) <= {"better", "worse", "no difference"}
    assert table.loc[table["variant"] == "whitening", "verdict"].item() == "worse"  # its noisy tail, amplified
    assert [w.value for w in at.warning if "whitening was fitted on 300 vectors" in w.value]
    assert at.selectbox(key="ret_variant").options == ["centre", "whitening", "csls"]
    at.selectbox(key="ret_variant").set_value("whitening").run()
    assert not at.exception
    assert any("Lost most" in m.value for m in at.markdown)
    assert any("grade" in d.value.columns for d in at.dataframe)  # a moved query's top documents


def test_clustering_on_the_demo_topics(app: AppTest) -> None:
    at = open_page(app, "retrieval")
    at.button(key="ret_run").click().run()
    assert at.selectbox(key="ret_label").value == "topic"
    at.multiselect(key="ret_cluster_fixes").set_value(["whitening:64"]).run()
    at.button(key="ret_cluster_run").click().run()
    assert not at.exception, at.exception
    table = _frame(at, "v_measure")
    assert list(table["variant"]) == ["raw", "whitening:64"] and table["v_measure"].between(0, 100).all()


def test_a_row_added_to_the_metrics_table_reaches_the_page(app: AppTest, monkeypatch) -> None:
    """The page reads ``isoscope.retrieval.options.METRICS``: a row added there is in the Metric selector (with its
    words in the help), the caption and the table (the run cached without it is dropped first, and after)."""
    from isoscope.dashboard.services import retrieval as service
    from isoscope.retrieval.options import METRICS, Metric

    monkeypatch.setitem(
        METRICS, "precision@10", Metric("P@10", True, "share of the first 10 that are relevant", "P_10")
    )
    service.run_model.clear()
    try:
        at = open_page(app, "retrieval")
        assert any("P@10" in c.value for c in at.caption)
        at.multiselect(key="ret_fixes").set_value(["centre"]).run()
        at.button(key="ret_run").click().run()
        assert not at.exception, at.exception
        radio = at.radio(key="ret_metric")
        assert radio.label == "Metric" and list(radio.options) == list(METRICS)
        assert radio.options[-1] == "precision@10" and "share of the first 10 that are relevant" in radio.help
        assert "precision@10" in _frame(at, "verdict").columns
        radio.set_value("precision@10").run()
        assert not at.exception and "Δ precision@10" in _frame(at, "verdict").columns
    finally:
        service.run_model.clear()  # no later page sees a run with the extra row
