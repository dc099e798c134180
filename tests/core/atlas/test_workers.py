"""isoscope.atlas.workers: jobs in spawned processes, their progress and their failures; and the atlas's two UMAP
layouts run side by side give the same files as one after the other."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from isoscope.atlas import pipeline
from isoscope.atlas.pipeline import STAGES, AtlasConfig, build_atlas
from isoscope.atlas.synthetic import synthetic_corpus
from isoscope.atlas.workers import run_side_by_side
from isoscope.errors import InputError


def write_pid(path: str, report) -> None:
    report(1, 2)
    Path(path).write_text(str(os.getpid()))
    report(2, 2)


def bad_input(report) -> None:
    raise InputError("k must be at least 2, got 1")


def our_bug(report) -> None:
    raise ZeroDivisionError("division by zero")


def dies(report) -> None:
    os._exit(3)  # no word to the parent: a crash in native code, the OOM killer


def test_jobs_run_in_their_own_processes_and_report_progress(tmp_path):
    seen = []
    seconds = run_side_by_side(
        {"a": (write_pid, (str(tmp_path / "a"),)), "b": (write_pid, (str(tmp_path / "b"),))},
        lambda *args: seen.append(args),
    )
    pids = {int((tmp_path / n).read_text()) for n in "ab"}
    assert len(pids) == 2 and os.getpid() not in pids
    assert sorted(seen) == [("a", 1, 2), ("a", 2, 2), ("b", 1, 2), ("b", 2, 2)]
    assert set(seconds) == {"a", "b"} and all(s > 0 for s in seconds.values())


def test_a_users_mistake_stays_one_and_anything_else_is_our_bug(tmp_path):
    with pytest.raises(InputError, match="k must be at least 2"):
        run_side_by_side({"a": (bad_input, ()), "b": (write_pid, (str(tmp_path / "b"),))})
    with pytest.raises(RuntimeError, match=r"atlas stage a failed.*ZeroDivisionError"):
        run_side_by_side({"a": (our_bug, ())})
    with pytest.raises(RuntimeError, match="atlas stage a: its worker process exited with code 3"):
        run_side_by_side({"a": (dies, ()), "b": (write_pid, (str(tmp_path / "b"),))})


def test_layouts_side_by_side_equal_one_after_the_other(tmp_path, monkeypatch):
    """Both spaces' UMAP layouts in worker processes (the path of atlases from PARALLEL_LAYOUT_ROWS rows) write the
    same bytes as the in-process path: the same seeded umap-learn on the same graph."""
    n = 300
    texts, _ = synthetic_corpus(n, 1)
    vectors = np.random.default_rng(0).standard_normal((n, 16)).astype(np.float32)  # (n, 16)
    vectors[: n // 2] += 3.0  # two blobs
    config = AtlasConfig(layout="umap")
    monkeypatch.setattr(pipeline, "PARALLEL_LAYOUT_ROWS", 10**9)
    alone = build_atlas(None, texts, tmp_path / "alone", config=config, vectors=vectors)
    monkeypatch.setattr(pipeline, "PARALLEL_LAYOUT_ROWS", 0)
    seen: list[tuple[str, int, int]] = []
    together = build_atlas(
        None, texts, tmp_path / "together", config=config, vectors=vectors, progress=lambda *a: seen.append(a)
    )
    assert alone.computed == together.computed == list(STAGES)
    assert {"raw_layout", "cal_layout"} <= set(together.seconds)
    for space in ("raw", "cal"):
        a, b = (tmp_path / f / space / "xy.npy" for f in ("alone", "together"))
        assert a.read_bytes() == b.read_bytes()
        assert (f"{space}_layout", 1, 1) in seen  # its end reported from the worker side
    again = build_atlas(None, texts, tmp_path / "together", config=config, vectors=vectors)
    assert again.computed == [] and again.skipped == list(STAGES)
