"""Debian's chromium for the browser tests and the browser benchmarks (tests/e2e, tests/lab, bench/): where it is,
the flags it runs with, its priority, what a test does without it, and a free loopback port for the servers it
visits. Plain functions: the fixtures that use them are in tests/conftest.py (``chromium_executable``,
``browser``)."""

from __future__ import annotations

import os
import shutil
import socket
import sys
from pathlib import Path

import pytest

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


def unavailable(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI=true and {reason}; run `make browser` (scripts/ensure_browser.sh)", pytrace=False)
    pytest.skip(f"{reason}; run `make browser` to install Debian chromium")


def chromium_path() -> str | None:
    explicit = os.environ.get("ISOSCOPE_CHROMIUM")
    candidates = (
        [explicit] if explicit else ["/usr/bin/chromium", shutil.which("chromium"), shutil.which("chromium-browser")]
    )
    for c in candidates:
        if c and Path(c).is_file() and os.access(c, os.X_OK):
            return c
    return None


PR_CAPBSET_DROP, CAP_SYS_NICE = 24, 23  # <linux/prctl.h>, <linux/capability.h>


def keep_children_at_our_priority() -> None:
    """Stop the processes we start from raising their own priority (Linux, as root).

    Chromium gives its GPU and renderer processes nice -8 when it may (root has CAP_SYS_NICE), which weighs
    about 6x against the second pytest worker at nice 0 (measured under `make test`: the browser tests'
    worker 551 -> 337 s, the suite 1005 -> 816 s once this was dropped). Dropping CAP_SYS_NICE from this
    process's bounding set removes it from everything it executes afterwards (the Playwright driver and
    chromium); this process keeps its own. Not root, or not Linux: nothing to do (chromium cannot renice
    itself there).
    """
    if sys.platform != "linux" or os.geteuid() != 0:
        return
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_CAPBSET_DROP, CAP_SYS_NICE, 0, 0, 0)  # best effort: without CAP_SETPCAP it fails, harmlessly


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
