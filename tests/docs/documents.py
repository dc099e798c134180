"""The documentation as the tests read it: README.md and the pages in docs/, their fenced blocks, headings
(with GitHub's anchors) and relative links. Plain functions, no fixtures: tests/docs and the tests elsewhere that
check a claim of the documentation (tests/hostile, tests/e2e) import them."""

from __future__ import annotations

import re
import unicodedata
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import ROOT

README = ROOT / "README.md"
DOCS = ROOT / "docs"

FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
HEADING = re.compile(r"^(#{1,6}) +(.+?) *#*$")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^)\s]+)(?: +\"[^\"]*\")?\)")
CODE_SPAN = re.compile(r"`[^`]*`")
SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)


def pages() -> list[Path]:
    """README.md, then every page under docs/ (sorted): the files whose Python the tests run."""
    return [README, *sorted(DOCS.glob("*.md"))]


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def all_text() -> str:
    """README.md and every page under docs/, one string: where a claim may live after it moved."""
    return "\n\n".join(read(p) for p in pages())


def blocks(text: str, language: str) -> list[str]:
    """The bodies of the fenced blocks of ``language`` (```python, ```bash), in order."""
    return [body for lang, body in FENCE.findall(text) if lang == language]


@dataclass(frozen=True)
class Snippet:
    page: Path
    index: int  # its place among the page's Python blocks
    code: str

    @property
    def id(self) -> str:
        """Stable while the page's other blocks move: ``README-0``, ``library-0``, ``models-0``."""
        return f"{self.page.stem}-{self.index}"


def python_snippets() -> list[Snippet]:
    return [Snippet(p, i, code) for p in pages() for i, code in enumerate(blocks(read(p), "python"))]


def prose(text: str) -> str:
    """``text`` without its fenced blocks (their lines blanked, so line numbers stay)."""
    return FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)


def headings(text: str) -> list[str]:
    """The headings' text, in order, outside fenced blocks (a ``# comment`` in a bash block is none)."""
    found = []
    for line in prose(text).splitlines():
        m = HEADING.match(line)
        if m:
            found.append(m.group(2))
    return found


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped (letters, digits, spaces, - and _ kept),
    spaces as hyphens."""
    text = heading.strip().lower()
    kept = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LN")
    return kept.replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every anchor of a page: each heading's slug, a repeated one with -1, -2, ... as GitHub numbers them."""
    seen: dict[str, int] = {}
    out = set()
    for heading in headings(text):
        base = slug(heading)
        n = seen.get(base, 0)
        out.add(base if n == 0 else f"{base}-{n}")
        seen[base] = n + 1
    return out


def section(text: str, heading: str) -> str:
    """The text under ``heading`` up to the next heading of its level or above (fenced blocks included)."""
    lines = text.splitlines(keepends=True)
    plain = prose(text).splitlines()
    start = level = None
    for i, line in enumerate(plain):
        m = HEADING.match(line)
        if not m:
            continue
        if start is None and m.group(2) == heading:
            start, level = i + 1, len(m.group(1))
        elif start is not None and len(m.group(1)) <= level:
            return "".join(lines[start:i])
    if start is None:
        raise LookupError(f"no heading {heading!r}")
    return "".join(lines[start:])


def links(text: str) -> list[str]:
    """The targets of the page's links and images, outside fenced blocks and code spans."""
    return LINK.findall(CODE_SPAN.sub("", prose(text)))


def relative_links(path: Path) -> list[tuple[str, Path, str]]:
    """(target as written, the file it names, its anchor or "") for every link of ``path`` that stays in the
    repository (no scheme: not http:, https:, mailto:)."""
    out = []
    for target in links(read(path)):
        if SCHEME.match(target):
            continue
        file, _, anchor = target.partition("#")
        out.append((target, (path.parent / file).resolve() if file else path, anchor))
    return out


def reachable_from_readme() -> list[Path]:
    """The Markdown files a reader reaches from README.md by following links, README first."""
    found, queue = [README], deque([README])
    while queue:
        for _, file, _ in relative_links(queue.popleft()):
            if file.suffix == ".md" and file.is_file() and ROOT in file.parents and file not in found:
                found.append(file)
                queue.append(file)
    return found
