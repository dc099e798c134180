"""A flood of wrong access codes against a classroom server, and what it costs a student already in (issue 28).

Before the guard, the 20-guess lock was per session: 50 reconnecting sessions made 24-34 guesses a second,
and an admitted student's Home page went from 0.06 s to 2 s. Now guesses are throttled per client address
and for the whole server (``isoscope.dashboard.classroom.guard``), before Streamlit runs the code form.

Starts ``isoscope app --classroom`` on a fresh cache folder, admits one student, then measures side by side
in one run:

1. **quiet**: the student's Home page (a cached page) viewed ``--views`` times, nobody else connected;
2. **flood**: the same views while ``--attackers`` sessions from this address send wrong codes as fast as
   the server answers them, reconnecting whenever the server closes them (a new session buys nothing).

Reported: ``home_median_seconds_quiet`` / ``_flood`` and their ``flood_over_quiet`` ratio, the wrong codes
the server answered per second during the flood (``guesses_answered_per_second``, after the per-address
burst of ``GUESSES_PER_CLIENT[0]``), how many times attackers were disconnected and reconnected, and the
server's peak RSS.

Usage::

    .venv/bin/python bench/classroom_flood.py --quick   # 50 attackers, 20 s of flood
    .venv/bin/python bench/classroom_flood.py           # 50 attackers, 120 s

The last stdout line is one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from classroom import Session, _free_port, _peak_rss_mib, _server_pid, start_server

WRONG = "NOT-THE-CODE-28"
NOT_THE_CODE = "That is not the access code."


async def _home_views(session: Session, views: int) -> list[float]:
    times = []
    for _ in range(views):
        run = await session.run("Home")
        if run.errors:
            raise RuntimeError(f"the student's Home page failed: {run.errors}")
        times.append(run.seconds)
    return times


async def _attacker(port: int, stop: asyncio.Event, stats: dict[str, list[float] | int]) -> None:
    """Wrong codes as fast as the server answers, reconnecting whenever it closes the connection."""
    from streamlit.proto.WidgetStates_pb2 import WidgetState

    while not stop.is_set():
        session = Session(port)
        try:
            await session.connect()
            gate = await session.run()
            text = next(i for i, (t, _) in gate.widgets.items() if t == "text_input" and "classroom_code" in i)
            submit = next(i for i, (t, p) in gate.widgets.items() if t == "button" and p.is_form_submitter)
            while not stop.is_set():
                press = [WidgetState(id=text, string_value=WRONG), WidgetState(id=submit, trigger_value=True)]
                run = await session.run(widget_states=press)
                if any(NOT_THE_CODE in e for e in run.errors):
                    stats["answered"].append(time.monotonic())
        except Exception:  # closed by the server (over its budget) or by us: reconnect
            stats["reconnects"] += 1
        finally:
            try:
                await session.close()
            except Exception:
                pass


async def bench(port: int, pid: int, attackers: int, flood_seconds: float, views: int) -> dict:
    student = Session(port)
    await student.connect()
    admitted = await student.enter_code()
    if admitted.errors:
        raise RuntimeError(f"the student was not admitted: {admitted.errors}")
    await _home_views(student, 3)  # warm: Home is cached after its first visit
    quiet = await _home_views(student, views)

    stop = asyncio.Event()
    stats: dict = {"answered": [], "reconnects": 0}
    tasks = [asyncio.create_task(_attacker(port, stop, stats)) for _ in range(attackers)]
    start = time.monotonic()
    await asyncio.sleep(min(5.0, flood_seconds / 4))  # the attackers are connected and past their burst
    flood: list[float] = []
    while time.monotonic() - start < flood_seconds:
        flood += await _home_views(student, 1)
        await asyncio.sleep(0.2)
    end = time.monotonic()
    stop.set()
    await asyncio.wait(tasks, timeout=60)
    for task in tasks:
        task.cancel()
    await student.close()

    from isoscope.dashboard.classroom.guard import GUESSES_OVERALL, GUESSES_PER_CLIENT

    burst = GUESSES_PER_CLIENT[0]
    answered = sorted(t for t in stats["answered"] if t <= end)  # during the flood
    after_burst = answered[burst:]
    span = end - answered[burst] if len(answered) > burst else 0.0
    return {
        "attackers": attackers,
        "flood_seconds": round(end - start, 1),
        "home_median_seconds_quiet": round(statistics.median(quiet), 3),
        "home_median_seconds_flood": round(statistics.median(flood), 3),
        "flood_over_quiet": round(statistics.median(flood) / statistics.median(quiet), 2),
        "home_views_flood": len(flood),
        "guesses_answered": len(answered),
        "guesses_answered_per_second": round(len(after_burst) / span, 2) if span > 0 else 0.0,
        "guess_budget": {"per_client": GUESSES_PER_CLIENT, "overall": GUESSES_OVERALL},
        "reconnects": stats["reconnects"],
        "server_peak_rss_mib": round(_peak_rss_mib(pid)),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20 s of flood")
    parser.add_argument("--attackers", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=None, help="length of the flood (default 120, quick 20)")
    parser.add_argument("--views", type=int, default=20, help="quiet Home views")
    args = parser.parse_args(argv)
    seconds = args.seconds or (20.0 if args.quick else 120.0)
    port = _free_port()
    with tempfile.TemporaryDirectory(prefix="isoscope-flood-") as cache:
        launcher = start_server(port, Path(cache))
        try:
            result = asyncio.run(bench(port, _server_pid(launcher), args.attackers, seconds, args.views))
        finally:
            os.killpg(launcher.pid, signal.SIGTERM)
            launcher.wait(60)
    result = {"bench": "classroom_flood", "mode": "quick" if args.quick else "full", **result}
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
