"""Atlas stages side by side in child processes: the two spaces' layouts of a big atlas.

errors = run_side_by_side({"raw_layout": (write_layout, args), "cal_layout": (write_layout, args)}, progress)

A seeded UMAP runs on one core (umap-learn's reproducibility rule: a ``random_state`` makes it single-threaded),
and its numba kernels hold the GIL, so the raw and the calibrated layout of one atlas only share the two cores
when each runs in its own process: the layout stage's wall time is the longer of the two instead of their sum
(bench/atlas.py), and each layout is the same as when run alone (same inputs, same seed).

Children are started with ``spawn`` (a fork would copy the parent's OpenMP and ONNX Runtime thread pools in an
undefined state). Each job is a module-level function taking picklable arguments and a ``report(done, total)``;
its progress and its failure come back through one queue. A job that raises ``InputError`` is the user's
mistake and is raised again as one; anything else, or a child that dies without a word, is our bug and raised
as ``RuntimeError`` naming the stage.
"""

from __future__ import annotations

import logging
import multiprocessing as mp
import queue as queue_mod
import time
from collections.abc import Callable
from typing import Any

from isoscope.errors import InputError

PARALLEL_LAYOUT_ROWS = 50_000  # from here the two spaces' UMAP layouts run side by side (one worker process each)

log = logging.getLogger(__name__)

Job = tuple[Callable[..., None], tuple[Any, ...]]  # (module-level function, its arguments before ``report``)
ProgressFn = Callable[[str, int, int], None]  # (stage, done, total)
POLL_SECONDS = 0.5


def _child(name: str, fn: Callable[..., None], args: tuple[Any, ...], out: mp.Queue) -> None:
    """Run one job in the child; its progress, then ``done`` or its error, go to ``out``."""
    try:
        fn(*args, lambda done, total: out.put(("progress", name, done, total)))
    except InputError as exc:
        out.put(("input_error", name, str(exc), ""))
    except Exception as exc:  # the parent raises it as our bug, naming the stage
        out.put(("error", name, f"{type(exc).__name__}: {exc}", ""))
    else:
        out.put(("done", name, 0, 0))


def run_side_by_side(jobs: dict[str, Job], progress: ProgressFn | None = None) -> dict[str, float]:
    """Run every job of ``jobs`` (stage name -> job) at once, one child process each, and wait for all of them;
    returns the seconds from the start to each job's end.

    Progress of each is passed to ``progress(stage, done, total)``. When one fails the others are stopped and
    its error is raised (``InputError`` as such, any other as ``RuntimeError``)."""
    start = time.perf_counter()
    seconds: dict[str, float] = {}
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    procs = {
        name: ctx.Process(target=_child, args=(name, fn, args, out), daemon=True) for name, (fn, args) in jobs.items()
    }
    for p in procs.values():
        p.start()
    done: set[str] = set()
    silent: set[str] = set()  # children seen exited before their last word was read
    try:
        while len(done) < len(procs):
            try:
                kind, name, a, b = out.get(timeout=POLL_SECONDS)
            except queue_mod.Empty:
                silent = _exited_silently(procs, done, silent)
                continue
            if kind == "progress":
                if progress is not None:
                    progress(name, a, b)
            elif kind == "done":
                done.add(name)
                seconds[name] = time.perf_counter() - start
            elif kind == "input_error":
                raise InputError(a)
            else:
                raise RuntimeError(f"atlas stage {name} failed in its worker process: {a}")
    finally:
        for p in procs.values():
            if p.is_alive():
                p.terminate()
            p.join()
        out.close()
    return seconds


def _exited_silently(procs: dict[str, mp.process.BaseProcess], done: set[str], seen: set[str]) -> set[str]:
    """Children that have exited without saying ``done``. One seen so at two polls in a row (what it wrote before
    exiting is read at the poll between) was killed, ran out of memory or crashed in native code: our bug."""
    now = {name for name, p in procs.items() if name not in done and p.exitcode is not None}
    for name in now & seen:
        raise RuntimeError(f"atlas stage {name}: its worker process exited with code {procs[name].exitcode}")
    return now
