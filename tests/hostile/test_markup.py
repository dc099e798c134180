"""Markdown and HTML in user and file text never become live markup on a page (issue 40, "Markdown and HTML in
captions"): the Atlas's colour caption rendered category values and cluster names as Markdown, so an image
value fetched a remote picture and a link value was a live link.

Markdown links, images, autolinks and HTML anchors are planted in every kind of column (the text column, a
category column, a number column, and their names), in a pairs file's sentences, in a vectors file's name and
columns, and in an atlas folder's cluster names; every page that can show them is visited with AppTest, and
every element of every page is read from its protobuf:

- every field Streamlit renders as Markdown (bodies of markdown, captions, headings and alerts; labels, help
  texts, radio and pill options, expander and tab labels) must hold the planted hosts only escaped
  (``phish\\.invalid``, as ``isoscope.dashboard.text.literal`` writes them): unescaped, a host is inside a live
  link, image or autolink;
- no string of a plotly figure (titles, legends, axis labels, hover texts and templates, annotations) may hold
  a raw ``<a`` or ``<img`` tag: plotly renders a subset of HTML there (``plot_text`` escapes it).

Plain-text fields (select box and multiselect options, table cells, text inputs) may show the text as it is.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from google.protobuf.json_format import MessageToDict
from streamlit.testing.v1 import AppTest

from tests.dashboard.conftest import APP
from tests.dashboard.test_landscape import stored_run  # noqa: F401 (the fixture: a tiny stored experiment)

MARKS = (
    "![b](http://beacon.invalid/{i}.png)",
    "[click](http://phish.invalid/{i})",
    "<a href='http://anchor.invalid/{i}'>a</a>",
    "<img src='http://img.invalid/{i}.png'>",
    "<http://auto.invalid/{i}> www.bare.invalid",
)
HOST = re.compile(r"(beacon|phish|anchor|img|auto|bare)\.invalid", re.I)  # unescaped: the dot is not "\."
TAG = re.compile(r"<\s*(a|img)\b", re.I)
PLAIN_OPTIONS = {"selectbox", "multiselect", "select_slider"}  # their options are shown as plain text
# the Atlas map's component: its data reaches our own script, which shows every text with textContent
PLAIN_KINDS = {"bidi_component"}
PLAIN_FIELDS = {"default", "value", "raw_value", "data", "arrow_data", "placeholder", "id", "form_id", "set_value"}

TEXT = "text [t](http://phish.invalid/col)"
CATEGORY = "topic ![c](http://beacon.invalid/col.png)"
NUMBER = "score <a href='http://anchor.invalid/num'>n</a>"
N = 30
ALL_PAGES = (
    "home",
    "similarity",
    "calibration",
    "anisotropy",
    "frequency",
    "overlap",
    "sweep",
    "neighbours",
    "projection",
    "atlas",
    "compare",
    "pooling",
    "anatomy",
    "landscape",
)
TEXT_PAGES = ("neighbours", "projection", "atlas", "compare")  # the pages that show a corpus's texts
SPACE_PAGES = ("anisotropy", "neighbours", "projection", "atlas", "compare", "sweep", "calibration", "similarity")


def mark(i: int) -> str:
    return MARKS[i % len(MARKS)].format(i=i)


def hostile_texts(n: int = N, lead: str = "Sentence") -> list[str]:
    topics = ("rivers", "cakes", "maps")
    return [f"{lead} {i} about {topics[i % 3]} and {topics[(i + 1) % 3]} {mark(i)}" for i in range(n)]


def category_values(n: int = N) -> list[str]:
    """Three categories, each a planted link or image."""
    return [mark(100 + i % 3) for i in range(n)]


# ---------------------------------------------------------------- reading a page


def _nodes(node) -> Iterator:
    yield node
    for child in getattr(node, "children", {}).values():
        yield from _nodes(child)


def _strings(value: object, path: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(v, f"{path}.{k}")
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v, f"{path}[]")


def live_markup(at: AppTest) -> list[tuple[str, str, str]]:
    """(element type, field, text) of every planted link, image or anchor that would be live on the page."""
    found = set()
    for node in _nodes(at._tree):
        proto = getattr(node, "proto", None)
        if proto is None or not hasattr(proto, "DESCRIPTOR"):
            continue
        kind = getattr(node, "type", "?")
        if kind in PLAIN_KINDS:
            continue
        fields = MessageToDict(proto, preserving_proto_field_name=True)
        if kind == "plotly_chart":
            for path, text in _strings(json.loads(fields.get("spec") or "{}"), "spec"):
                if TAG.search(text):
                    found.add((kind, path, text[:120]))
            continue
        for path, text in _strings(fields):
            top = path.split(".")[1].split("[")[0]
            if top in PLAIN_FIELDS or (top == "options" and kind in PLAIN_OPTIONS):
                continue
            if HOST.search(text):
                found.add((kind, path, text[:120]))
    return sorted(found)


ESCAPED = re.compile(r"(beacon|phish|anchor|img|auto|bare)\\?\.invalid", re.I)


def shows_planted(at: AppTest) -> bool:
    """Whether any element of the page (its fields, a table's cells, a figure) holds planted text, escaped or
    not: the page did show the user's text."""
    for node in _nodes(at._tree):
        proto = getattr(node, "proto", None)
        if proto is not None and hasattr(proto, "DESCRIPTOR") and ESCAPED.search(str(proto)):
            return True
        if getattr(node, "type", "") in ("arrow_data_frame", "dataframe"):
            if ESCAPED.search(node.value.to_csv()):
                return True
    return False


def visit(
    at: AppTest, pages: tuple[str, ...], states: dict[str, object] | None = None, shows: tuple[str, ...] = ()
) -> None:
    """Every page in turn (``states`` set before each run); fails on an exception, on a page of ``shows`` that
    shows none of the planted text (it did not get that far), or on live markup, listing every element that
    holds it."""
    out: list[tuple[str, str, str, str]] = []
    for page in pages:
        for k, v in (states or {}).items():
            at.session_state[k] = v
        at.switch_page(f"views/{page}.py").run()
        assert not at.exception, (page, at.exception[0].value if at.exception else "")
        if page in shows:
            assert shows_planted(at), f"{page} shows none of the planted text: {[e.value for e in at.error]}"
        out += [(page, *f) for f in live_markup(at)]
    assert not out, "live markup:\n" + "\n".join(map(repr, out))


def launched(monkeypatch, tmp_path: Path, path: Path, **env: str) -> AppTest:
    monkeypatch.setenv("ISOSCOPE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("ISOSCOPE_DATA_FILE", str(path))
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    at = AppTest.from_file(APP, default_timeout=600)
    at.run()
    assert not at.exception, at.exception
    return at


FAST = {"pj_projection": "PCA", "cmp_map": "PCA", "atlas_layout": "pca"}


# ---------------------------------------------------------------- the scenarios


def test_the_scanner_finds_live_markup() -> None:
    """The check can fail: raw Markdown in a caption and an anchor in a plotly title are found, escaped ones not."""
    from isoscope.dashboard.text import literal, plot_text

    script = (
        "import streamlit as st, plotly.graph_objects as go\n"
        f"st.caption({mark(1)!r})\n"
        f"st.caption({literal(mark(0))!r})\n"
        f"st.plotly_chart(go.Figure(layout_title_text={mark(2)!r}))\n"
        f"st.plotly_chart(go.Figure(layout_title_text={plot_text(mark(2))!r}))\n"
        f"st.selectbox('pick', [{mark(0)!r}])\n"
    )
    at = AppTest.from_string(script).run()
    found = live_markup(at)
    assert [f[0] for f in found] == ["caption", "plotly_chart"], found


def test_a_corpus_with_markup_in_every_column_kind(tmp_path, monkeypatch) -> None:
    """A corpus file given to ``isoscope app``: texts, a category column and a number column (their names too)
    on every page, coloured by the category wherever a page colours."""
    frame = pd.DataFrame({TEXT: hostile_texts(), CATEGORY: category_values(), NUMBER: np.arange(N, dtype=float)})
    path = tmp_path / "corpus.csv"
    frame.to_csv(path, index=False)
    at = launched(monkeypatch, tmp_path, path, ISOSCOPE_TEXT_COLUMN=TEXT)
    colour = {"pj_color": CATEGORY, "atlas_colour": CATEGORY, "cmp_colour": CATEGORY}
    searched = {"pj_search": "www.bare.invalid", "atlas_search": "Sentence", "nb_query": mark(7)}
    visit(at, ALL_PAGES, {**FAST, **colour, **searched}, TEXT_PAGES)
    # the number column's colouring, and a cluster filter on the Atlas (cluster names are the texts' words)
    visit(at, ("atlas",), {"atlas_colour": NUMBER, "pj_color": NUMBER})
    at.session_state["atlas_clusters"] = at.multiselect(key="atlas_clusters").options[:2]
    visit(at, ("atlas", "projection"), shows=("atlas", "projection"))


def test_a_pairs_file_with_markup(tmp_path, monkeypatch) -> None:
    a, b = hostile_texts(N // 2, "First"), hostile_texts(N // 2, "Second")
    frame = pd.DataFrame({"sentence1": a, "sentence2": b, "score": [float(i % 6) for i in range(N // 2)]})
    path = tmp_path / "pairs.csv"
    frame.to_csv(path, index=False)
    at = launched(monkeypatch, tmp_path, path)
    visit(
        at,
        ("similarity", "calibration", "anisotropy", "neighbours", "atlas"),
        {**FAST, "atlas_search": "First"},  # the Atlas's selection table: the matching texts
        ("similarity", "neighbours", "atlas"),
    )


def test_a_vectors_file_with_markup_in_its_name_and_columns(tmp_path, monkeypatch) -> None:
    """A vectors file whose name, text column, vector column and category column hold markup is the space."""
    from tests.vector_files import write_parquet

    vectors = np.random.default_rng(0).normal(size=(N, 24)).astype(np.float32)
    path = tmp_path / "![v](http:beacon.invalid) <img src=http:img.invalid> [f](http:phish.invalid).parquet"
    write_parquet(
        path,
        vectors,
        hostile_texts(),
        column="emb [e](http://phish.invalid/v)",
        text_column=TEXT,
        extra={CATEGORY: category_values(), NUMBER: np.arange(N, dtype=float)},
    )
    at = launched(
        monkeypatch,
        tmp_path,
        path,
        ISOSCOPE_TEXT_COLUMN=TEXT,
        ISOSCOPE_VECTOR_COLUMN="emb [e](http://phish.invalid/v)",
    )
    assert at.radio(key="space_source").value != "Model"
    colour = {"pj_color": CATEGORY, "atlas_colour": CATEGORY, "cmp_colour": CATEGORY}
    visit(at, SPACE_PAGES, {**FAST, **colour}, TEXT_PAGES)


def test_an_atlas_folder_with_markup_in_its_cluster_names(tmp_path, monkeypatch) -> None:
    """clusters.json names (a folder given with ISOSCOPE_ATLAS_DIR, its ledger fixed up) and category values,
    in the colour caption, the cluster filter and the selection."""
    from isoscope.atlas.folder import LEDGER, file_digest
    from isoscope.atlas.pipeline import AtlasConfig, build_atlas

    out = tmp_path / "atlas"
    texts = hostile_texts()
    vectors = np.random.default_rng(1).normal(size=(N, 16)).astype(np.float32)
    meta = pd.DataFrame({CATEGORY: category_values()})
    build_atlas(None, texts, out, config=AtlasConfig(layout="pca", calibrate="whitening"), meta=meta, vectors=vectors)
    ledger = json.loads((out / LEDGER).read_text())
    for space in ("raw", "cal"):
        rel = f"{space}/clusters.json"
        clusters = json.loads((out / rel).read_text())
        for level in [clusters, *clusters["levels"]]:
            for i, c in enumerate(level["clusters"]):
                c["words"] = [mark(200 + i), mark(201 + i)]
        (out / rel).write_text(json.dumps(clusters))
        for entry in ledger["stages"].values():
            if rel in entry["outputs"]:
                entry["outputs"][rel] = [(out / rel).stat().st_size, file_digest(out / rel)]
    (out / LEDGER).write_text(json.dumps(ledger))
    monkeypatch.setenv("ISOSCOPE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("ISOSCOPE_ATLAS_DIR", str(out))
    at = AppTest.from_file(APP, default_timeout=600)
    at.run()
    at.session_state["atlas_source"] = "Atlas folder"
    visit(at, ("atlas",), {"atlas_colour": "cluster"}, ("atlas",))
    names = at.multiselect(key="atlas_clusters").options
    assert any("phish.invalid" in n or "beacon.invalid" in n for n in names), names  # the planted names are used
    at.session_state["atlas_clusters"] = names[:2]
    visit(at, ("atlas",), {"atlas_colour": CATEGORY}, ("atlas",))


@pytest.mark.parametrize("name", ["![x](http://beacon.invalid/m.png)", "[m](http://phish.invalid/m)"])
def test_a_model_name_with_markup(tmp_path, monkeypatch, name: str) -> None:
    """A model path typed in the sidebar that does not exist: its one-line error shows the name escaped."""
    monkeypatch.setenv("ISOSCOPE_CACHE", str(tmp_path / "cache"))
    at = AppTest.from_file(APP, default_timeout=600)
    at.run()
    at.text_input(key="model_input").set_value(name).run()
    assert not at.exception, at.exception
    assert at.error, "no error for a model that does not exist"
    assert live_markup(at) == []


def test_landscape_results_with_markup(tmp_path, monkeypatch, stored_run) -> None:  # noqa: F811
    """A stored Loss-surfaces experiment (file text: its folder's name, model and task names, the rollback's
    group names) on the Loss surfaces page and as Compare's checkpoint choice."""
    import shutil

    from tests.conftest import private_cache

    monkeypatch.setenv("ISOSCOPE_CACHE", str(private_cache(tmp_path)))
    folder = tmp_path / "landscape" / "run ![r](http:beacon.invalid) <a href=http:anchor.invalid>x"
    shutil.copytree(stored_run, folder, ignore=shutil.ignore_patterns("checkpoints"))
    summary = json.loads((folder / "summary.json").read_text())
    summary.update(model=mark(300), task=mark(301), task2=mark(302))
    (folder / "summary.json").write_text(json.dumps(summary))
    for init in ("pretrained", "scratch"):
        path = folder / init / "results.json"
        results = json.loads(path.read_text())
        for i, row in enumerate(results["rollback"]):
            if row["group"] != "none":  # "none" is theta1 itself
                row["group"] = f"{row['group']} {mark(310 + i)}"
        path.write_text(json.dumps(results))
    at = AppTest.from_file(APP, default_timeout=600)
    at.run()
    visit(at, ("landscape",), shows=("landscape",))
