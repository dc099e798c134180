"""The README's and docs/' code runs as written, and what they state about the shipped demo is the files'.

Every ```python block of README.md and of docs/*.md runs in a fresh interpreter as a user runs it: from another
folder, offline, with no ``ISOSCOPE_*`` variable, STS-B where ``isoscope data stsb`` puts it (``Snippet.id`` names
it by page: ``README-0``, ``library-0``). The README's quickstarts, like every bash block, run as written from an
empty folder in tests/docs/test_bash.py.

``ISOSCOPE_README_PYTHON`` runs them with another interpreter: ``make test-fresh`` points it at a new venv that
holds only ``pip install ".[notebook]"`` (and the CPU torch), what a reader of the README has."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.documents import README, all_text, blocks, python_snippets, read, section
from tests.heavy import HEAVY

SNIPPETS = {s.id: s for s in python_snippets()}
CLI_QUICKSTART = "Quickstart: the command line"
DASHBOARD_QUICKSTART = "Quickstart: the dashboard"
README_LIMIT_BYTES = 15_000  # issue 36: a README a newcomer reads in five minutes


def reader_python() -> str:
    return os.environ.get("ISOSCOPE_README_PYTHON") or sys.executable


def reader_env(session_cache: Path, home: Path, stsb: Path | None = None) -> dict[str, str]:
    """The environment of a reader: no ``ISOSCOPE_*`` variable, ``home`` as HOME, whose ``~/.cache/isoscope`` is
    the session's cache (the demo embedded once); ``stsb``: STS-B where ``isoscope data stsb`` puts it
    (``~/.cache/isoscope/data/stsb``, a link to the checkout's copy: the tests have no network)."""
    cache = home / ".cache" / "isoscope"
    if not cache.exists():
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.symlink_to(session_cache, target_is_directory=True)
    if stsb is not None and not (cache / "data" / "stsb").exists():
        (cache / "data").mkdir(exist_ok=True)
        (cache / "data" / "stsb").symlink_to(stsb, target_is_directory=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ISOSCOPE_")}
    return {**env, "HF_HUB_OFFLINE": "1", "HOME": str(home)}


def commands(text: str, heading: str) -> list[list[str]]:
    """The ``isoscope ...`` lines of the first bash block under ``heading``, split as a shell would (comments off)."""
    (block, *_) = blocks(section(text, heading), "bash")
    lines = [shlex.split(line, comments=True) for line in block.splitlines()]
    return [argv for argv in lines if argv and argv[0] == "isoscope"]


def test_the_readme_and_docs_have_python_snippets() -> None:
    pages = {s.page.name for s in SNIPPETS.values()}
    assert "README.md" in pages and "library.md" in pages, pages


def test_the_readme_is_short() -> None:
    size = README.stat().st_size
    assert size < README_LIMIT_BYTES, f"README.md is {size:,} bytes: move detail into docs/"


@pytest.mark.slow
@pytest.mark.parametrize("snippet_id", list(SNIPPETS))
def test_python_snippet_runs_as_written(
    snippet_id: str, tmp_path: Path, session_cache: Path, request: pytest.FixtureRequest
) -> None:
    code = SNIPPETS[snippet_id].code
    stsb = request.getfixturevalue("stsb_dir") if "stsb" in code else None  # skipped where STS-B is absent
    env = reader_env(session_cache, tmp_path / "home", stsb)  # as a user: no ISOSCOPE_* variable, no ../shared
    (tmp_path / "work").mkdir()
    proc = subprocess.run(
        [reader_python(), "-c", code],
        cwd=tmp_path / "work",  # from another folder: only the installed package, never the checkout's folders
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, f"snippet {snippet_id} failed:\n{code}\n{proc.stderr[-3000:]}"


def test_the_quickstarts_show_commands() -> None:
    cli, app = commands(read(README), CLI_QUICKSTART), commands(read(README), DASHBOARD_QUICKSTART)
    assert len(cli) >= 3 and all(argv[1] != "app" for argv in cli), cli
    assert sum(argv[1] == "app" for argv in app) >= 3, app  # and what they open: the demo's files, an atlas
    assert cli[0][1:] == ["data", "demo"], cli  # from any folder after `pip install`: the demo's files first


def test_the_docs_state_the_demos_sizes() -> None:
    """The counts of the shipped demo are the files' (issue 26: the README still said 336 texts, 165 pairs)."""
    from isoscope.data import load_corpus, load_pairs
    from isoscope.paths import DEMO_CORPUS, DEMO_PAIRS

    text = all_text()
    corpus, pairs = load_corpus(DEMO_CORPUS), load_pairs(DEMO_PAIRS)
    topics, styles = corpus.meta["topic"].nunique(), corpus.meta["source"].nunique()
    assert f"demo corpus ({len(corpus):,} texts over {topics} topics in {styles} styles) and {len(pairs):,}" in text
    assert f"The shipped demo ({len(corpus):,} texts, {len(pairs):,} pairs)" in text
    assert "336 texts" not in text and "165 graded pairs" not in text


def test_the_docs_count_the_heavy_tier() -> None:
    """docs/development.md says how many tests `make test` leaves out: as many as tests/heavy.py lists."""
    said = re.search(r"the heavy tier listed in `tests/heavy.py`: (\d+)\s+tests", all_text())
    assert said and int(said.group(1)) == len(HEAVY), (said and said.group(1), len(HEAVY))


def test_the_heavy_tier_names_snippets_that_exist() -> None:
    """tests/test_heavy_list.py checks the function; the parameters are the snippets' ids, checked here, so a
    renamed page cannot move its snippet back into the gate unnoticed."""
    prefix = f"tests/docs/{Path(__file__).name}::test_python_snippet_runs_as_written["
    listed = [entry[len(prefix) : -1] for entry in HEAVY if entry.startswith(prefix)]
    assert listed and not set(listed) - set(SNIPPETS), (listed, list(SNIPPETS))


def test_the_readme_help_comment_names_every_command() -> None:
    """The comment on `isoscope --help` (and its continuation lines) lists every command of the COMMANDS registry
    (issue 41: it left out `report`)."""
    from isoscope.cli import COMMANDS

    lines = read(README).splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("isoscope --help"))
    comment = [lines[start].split("#", 1)[1]]
    for line in lines[start + 1 :]:
        if not (line.startswith(" ") and line.strip().startswith("#")):
            break
        comment.append(line.strip()[1:])
    words = set(re.findall(r"[a-z]+", " ".join(comment).split("(")[0]))  # the list, before the aside
    assert set(COMMANDS) <= words, sorted(set(COMMANDS) - words)
