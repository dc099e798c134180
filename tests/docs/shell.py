"""The ```bash blocks of README.md and docs/*.md, run as written (issue 50): a page's blocks in order, in one empty
folder, by bash with ``set -euo pipefail``, as a reader who pasted them would, with the ``isoscope`` of the reader's
install first on PATH (the wheel gate's venv, ``make test-fresh``'s, or this checkout's ``.venv``). Two things
differ from a terminal, both said here: ``isoscope app ...`` gets ``--dry-run`` (it prints the server's command
line instead of serving until stopped), and a block whose command needs what the tests lack (a network, a GPU, a
Ray cluster, a checkout) is not run: it is listed in NOT_RUN with its reason and the words of the page that say so.

Plain functions, no fixtures: tests/docs/test_bash.py runs every page, tests/wheel runs the README's in the wheel
gate."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.docs.documents import blocks, pages, read

# the block id (page stem, "bash", its place among the page's bash blocks) -> (why it is not run, the words of the
# block or of the paragraph before it that tell the reader so)
NOT_RUN: dict[str, tuple[str, str]] = {
    "README-bash-0": ("PyTorch's CPU index (a network) and a checkout or wheel to install", "download.pytorch.org"),
    "README-bash-1": ("make targets of a checkout (`make test` runs these very tests)", "From a checkout"),
    "development-bash-0": ("make targets of a checkout (`make test` runs these very tests)", "From a checkout"),
    "cli-bash-1": ("STS-B and models downloaded, an embeddings endpoint: a network", "a network"),
    "cli-bash-2": ("a GPU and a Ray cluster", "a GPU"),
    "cli-bash-3": ("a Ray cluster of several machines", "ray start --head"),
    "cli-bash-4": ("placeholders for a model B and files of your own", "placeholders"),
    "classroom-bash-0": ("a model folder downloaded from the Hub (a network)", "downloaded"),
    "results-bash-0": ("STS-B beside a checkout, an hour of work (make docs-numbers runs it)", "../shared/data/stsb"),
    "results-bash-1": ("STS-B beside a checkout, minutes of work (make docs-numbers runs it)", "../shared/data/stsb"),
    "results-bash-2": ("STS-B beside a checkout, 45 minutes (make docs-numbers runs it)", "../shared/data/stsb"),
    "results-bash-3": ("STS-B beside a checkout, minutes of work (make docs-numbers runs it)", "../shared/data/stsb"),
    "results-bash-4": ("a checkout's script and STS-B beside it, minutes of work", "scripts/stsb_retrieval.py"),
    "results-bash-5": ("STS-B (a network) and tens of minutes of training", "--task stsb"),
    "results-bash-6": ("mpnet's PyPI pieces, isotrieve's venv and an hour of embedding", "the tests do not run them"),
}
# a page's Python blocks a bash block reads the output of (models.md's writes cls.parquet), run before it
PYTHON_FIRST: dict[str, tuple[int, ...]] = {"models": (0,)}

# `isoscope app` serves until stopped: in the blocks it prints the server's command line instead
APP_DRY_RUN = (
    'isoscope() { if [ "${1-}" = app ]; then command isoscope "$@" --dry-run; else command isoscope "$@"; fi; }'
)


@dataclass(frozen=True)
class BashBlock:
    page: Path
    index: int  # its place among the page's bash blocks
    code: str

    @property
    def id(self) -> str:
        return f"{self.page.stem}-bash-{self.index}"


def bash_blocks(page: Path | None = None) -> list[BashBlock]:
    return [
        BashBlock(p, i, code) for p in pages() if page in (None, p) for i, code in enumerate(blocks(read(p), "bash"))
    ]


def runnable_pages() -> list[Path]:
    """The pages with a bash block that runs."""
    return sorted({b.page for b in bash_blocks() if b.id not in NOT_RUN}, key=lambda p: (p.stem != "README", p.stem))


def reader_path(bin_dir: Path, env: dict[str, str]) -> dict[str, str]:
    """``env`` with ``bin_dir`` (the reader's install: its ``isoscope``, ``python``) first on PATH."""
    return {**env, "PATH": os.pathsep.join([str(bin_dir), env.get("PATH", os.defpath)])}


def run_page(page: Path, cwd: Path, env: dict[str, str], *, timeout: float = 3600) -> list[str]:
    """Run ``page``'s bash blocks that are not in NOT_RUN, in order, in ``cwd`` (after the Python blocks listed in
    PYTHON_FIRST, with the ``python`` on PATH); returns the blocks' ids. Fails on a block that exits non-zero or
    prints a traceback, with its output."""
    from tests.docs.documents import python_snippets

    for snippet in python_snippets():
        if snippet.page == page and snippet.index in PYTHON_FIRST.get(page.stem, ()):
            _check(snippet.id, ["python", "-c", snippet.code], cwd, env, timeout)
    ran = []
    for block in bash_blocks(page):
        if block.id not in NOT_RUN:
            script = f"set -euo pipefail\n{APP_DRY_RUN}\n{block.code}"
            _check(block.id, ["bash", "-c", script], cwd, env, timeout)
            ran.append(block.id)
    return ran


def _check(what: str, argv: list[str], cwd: Path, env: dict[str, str], timeout: float) -> None:
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    said = f"{what} failed (exit status {proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    assert proc.returncode == 0 and "Traceback (most recent call last)" not in proc.stderr, said
