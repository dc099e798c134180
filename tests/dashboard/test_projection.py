"""AppTest: the Projection map page (PCA, UMAP, 2-D and 3-D, colours, search highlight, precomputed x/y)."""

from __future__ import annotations

import base64
import json
import re

import numpy as np
from streamlit.testing.v1 import AppTest

from isoscope.dashboard.figures.projection import DEFAULT_METHOD, MAX_CATEGORIES
from isoscope.data import load_corpus
from isoscope.paths import DEMO_CORPUS
from tests.dashboard.conftest import open_page


def figures(at: AppTest) -> list[dict]:
    """The plotly figures on the page, as JSON."""
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def values(data: object) -> list:
    """A trace array from plotly's JSON: a list, or a typed array {"dtype", "bdata"(, "shape")}."""
    if isinstance(data, dict) and "bdata" in data:
        return np.frombuffer(base64.b64decode(data["bdata"]), dtype=data["dtype"]).tolist()
    return list(data)


def trace_names(fig: dict) -> list[str]:
    return [t.get("name", "") for t in fig["data"]]


N_XY = MAX_CATEGORIES + 10  # rows of the precomputed-coordinates file, each its own group


def test_pca_2d_raw_and_calibrated_coloured_by_topic(app: AppTest) -> None:
    demo = load_corpus(DEMO_CORPUS)
    topics = min(demo.meta["topic"].nunique(), MAX_CATEGORIES)  # the rarest beyond MAX_CATEGORIES - 1 as "other"
    app.session_state["pj_projection"] = "PCA"  # the default is UMAP (test_umap_and_3d)
    at = open_page(app, "projection")
    assert not at.error
    assert at.selectbox(key="pj_projection").value == "PCA"
    assert any("PCA draws the two directions" in c.value for c in at.caption)
    figs = figures(at)
    assert len(figs) == 2  # raw and calibrated side by side
    for fig in figs:
        assert {t["type"] for t in fig["data"]} == {"scattergl"}
        # default colour: the demo corpus's topic column, one trace per topic
        assert len(fig["data"]) == topics and "sports" in trace_names(fig)
        assert sum(len(values(t["x"])) for t in fig["data"]) == at.number_input(key="pj_sample").value <= len(demo)
    titles = [f["layout"]["title"]["text"] for f in figs]
    assert "raw" in titles[0] and "whitening" in titles[1]

    at.selectbox(key="pj_color").set_value("norm").run()
    assert not at.exception, at.exception
    fig = figures(at)[0]
    assert len(fig["data"]) == 1 and fig["data"][0]["marker"]["showscale"]
    at.selectbox(key="pj_color").set_value("topic").run()
    assert len(figures(at)[0]["data"]) == topics


def test_search_highlight_and_sample(app: AppTest) -> None:
    app.session_state["pj_projection"] = "PCA"
    at = open_page(app, "projection")
    at.text_input(key="pj_search").set_value("football").run()
    assert not at.exception, at.exception
    for fig in figures(at):
        (hits,) = [t for t in fig["data"] if t["name"].startswith("matches")]
        assert hits["marker"]["symbol"] == "circle-open" and hits["marker"]["size"] > fig["data"][0]["marker"]["size"]
        assert all("football" in t.lower() for t in hits["text"])
        assert hits["name"] == f"matches ({len(values(hits['x']))})" and len(values(hits["x"])) >= 1
    at.number_input(key="pj_sample").set_value(100).run()
    assert not at.exception, at.exception
    assert all(
        sum(len(values(t["x"])) for t in f["data"] if not t["name"].startswith("matches")) == 100 for f in figures(at)
    )


def purities(at: AppTest) -> list[float]:
    """The topic purity under each map (raw, calibrated), as the page states it."""
    found = [re.match(r"topic purity (\d\.\d+):", c.value) for c in at.caption]
    return [float(m.group(1)) for m in found if m]


