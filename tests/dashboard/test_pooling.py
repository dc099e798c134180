"""AppTest: the Pooling explorer on the demo pairs."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from tests.dashboard.conftest import open_page


def test_explorer_table_and_best(app: AppTest) -> None:
    at = open_page(app, "pooling")
    assert not at.dataframe, "nothing runs before the button"
    at.button(key="pool_go").click().run()
    assert not at.exception, at.exception
    table = at.dataframe[0].value
    assert set(table["calibration"]) == {"none", "whitening:64"}
    assert {"cls", "mean", "max", "last2avg", "first_last_avg", "layer:0", "layer:6"} <= set(table["pooling"])
    best = table.loc[table["spearman"].idxmax()]
    assert f"Best: {best['pooling']} + {best['calibration']}" in at.success[0].value
    assert len(at.get("plotly_chart")) == 2


def test_pairs_without_scores_get_one_info_line(app: AppTest) -> None:
    at = open_page(app, "pooling")
    at.radio(key="pool_source").set_value("Type two sentences").run()
    assert not at.exception and not at.error
    assert any("The explorer needs gold scores" in i.value for i in at.info), [i.value for i in at.info]


def test_pairs_with_one_score_for_all_get_one_info_line(app: AppTest) -> None:
    """Spearman is undefined when every gold score is the same: the page says so instead of failing."""
    at = open_page(app, "pooling")
    at.radio(key="pool_source").set_value("Upload a file").run()
    flat = b"sentence1,sentence2,score\nA cat sleeps.,A cat naps.,3\nRain falls.,It is raining.,3\nA bus left.,The bus went.,3\n"
    at.file_uploader(key="pool_upload").set_value(("flat.csv", flat, "text/csv")).run()
    assert not at.exception and not at.error
    assert any("same score" in i.value for i in at.info), [i.value for i in at.info]
