"""Shared fixtures: the real embedded model loaded once per session, STS-B location, a private cache."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
if os.environ.get("PYTEST_XDIST_WORKER"):  # `make test` runs 2 workers on 2 cores: one BLAS/torch thread each
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("NUMBA_NUM_THREADS", "1")  # UMAP's numba; isoscope.threads keeps torch's count anyway

ROOT = Path(__file__).resolve().parents[1]
# tests/remote start a real embeddings server from its own venv: only `make test-remote` sets ISOSCOPE_TEST_REMOTE
collect_ignore = [] if os.environ.get("ISOSCOPE_TEST_REMOTE") else ["remote"]
# tests/wheel drive a venv holding only the wheel: `make wheel-gate` (part of `make test`) builds it and sets the variable
collect_ignore += [] if os.environ.get("ISOSCOPE_WHEEL_VENV") else ["wheel"]


@pytest.fixture(scope="session", autouse=True)
def session_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One ISOSCOPE_CACHE for the whole test session, shared by the xdist workers, the in-process app and the
    CLI: each distinct embedding (model, pooling, texts) and fitted calibrator is computed once per session,
    never read from or written to the user's own cache. ``ISOSCOPE_TEST_CACHE`` names a folder to keep across
    sessions instead. A test that needs an empty cache asks for ``tmp_cache`` (or sets its own folder)."""
    given = os.environ.get("ISOSCOPE_TEST_CACHE")
    base = tmp_path_factory.getbasetemp()
    root = Path(given) if given else (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "cache"
    root.mkdir(parents=True, exist_ok=True)
    os.environ["ISOSCOPE_CACHE"] = str(root)
    return root


def private_cache(root: Path) -> Path:
    """A new ISOSCOPE_CACHE folder at ``root`` (no atlas, landscape run or calibrator in it) whose embeddings are
    the session's: a test that needs an empty cache for what it checks still embeds nothing twice."""
    shared = Path(os.environ["ISOSCOPE_CACHE"]) / "embeddings"
    shared.mkdir(parents=True, exist_ok=True)
    root.mkdir(parents=True, exist_ok=True)
    (root / "embeddings").symlink_to(shared, target_is_directory=True)
    return root


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def stsb_dir() -> Path:
    from isoscope.paths import stsb_dir as folder

    if not (folder() / "stsb-en-test.csv").exists():
        pytest.skip(f"STS-B not found at {folder()}")
    return folder()


@pytest.fixture(scope="session")
def encoder():
    """The embedded all-MiniLM-L6-v2, loaded once for the whole session."""
    from isoscope.encode.models import load_encoder

    return load_encoder()


@pytest.fixture(scope="session")
def chromium_executable() -> str:
    """Debian's chromium for the browser tests (tests/e2e, tests/lab); skipped without it, failed under CI=true."""
    from tests.chromium import chromium_path, unavailable

    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        unavailable("the playwright Python package is not installed")
    path = chromium_path()
    if path is None:
        where = os.environ.get("ISOSCOPE_CHROMIUM") or "/usr/bin/chromium or on PATH"
        unavailable(f"chromium was not found ({where})")
    return str(path)


@pytest.fixture(scope="session")
def browser(chromium_executable: str):
    """One headless chromium for a test process, shared by tests/e2e and tests/lab: Playwright's sync API runs one
    instance per thread (a second ``sync_playwright()`` in the same worker fails, "using Playwright Sync API inside
    the asyncio loop", which is what the lab test met when xdist gave it the browser tests' worker)."""
    from playwright.sync_api import sync_playwright

    from tests.chromium import CHROMIUM_ARGS, keep_children_at_our_priority

    keep_children_at_our_priority()
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium_executable, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture()
def tmp_cache(tmp_path, monkeypatch):
    """An ArrayCache in a temporary folder (and ISOSCOPE_CACHE pointed there)."""
    from isoscope.cache import ArrayCache

    monkeypatch.setenv("ISOSCOPE_CACHE", str(tmp_path / "cache"))
    return ArrayCache(tmp_path / "cache" / "embeddings")


@pytest.fixture()
def cli_main(encoder):
    """``isoscope.cli.main`` on the session's real encoder (handed to it, not reloaded per call), on the session's
    cache (``session_cache``; with ``tmp_cache`` too, a private one)."""
    import functools

    from isoscope.cli import main

    return functools.partial(main, encoder=encoder)


def pytest_terminal_summary(terminalreporter) -> None:
    """Why each rerun happened (pytest-rerunfailures lists the name only): the error of each failed try."""
    reruns = terminalreporter.stats.get("rerun", [])
    if reruns:
        terminalreporter.section("why the reruns happened")
        for report in reruns:
            crash = getattr(report.longrepr, "reprcrash", None)
            why = crash.message if crash is not None else str(report.longrepr).strip()
            terminalreporter.write_line(f"{report.nodeid}: {' '.join(why.split())[:400]}")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the heavy tier (tests/heavy.py: ``make test`` leaves it out, ``make test-heavy`` runs it). The browser
    tests stay last: put first, their server computed every page cold beside the other worker (two reruns on
    timeouts, 1,121 s instead of less), and Playwright's event loop stayed in that worker's main thread."""
    from tests.heavy import HEAVY

    heavy = set(HEAVY)
    for item in items:
        if item.nodeid in heavy:
            item.add_marker(pytest.mark.heavy)
