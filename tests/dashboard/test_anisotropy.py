"""AppTest: the Anisotropy page on the demo corpus."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from tests.dashboard.conftest import open_page


def test_metrics_raw_vs_calibrated_and_layers(app: AppTest) -> None:
    at = open_page(app, "anisotropy")
    table = at.dataframe[0].value
    assert list(table.index) == ["raw", "whitening", "sn+abtt:3"]
    assert {"avg_cosine", "isoscore", "partition_isotropy", "effective_rank"} <= set(table.columns)
    # whitening makes the space more isotropic than the raw mean-pooled space
    assert table.loc["whitening", "isoscore"] > table.loc["raw", "isoscore"]
    assert abs(table.loc["whitening", "avg_cosine"]) < abs(table.loc["raw", "avg_cosine"])
    assert len(at.get("plotly_chart")) == 3
    layers = at.dataframe[1].value
    assert len(layers) == 7  # embeddings + 6 layers of MiniLM


def test_bad_upload_keeps_demo_working(app: AppTest) -> None:
    at = open_page(app, "anisotropy")
    at.radio(key="ani_source").set_value("Upload a file").run()
    at.file_uploader(key="ani_upload").set_value(("c.csv", b"", "text/csv")).run()
    assert not at.exception
    assert len(at.error) == 1 and "empty" in at.error[0].value
    at.radio(key="ani_source").set_value("Demo corpus").run()  # the demo is still there, untouched
    assert not at.exception and not at.error
    assert len(at.dataframe) >= 1 and "raw" in at.dataframe[0].value.index


def test_two_texts_get_one_info_line(app: AppTest) -> None:
    at = open_page(app, "anisotropy")
    at.radio(key="ani_source").set_value("Upload a file").run()
    at.file_uploader(key="ani_upload").set_value(("two.txt", b"A first text.\nA second text.\n", "text/plain")).run()
    assert not at.exception and not at.error
    assert any("at least 3 texts" in i.value for i in at.info), [i.value for i in at.info]
