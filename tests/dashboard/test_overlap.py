"""AppTest: the Lexical overlap page on the demo pairs."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from tests.dashboard.conftest import open_page


def test_three_correlations_with_edit_distance(app: AppTest) -> None:
    at = open_page(app, "overlap")
    values = {m.label: float(m.value) for m in at.metric}
    assert set(values) == {
        "Spearman with edit distance: gold",
        "Spearman with edit distance: raw cosine",
        "Spearman with edit distance: whitening:64 cosine",  # the default: K = 64 of 384 dimensions
    }
    assert all(-100 <= v <= 100 for v in values.values())
    table = at.dataframe[0].value
    assert {"edit_distance", "gold", "raw cosine"} <= set(table.columns)
    assert table["edit_distance"].between(0, 1).all()
    assert len(at.get("plotly_chart")) == 1
