"""Helpers of the ray engine's tests: the files a build's ledger records, and a killer of the first Ray worker seen
running a given task."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path


def ledger_files(folder: Path) -> dict[str, str]:
    """Every output file the folder's ledger records, with its SHA-256."""
    stages = json.loads((folder / "ledger.json").read_text())["stages"]
    return {rel: digest for entry in stages.values() for rel, (_, digest) in entry["outputs"].items()}


class WorkerKiller:
    """SIGKILLs the first Ray worker process seen running the task ``task`` (its process title is
    ``ray::<task>``), polling from a thread once ``start()`` is called; ``killed`` holds its pid."""

    def __init__(self, task: str) -> None:
        self.title = f"ray::{task}"
        self.killed: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._hunt, daemon=True)

    def _hunt(self) -> None:
        import psutil

        while not self._stop.is_set() and not self.killed:
            for proc in psutil.process_iter(["pid", "cmdline"]):
                if (proc.info["cmdline"] or [""])[0].startswith(self.title):
                    os.kill(proc.info["pid"], signal.SIGKILL)
                    self.killed.append(proc.info["pid"])
                    break
            time.sleep(0.005)

    def start(self) -> None:
        """Start hunting (once: later calls do nothing)."""
        if self._thread.ident is None and not self._stop.is_set():
            self._thread.start()

    @contextlib.contextmanager
    def armed(self) -> Iterator[WorkerKiller]:
        try:
            yield self
        finally:
            self._stop.set()


def layout_trust(vectors, root: Path, rows) -> dict[str, float]:
    """sklearn's trustworthiness (15 neighbours, cosine) of the raw layouts of ``root``/ray and ``root``/local on
    the rows ``rows`` of ``vectors``."""
    from sklearn.manifold import trustworthiness

    from isoscope.atlas.pipeline import load_atlas

    return {
        name: trustworthiness(
            vectors[rows], load_atlas(root / name).spaces["raw"].xy[rows], n_neighbors=15, metric="cosine"
        )
        for name in ("ray", "local")
    }
