"""The dashboard's pages, read from the views folder: each page says in its own file where it goes.

A page, ``views/<page>.py``, holds one literal assignment at its top level, read here without running the page:

    PAGE = {"section": "Similarity", "title": "Sentence pairs", "icon": ":material/compare_arrows:", "order": 10,
            "teaches": "Cosine per pair against gold scores (Spearman), ..."}

``section`` is one of ``SECTIONS``; ``order`` places it in its section (then its title); ``teaches`` is its line in
the Home page's table of pages; ``"default": True`` marks the page a bare address opens (Home). ``app.py`` builds
``st.navigation`` from ``pages()`` and the Home page its table from the same entries, so a new page is its own
file (and its figures' module): nothing else lists it. No Streamlit here.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

SECTIONS: tuple[str, ...] = ("Start", "Similarity", "Geometry", "Neighbours", "Model anatomy")  # the sidebar's order
VIEWS = Path(__file__).with_name("views")
FIELDS = {"section": str, "title": str, "icon": str, "order": int, "teaches": str, "default": bool}
REQUIRED = ("section", "title", "icon", "order")


@dataclass(frozen=True)
class PageEntry:
    """One page of the navigation, as its file declares it."""

    path: str  # "views/<page>.py": what st.Page runs, relative to app.py
    section: str
    title: str
    icon: str
    order: int
    teaches: str = ""  # its line in the Home page's table ("" for none)
    default: bool = False


def page_entry(path: Path) -> PageEntry:
    """The ``PAGE`` literal of the page file ``path`` (a ValueError naming the file when it has none or a bad one:
    a page written without its place is a bug, shown when the app starts)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found = [
        node.value
        for node in tree.body
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["PAGE"]
    ]
    if len(found) != 1:
        raise ValueError(f"{path.name}: a page holds one top-level PAGE = {{...}} (dashboard/navigation.py)")
    page = ast.literal_eval(found[0])
    if not isinstance(page, dict) or set(REQUIRED) - set(page) or set(page) - set(FIELDS):
        raise ValueError(f"{path.name}: PAGE needs {', '.join(REQUIRED)} and may hold {', '.join(FIELDS)}")
    wrong = [k for k, v in page.items() if not isinstance(v, FIELDS[k]) or (FIELDS[k] is int and isinstance(v, bool))]
    if wrong or page["section"] not in SECTIONS:
        raise ValueError(f"{path.name}: PAGE's {(wrong or ['section'])[0]} is wrong (sections: {', '.join(SECTIONS)})")
    return PageEntry(f"{path.parent.name}/{path.name}", **page)


@lru_cache(maxsize=4)
def _read(files: tuple[tuple[Path, int], ...]) -> dict[str, list[PageEntry]]:
    entries = sorted((page_entry(path) for path, _ in files), key=lambda p: (p.order, p.title))
    defaults = [p.path for p in entries if p.default]
    if len(defaults) != 1:
        raise ValueError(f"exactly one page is the default (PAGE's default: True), not {defaults}")
    return {section: [p for p in entries if p.section == section] for section in SECTIONS}


def pages(folder: Path = VIEWS) -> dict[str, list[PageEntry]]:
    """Every page of ``folder`` by section (``SECTIONS`` order; a section without pages is left out), each
    section's pages by ``order`` then title. Read again when a file changes (the key is each file's mtime)."""
    files = tuple((p, p.stat().st_mtime_ns) for p in sorted(folder.glob("*.py")) if not p.name.startswith("_"))
    return {section: entries for section, entries in _read(files).items() if entries}


def home_table(folder: Path = VIEWS) -> str:
    """The Home page's table of pages: each page that says what it teaches, in the sidebar's order (Markdown)."""
    rows = [f"| **{p.title}** | {p.teaches} |" for entries in pages(folder).values() for p in entries if p.teaches]
    return "\n".join(["| Page | What it teaches |", "|---|---|", *rows])