def test_umap_and_3d(app: AppTest) -> None:
    """The page opens on UMAP, which shows the demo's topics where PCA shows one blob (issue 41), measured on
    the page's own maps: each 2-D map's 10-NN topic purity, UMAP's several times PCA's."""
    at = open_page(app, "projection")
    assert at.selectbox(key="pj_projection").value == DEFAULT_METHOD == "UMAP"
    assert not at.exception, at.exception
    assert not at.error
    assert len(figures(at)) == 2
    umap = purities(at)
    at.selectbox(key="pj_projection").set_value("PCA").run()
    pca = purities(at)
    assert len(umap) == len(pca) == 2
    assert umap[0] > 0.3 and umap[0] > 3 * pca[0], (umap, pca)  # the raw maps: the default teaches the topics
    at.selectbox(key="pj_projection").set_value("UMAP").run()
    at.radio(key="pj_dims").set_value(3).run()
    assert not at.exception, at.exception
    figs = figures(at)
    assert len(figs) == 2 and {t["type"] for f in figs for t in f["data"]} == {"scatter3d"}
    at.selectbox(key="pj_projection").set_value("PCA").run()
    assert not at.exception, at.exception
    assert {t["type"] for f in figures(at) for t in f["data"]} == {"scatter3d"}


def test_precomputed_xy_columns(app: AppTest) -> None:
    app.session_state["pj_projection"] = "PCA"
    at = open_page(app, "projection")
    at.radio(key="pj_source").set_value("Upload a file").run()
    rows = [
        f"Sentence number {i} about <b>{'cats' if i % 2 else 'dogs'}</b>.,{i},{i * 0.5},<i>g{i}</i>"
        for i in range(N_XY)
    ]
    data = ("text,x,y,group\n" + "\n".join(rows) + "\n").encode()
    at.file_uploader(key="pj_upload").set_value(("xy.csv", data, "text/csv")).run()
    assert not at.exception, at.exception
    assert "precomputed (x, y columns)" in at.selectbox(key="pj_projection").options
    assert "x" not in at.selectbox(key="pj_color").options
    at.selectbox(key="pj_projection").set_value("precomputed (x, y columns)").run()
    assert not at.exception, at.exception
    (fig,) = figures(at)
    xs = sorted(x for t in fig["data"] for x in values(t["x"]))
    assert xs == list(range(N_XY))
    # hover text and legend names are HTML-escaped user text
    hover = " ".join(h for t in fig["data"] for h in t["text"])
    assert "&lt;b&gt;" in hover and "<b>" not in hover
    # more distinct groups than MAX_CATEGORIES: the MAX_CATEGORIES - 1 most frequent get a colour each, the rest "other"
    names = trace_names(fig)
    assert len(names) == MAX_CATEGORIES and names[-1] == "other"
    assert all(n.startswith("&lt;i&gt;g") for n in names[:-1])


def test_colour_by_adapter_cosine_after_a_migration_run(app: AppTest) -> None:
    """With a migration result in the session (the Migration page keeps its last run there), the map colours each
    text by its adapter cosine: an identity adapter (B = A) maps every held-out text exactly (cosine 1); the fit
    pairs and the corpus's texts not in the run are drawn grey as "no value"."""
    from isoscope.migrate.config import MigrationConfig
    from isoscope.migrate.run import evaluate_migration
    from isoscope.retrieval.task import build_task

    demo = load_corpus(DEMO_CORPUS)
    docs = list(dict.fromkeys(demo.texts))[:80]
    rng = np.random.default_rng(0)
    D = rng.normal(size=(len(docs), 12))
    Q = D[:20] + 0.3 * rng.normal(size=(20, 12))
    task = build_task(
        "identity",
        [(f"q{i}", f"query {i}") for i in range(20)],
        [(f"d{i}", t) for i, t in enumerate(docs)],
        [(f"q{i}", f"d{i}", 1) for i in range(20)],
    )
    config = MigrationConfig(methods=("procrustes",), fit_fraction=0.25, curve=(), resamples=200)
    result = evaluate_migration((Q, D), (Q, D), task, config=config)
    app.session_state["migration_result"] = result
    app.session_state["pj_projection"] = "PCA"
    at = open_page(app, "projection")
    assert "adapter cosine" in at.selectbox(key="pj_color").options
    at.number_input(key="pj_sample").set_value(len(demo.texts)).run()
    at.selectbox(key="pj_color").set_value("adapter cosine").run()
    assert not at.exception, at.exception
    fig = figures(at)[0]
    assert trace_names(fig) == ["no value", "adapter cosine"]
    coloured = values(fig["data"][1]["marker"]["color"])
    assert len(coloured) == len(docs) - len(result.fit_rows)  # the held-out texts, each once in the demo corpus
    np.testing.assert_allclose(coloured, 1.0, atol=1e-5)  # float32 search vectors: d x 6e-8 of round-off
    assert any("held out of the Migration page's last run" in c.value for c in at.caption)
