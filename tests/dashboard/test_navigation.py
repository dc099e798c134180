"""dashboard/navigation.py: the pages are read from the views folder, each placed by its own ``PAGE``; the router
and the Home page's table read them, so a new page is its own file."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from isoscope.dashboard import navigation
from tests.dashboard.conftest import APP

# the navigation as app.py listed it by hand before the pages placed themselves: section -> (file, title, icon)
BEFORE = {
    "Start": [("home", "Home", ":material/home:")],
    "Similarity": [
        ("similarity", "Sentence pairs", ":material/compare_arrows:"),
        ("calibration", "Calibration", ":material/tune:"),
        ("retrieval", "Retrieval", ":material/search:"),
    ],
    "Geometry": [
        ("anisotropy", "Anisotropy", ":material/scatter_plot:"),
        ("frequency", "Frequency bias", ":material/bar_chart:"),
        ("overlap", "Lexical overlap", ":material/join_inner:"),
        ("sweep", "Precision & size", ":material/compress:"),
    ],
    "Neighbours": [
        ("neighbours", "Neighbours", ":material/hub:"),
        ("projection", "Projection map", ":material/map:"),
        ("atlas", "Atlas", ":material/travel_explore:"),
        ("compare", "Compare spaces", ":material/difference:"),
        ("migration", "Migration", ":material/swap_horiz:"),
    ],
    "Model anatomy": [
        ("pooling", "Pooling explorer", ":material/layers:"),
        ("anatomy", "Embedding anatomy", ":material/grid_on:"),
        ("landscape", "Loss surfaces", ":material/landscape:"),
    ],
}
NEW_PAGE = '''"""A page written in the test."""

import streamlit as st

PAGE = {"section": "Geometry", "title": "Norms", "icon": ":material/straighten:", "order": 25,
        "teaches": "How long the vectors are."}

st.title("Norms")
'''


def test_the_pages_are_the_ones_listed_before() -> None:
    got = {s: [(Path(p.path).stem, p.title, p.icon) for p in entries] for s, entries in navigation.pages().items()}
    assert got == BEFORE
    (home,) = [p for entries in navigation.pages().values() for p in entries if p.default]
    assert home.path == "views/home.py"
    table = navigation.home_table().splitlines()
    assert table[:2] == ["| Page | What it teaches |", "|---|---|"] and len(table) == 2 + 15  # every page but Home
    assert table[2].startswith("| **Sentence pairs** | Cosine per pair") and table[-1].startswith("| **Loss surfaces**")


def test_a_page_file_is_a_page(tmp_path: Path) -> None:
    """A file dropped into the views folder with its PAGE is in the navigation at its place and on Home."""
    views = tmp_path / "views"
    shutil.copytree(navigation.VIEWS, views)
    (views / "norms.py").write_text(NEW_PAGE)
    geometry = [p.title for p in navigation.pages(views)["Geometry"]]
    assert geometry == ["Anisotropy", "Frequency bias", "Norms", "Lexical overlap", "Precision & size"]
    assert navigation.pages(views)["Geometry"][2].path == "views/norms.py"
    lines = navigation.home_table(views).splitlines()
    assert lines.index("| **Norms** | How long the vectors are. |") == lines.index("| **Frequency bias** | "
                                                                                   + _teaches("frequency")) + 1  # fmt: skip


def _teaches(page: str) -> str:
    return navigation.page_entry(navigation.VIEWS / f"{page}.py").teaches + " |"


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ('import streamlit as st\nst.title("x")\n', "one top-level PAGE"),
        ('PAGE = {"section": "Elsewhere", "title": "x", "icon": "", "order": 1}\n', "section is wrong"),
        ('PAGE = {"section": "Geometry", "title": "x", "icon": ""}\n', "PAGE needs section, title, icon, order"),
        ('PAGE = {"section": "Geometry", "title": "x", "icon": "", "order": "1"}\n', "order is wrong"),
        ('PAGE = {"section": "Geometry", "title": "x", "icon": "", "order": 1, "colour": "red"}\n', "may hold"),
    ],
)
def test_a_page_without_its_place_is_refused_by_name(tmp_path: Path, text: str, fragment: str) -> None:
    views = tmp_path / "views"
    shutil.copytree(navigation.VIEWS, views)
    (views / "lost.py").write_text(text)
    with pytest.raises(ValueError, match=fragment) as info:
        navigation.pages(views)
    assert str(info.value).startswith("lost.py")


def test_the_router_and_home_read_the_pages() -> None:
    at = AppTest.from_file(APP, default_timeout=300).run()
    assert not at.exception, at.exception
    assert any(m.value.startswith("| Page | What it teaches |") for m in at.markdown)
    for entries in navigation.pages().values():
        for page in entries:
            assert page.path.startswith("views/")
    at.switch_page("views/overlap.py").run()  # a page by the path its entry gives
    assert not at.exception and at.title[0].value == "Lexical overlap"
