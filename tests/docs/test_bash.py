"""Every ```bash block of README.md and docs/*.md runs as written from an empty folder (issue 50; how, and which
blocks are not run and why: tests/docs/shell.py), with the ``isoscope`` of the reader's install: this checkout's
``.venv``, or the interpreter ``ISOSCOPE_README_PYTHON`` names (``make test-fresh``: a venv of the wheel alone).
The README's run in every ``make test`` too, in the wheel gate's venv (tests/wheel)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs.documents import FENCE, pages, read
from tests.docs.shell import NOT_RUN, PYTHON_FIRST, bash_blocks, reader_path, run_page, runnable_pages
from tests.docs.test_readme import reader_env, reader_python


def context(block_id: str) -> str:
    """A bash block with the text before it back to the previous fenced block: what the reader sees with it."""
    (block,) = [b for b in bash_blocks() if b.id == block_id]
    text = read(block.page)
    fences = [m for m in FENCE.finditer(text)]
    bash = [m for m in fences if m.group(1) == "bash"]
    m = bash[block.index]
    before = [f.end() for f in fences if f.end() <= m.start()]
    return text[(before[-1] if before else 0) : m.end()]


def test_every_block_not_run_says_why_in_the_page() -> None:
    """A block the tests cannot run (a network, a GPU, a cluster, a checkout) says so where the reader sees it."""
    ids = {b.id for b in bash_blocks()}
    assert set(NOT_RUN) <= ids, set(NOT_RUN) - ids  # no stale entry
    for block_id, (reason, words) in NOT_RUN.items():
        assert words in context(block_id), f"{block_id} is not run ({reason}), but its page does not say {words!r}"


def test_the_runnable_pages() -> None:
    """The README's blocks, the command line's demo block and the worked example of models.md run; every page
    with a bash block is either run or has each of its blocks listed in NOT_RUN."""
    assert [p.stem for p in runnable_pages()] == ["README", "cli", "models"]
    assert set(PYTHON_FIRST) <= {p.stem for p in pages()}


@pytest.mark.slow
@pytest.mark.parametrize("page", runnable_pages(), ids=lambda p: p.stem)
def test_bash_blocks_run_as_written(
    page: Path, tmp_path: Path, session_cache: Path, request: pytest.FixtureRequest
) -> None:
    texts = [b.code for b in bash_blocks(page) if b.id not in NOT_RUN] + [read(page)] * (page.stem in PYTHON_FIRST)
    stsb = request.getfixturevalue("stsb_dir") if any("stsb" in t for t in texts) else None  # skipped without it
    env = reader_path(Path(reader_python()).parent, reader_env(session_cache, tmp_path / "home", stsb))
    (tmp_path / "work").mkdir()
    assert run_page(page, tmp_path / "work", env)
