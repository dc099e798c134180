"""AppTest: the router, the sidebar and the sentence-pair page, with good and bad uploads."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from tests.dashboard.conftest import open_page as _open


def open_page(at: AppTest) -> AppTest:
    return _open(at, "similarity")


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def test_home_runs(app: AppTest) -> None:
    assert app.title[0].value == "Isoscope"
    assert app.selectbox(key="pooling").value == "model"


def test_demo_pairs_spearman_and_side_by_side(app: AppTest) -> None:
    at = open_page(app)
    first = metrics(at)
    assert list(first) == ["Spearman (model)"]
    assert 60 < float(first["Spearman (model)"]) < 95
    at.multiselect(key="sim_poolings:model").select("cls").run()
    assert not at.exception
    both = metrics(at)
    assert set(both) == {"Spearman (model)", "Spearman (cls)"}
    assert both["Spearman (model)"] == first["Spearman (model)"]
    assert len(at.get("plotly_chart")) == 1
    table = at.dataframe[0].value
    assert {"cosine model", "cosine cls", "score"} <= set(table.columns)
    assert len(table) >= 120


def test_sidebar_pooling_switch_changes_result(app: AppTest) -> None:
    at = open_page(app)
    mean = float(metrics(at)["Spearman (model)"])
    # AppTest does not expose the router's sidebar after switch_page; set its widget state directly.
    at.session_state["pooling"] = "cls"
    at.run()
    assert not at.exception
    assert float(metrics(at)["Spearman (cls)"]) != mean


def test_typed_pair_shows_cosine(app: AppTest) -> None:
    at = open_page(app)
    at.radio(key="sim_source").set_value("Type two sentences").run()
    at.text_input(key="sim_a").set_value("The dog bit the man.").run()
    at.text_input(key="sim_b").set_value("The man bit the dog.").run()
    assert not at.exception
    value = float(metrics(at)["cosine (model)"])
    assert 0.8 < value <= 1.0  # word order barely moves a mean-pooled vector: a teaching point


def test_upload_good_then_bad_keeps_good(app: AppTest) -> None:
    at = open_page(app)
    at.radio(key="sim_source").set_value("Upload a file").run()
    good = b"sentence1,sentence2,score\nA cat sits.,A cat is sitting.,4.8\nA cat sits.,Stocks fell.,0.2\nI cook rice.,Rice is cooking.,3.9\nIt rains.,The sun is out.,1.0\n"
    at.file_uploader(key="sim_upload").set_value(("good.csv", good, "text/csv")).run()
    assert not at.exception and not at.error
    assert len(at.dataframe[0].value) == 4
    at.file_uploader(key="sim_upload").set_value(("bad.csv", b"\x00\x01binary junk", "text/csv")).run()
    assert not at.exception
    assert len(at.error) == 1 and "binary" in at.error[0].value
    assert "\n" not in at.error[0].value
    assert len(at.dataframe[0].value) == 4  # the good file is still loaded
    assert "good.csv" in " ".join(c.value for c in at.caption).replace("\\", "")


def test_upload_html_is_shown_literally(app: AppTest) -> None:
    at = open_page(app)
    at.radio(key="sim_source").set_value("Upload a file").run()
    data = b"sentence1,sentence2\n<script>alert(1)</script>,<b>bold</b>\n=cmd|' /C calc'!A0,plain\n"
    at.file_uploader(key="sim_upload").set_value(("x.csv", data, "text/csv")).run()
    assert not at.exception
    table = at.dataframe[0].value
    assert table["sentence1"].tolist() == ["<script>alert(1)</script>", "=cmd|' /C calc'!A0"]


def test_whitening_side_by_side_with_rank_moves(app: AppTest) -> None:
    at = open_page(app)
    at.selectbox(key="sim_method").set_value("whitening").run()
    assert not at.exception
    m = metrics(at)
    assert set(m) == {"Spearman (model)", "Spearman (model + whitening)"}
    assert m["Spearman (model)"] != m["Spearman (model + whitening)"]
    assert {"cosine model", "cosine model + whitening"} <= set(at.dataframe[-1].value.columns)
    moved = at.dataframe[0].value
    assert len(moved) == 10 and "rank shift" in moved.columns
    assert moved["rank shift"].abs().is_monotonic_decreasing
