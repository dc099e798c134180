"""The README's Python snippets run as written (in a fresh interpreter, from another folder, offline).

``ISOSCOPE_README_PYTHON`` runs them with another interpreter: ``make test-fresh`` points it at a new venv that
holds only ``pip install ".[notebook]"`` (and the CPU torch), what a reader of the README has."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

FENCE = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def python_snippets() -> list[str]:
    return FENCE.findall((ROOT / "README.md").read_text(encoding="utf-8"))


def test_the_readme_has_python_snippets() -> None:
    assert python_snippets(), "the README's Library section shows Python"


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(python_snippets())))
def test_python_snippet_runs_as_written(
    index: int, tmp_path: Path, session_cache: Path, request: pytest.FixtureRequest
) -> None:
    code = python_snippets()[index]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "ISOSCOPE_CACHE": str(session_cache)}  # the demo embedded once
    if "stsb_dir" in code:  # skips where STS-B is absent, as its tests do; an installed (not editable) isoscope
        env["ISOSCOPE_STSB_DIR"] = str(request.getfixturevalue("stsb_dir"))  # looks for it beside site-packages
    proc = subprocess.run(
        [os.environ.get("ISOSCOPE_README_PYTHON") or sys.executable, "-c", code],
        cwd=tmp_path,  # from another folder: only the installed package, never the checkout's folders
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, f"README snippet {index} failed:\n{code}\n{proc.stderr[-3000:]}"


def test_the_readme_states_the_demos_sizes() -> None:
    """The README's counts of the shipped demo are the files' (issue 26: it still said 336 texts, 165 pairs)."""
    from isoscope.data import load_corpus, load_pairs
    from isoscope.paths import DEMO_CORPUS, DEMO_PAIRS

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    corpus, pairs = load_corpus(DEMO_CORPUS), load_pairs(DEMO_PAIRS)
    topics, styles = corpus.meta["topic"].nunique(), corpus.meta["source"].nunique()
    assert f"demo corpus ({len(corpus):,} texts over {topics} topics in {styles} styles) and {len(pairs):,}" in text
    assert f"The shipped demo ({len(corpus):,} texts, {len(pairs):,} pairs)" in text
    assert "336 texts" not in text and "165 graded pairs" not in text
