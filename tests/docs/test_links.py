"""The documentation hangs together: every relative link and anchor resolves, every page under docs/ and every
screenshot is reachable from README.md, and every section the README held before it was cut down (issue 36) is
still a heading of a page a reader reaches from it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.docs.documents import DOCS, README, anchors, headings, reachable_from_readme, read, relative_links, slug

# The README's headings before issue 36 moved its detail into docs/ (and its one bold lead-in, "Files you load").
OLD_README_SECTIONS: tuple[str, ...] = (
    "Isoscope",
    "Install and run",
    "Files you load",
    "Teaching a class",
    "Why",
    "The dashboard, page by page",
    "Results on STS-B (default model, measured here)",
    "Geometry: anisotropy, frequency and lexical overlap",
    "Embedding anatomy",
    "Precision and size",
    "Comparing spaces",
    "Loss surfaces: fine-tuning vs training from scratch",
    "Your own embeddings",
    "Command line",
    "In a notebook",
    "Library",
    "Layout",
)
CHECKED = [README, *sorted(DOCS.glob("*.md")), ROOT / "bench" / "RESULTS.md", ROOT / "assets" / "README.md"]


def test_slugs_are_githubs() -> None:
    assert slug("Results on STS-B (default model, measured here)") == "results-on-sts-b-default-model-measured-here"
    assert slug("Geometry: anisotropy, frequency and lexical overlap") == (
        "geometry-anisotropy-frequency-and-lexical-overlap"
    )
    assert slug("Precision & size") == "precision--size"
    assert anchors("# A\n\n```bash\n# not a heading\n```\n\n## A\n") == {"a", "a-1"}


@pytest.mark.parametrize("page", CHECKED, ids=[str(p.relative_to(ROOT)) for p in CHECKED])
def test_every_relative_link_resolves(page: Path) -> None:
    broken = []
    for target, file, anchor in relative_links(page):
        if not file.exists():
            broken.append(f"{target}: no such file")
        elif anchor and (file.suffix != ".md" or anchor not in anchors(read(file))):
            broken.append(f"{target}: no heading #{anchor} in {file.relative_to(ROOT)}")
    assert not broken, broken


def test_every_docs_page_is_reachable_from_the_readme() -> None:
    reachable = set(reachable_from_readme())
    assert not [p.name for p in DOCS.glob("*.md") if p not in reachable]


def test_every_screenshot_is_shown() -> None:
    """docs/screenshots holds what a page shows: a screenshot no page links to is stale or lost."""
    shown = {file for page in reachable_from_readme() for _, file, _ in relative_links(page)}
    assert not [p.name for p in (DOCS / "screenshots").glob("*.png") if p.resolve() not in shown]


def test_every_old_readme_section_is_reachable() -> None:
    found = {h for page in reachable_from_readme() for h in headings(read(page))}
    assert not [h for h in OLD_README_SECTIONS if h not in found]


def test_the_layout_is_described_once() -> None:
    """The repository's layout lives in docs/CONVENTIONS.md; the README and docs/ link to it instead of keeping
    a copy (three copies had drifted apart). A copy names most of core/'s packages as folders."""
    layout = "layout-one-import-root-folders-that-show-the-concepts"
    assert layout in anchors(read(DOCS / "CONVENTIONS.md"))
    targets = {(f, a) for page in reachable_from_readme() for _, f, a in relative_links(page)}
    assert ((DOCS / "CONVENTIONS.md").resolve(), layout) in targets
    packages = [p.parent.name for p in (ROOT / "core").glob("*/__init__.py")]  # encode, calibrate, geometry, ...
    assert len(packages) >= 6, packages
    copies = {
        page.name: named
        for page in [README, *DOCS.glob("*.md")]
        if page.name != "CONVENTIONS.md" and len(named := [n for n in packages if f"`{n}/`" in read(page)]) > 3
    }
    assert not copies, copies


def test_every_command_is_documented() -> None:
    from isoscope.cli import COMMANDS

    cli = read(DOCS / "cli.md")
    assert not [name for name in COMMANDS if f"isoscope {name} " not in cli]
