"""A class of students on one server: N sessions at once on the tour pages while one session fits a flow.

Starts ``isoscope app --classroom`` on a fresh cache folder (so the first visit is really cold), then:

1. **the first session alone** passes the access code and visits the tour pages (Home, Sentence pairs,
   Anisotropy, Neighbours, Projection map): every page is computed once and cached;
2. **the class**: N - 1 more sessions at once pass the code and visit the same pages, while one more session
   fits a flow on the Calibration page (uncached: a fresh seed);
3. **a cold Atlas**: ``ATLAS_SESSIONS`` more sessions open the Atlas page at the same moment, whose demo atlas
   nobody has built yet (``cold_atlas``: errors, settle times, and the atlas folders built: 1 = one build,
   shared).

Reported: ``sessions`` (N), ``errors`` (exceptions and error boxes on any page, and protocol failures),
``p95_settle_seconds`` (a page view, from the request to the end of its script run, over the class),
``server_peak_rss_mib`` (the server's VmHWM), and the server's CPU seconds per page view for the first
session (cold) and for the others (``cpu_seconds_per_view_first`` / ``_others``): the gap between those two
is the work that caching saves; the rest of a class's slowdown is CPU sharing.

Why a protocol-level client and not real browsers: each headless chromium renders the React app and its
plotly figures on the same 2 cores as the server (10 of them took the machine), so a browser-driven figure
measures the browsers as much as the server. This client speaks Streamlit's own WebSocket protocol
(``BackMsg``/``ForwardMsg`` protobufs, as the frontend does) and costs next to no CPU, so the settle times
and CPU seconds are the server's. What it leaves out is drawing in the browser, which happens on each
student's own machine.

Usage::

    .venv/bin/python bench/classroom.py --quick   # 10 sessions
    .venv/bin/python bench/classroom.py           # 30 sessions

The last stdout line is one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOUR = ("Home", "Sentence pairs", "Anisotropy", "Neighbours", "Projection map")
QUICK_TOUR = ("Home", "Sentence pairs", "Neighbours", "Projection map")  # Anisotropy's cold visit alone is ~40 s
QUICK_EPOCHS = 1  # the flow fit of --quick (the page's default is 3 epochs ...)
QUICK_FIT_ON = (
    "These sentences only"  # ... on the pair sentences (the default adds the demo corpus: 666 texts to embed)
)
CODE = "BENCH-CLASS-17"
ATLAS_SESSIONS = 10  # students opening a cold Atlas page at once (issue 28: 6 of 10 got bug boxes)
PAGE_TIMEOUT = 900.0  # seconds one page view may take before it counts as an error


# ---------------------------------------------------------------- the server


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _proc_cpu_seconds(pid: int) -> float:
    """utime + stime of the process and its children that exited (clock ticks in /proc/<pid>/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = sum(int(x) for x in fields[11:15])  # utime, stime, cutime, cstime
    return ticks / os.sysconf("SC_CLK_TCK")


def _peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _server_pid(launcher: subprocess.Popen) -> int:
    """The streamlit process (the isoscope command runs it as a child)."""
    for _ in range(200):
        children = Path(f"/proc/{launcher.pid}/task/{launcher.pid}/children")
        pids = children.read_text().split() if children.exists() else []
        if pids:
            return int(pids[0])
        time.sleep(0.1)
    raise RuntimeError("the streamlit server did not start")


def start_server(port: int, cache: Path, classroom: bool = True) -> subprocess.Popen:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "ISOSCOPE_CACHE": str(cache)}
    argv = [sys.executable, "-m", "isoscope", "app", "--host", "127.0.0.1", "--port", str(port)]
    server = subprocess.Popen(
        [*argv, "--classroom", "--access-code", CODE] if classroom else argv,
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 180
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=5):
                return server
        except OSError:
            if time.monotonic() > deadline or server.poll() is not None:
                raise RuntimeError("the server did not answer") from None
            time.sleep(0.5)


# ---------------------------------------------------------------- a Streamlit client


@dataclass
class Run:
    """One script run as the client saw it."""

    seconds: float
    errors: list[str] = field(default_factory=list)
    widgets: dict[str, tuple[str, object]] = field(default_factory=dict)  # id -> (element type, proto)
    metrics: dict[str, str] = field(default_factory=dict)  # label -> value of st.metric elements
    pages: dict[str, str] = field(default_factory=dict)  # page title -> page_script_hash


class Session:
    """One browser tab, spoken to over Streamlit's WebSocket protocol."""

    gated = True  # the server asks for the access code (classroom mode)

    def __init__(self, port: int) -> None:
        self.port = port
        self.ws = None
        self.pages: dict[str, str] = {}
        self.current = ""  # the page this tab shows: a rerun without it would run the default page

    async def connect(self) -> None:
        import websockets

        url = f"ws://127.0.0.1:{self.port}/_stcore/stream"
        self.ws = await websockets.connect(url, subprotocols=["streamlit"], max_size=None, open_timeout=60)

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()

    async def run(self, page: str | None = None, widget_states: list | None = None) -> Run:
        """Ask for a script run (of ``page``, or the current one) and read until it has finished."""
        from streamlit.proto.BackMsg_pb2 import BackMsg

        msg = BackMsg()
        state = msg.rerun_script
        state.query_string = ""
        state.page_script_hash = self.pages[page] if page is not None else self.current
        for w in widget_states or []:
            state.widget_states.widgets.append(w)
        start = time.perf_counter()
        await self.ws.send(msg.SerializeToString())
        return await asyncio.wait_for(self._read_until_finished(start), PAGE_TIMEOUT)

    async def _read_until_finished(self, start: float) -> Run:
        from streamlit.proto.Alert_pb2 import Alert
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        run = Run(0.0)
        while True:
            fwd = ForwardMsg()
            fwd.ParseFromString(await self.ws.recv())
            kind = fwd.WhichOneof("type")
            if kind == "delta" and fwd.delta.WhichOneof("type") == "new_element":
                element = fwd.delta.new_element
                etype = element.WhichOneof("type")
                if etype == "exception":
                    run.errors.append(f"exception: {element.exception.type}: {element.exception.message[:200]}")
                elif etype == "alert" and element.alert.format == Alert.ERROR:
                    run.errors.append(f"error box: {element.alert.body[:200]}")
                elif etype == "metric":
                    run.metrics[element.metric.label] = element.metric.body
                proto = getattr(element, etype) if etype else None
                if proto is not None and getattr(proto, "id", ""):
                    run.widgets[proto.id] = (etype, proto)
            elif kind == "navigation":
                run.pages = {p.page_name: p.page_script_hash for p in fwd.navigation.app_pages}
                self.pages.update(run.pages)
                self.current = fwd.navigation.page_script_hash or self.current
            elif kind == "new_session":
                self.current = fwd.new_session.page_script_hash or self.current
            elif kind == "script_finished":
                if fwd.script_finished == ForwardMsg.FINISHED_WITH_COMPILE_ERROR:
                    run.errors.append("script compile error")
                if fwd.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                    run.seconds = time.perf_counter() - start
                    return run

    async def enter_code(self) -> Run:
        """The first run shows the access-code form: type the code and press Enter."""
        from streamlit.proto.WidgetStates_pb2 import WidgetState

        gate = await self.run()
        if not self.gated:
            return gate
        text = next(i for i, (t, _) in gate.widgets.items() if t == "text_input" and "classroom_code" in i)
        submit = next(i for i, (t, p) in gate.widgets.items() if t == "button" and p.is_form_submitter)
        code = WidgetState(id=text, string_value=CODE)
        press = WidgetState(id=submit, trigger_value=True)
        admitted = await self.run(widget_states=[code, press])
        admitted.seconds += gate.seconds
        return admitted


# ---------------------------------------------------------------- the bench


@dataclass
class View:
    session: int
    page: str
    seconds: float
    errors: list[str]


async def tour(port: int, number: int, pages: tuple[str, ...]) -> list[View]:
    """One student: connect, pass the code, visit ``pages`` in order."""
    views: list[View] = []
    session = Session(port)
    try:
        await session.connect()
        home = await session.enter_code()
        views.append(View(number, pages[0], home.seconds, home.errors))
        for page in pages[1:]:
            run = await session.run(page)
            views.append(View(number, page, run.seconds, run.errors))
    except Exception as exc:  # a failure of the protocol or a timeout is an error of that session
        views.append(View(number, "?", float("nan"), [f"{type(exc).__name__}: {exc}"]))
    finally:
        await session.close()
    return views


async def flow_fit(port: int, seed: int, epochs: int | None) -> View:
    """One more student fits a flow on the Calibration page (a seed no cache has seen; ``epochs`` if given)."""
    from streamlit.proto.WidgetStates_pb2 import WidgetState

    session = Session(port)
    try:
        await session.connect()
        await session.enter_code()
        page = await session.run("Calibration")

        def widget(kind: str, key: str) -> str:
            return next(i for i, (t, _) in page.widgets.items() if t == kind and i.endswith(f"-{key}"))

        # widget values as the frontend sends them: numbers as double_value, radio choices by their label
        states = [WidgetState(id=widget("number_input", "calp_seed"), double_value=seed)]
        if epochs is not None:  # --quick: a short fit on the pair sentences, which the tour has embedded already
            states.append(WidgetState(id=widget("number_input", "calp_epochs"), double_value=epochs))
            states.append(WidgetState(id=widget("radio", "calp_fit_on"), string_value=QUICK_FIT_ON))
        states.append(WidgetState(id=widget("button", "calp_fit"), trigger_value=True))
        fitted = await session.run(widget_states=states)
        if "Spearman flow" not in fitted.metrics:
            fitted.errors.append(f"the flow fit showed no 'Spearman flow' metric (metrics: {sorted(fitted.metrics)})")
        return View(-1, "Calibration (flow fit)", fitted.seconds, fitted.errors)
    except Exception as exc:
        return View(-1, "Calibration (flow fit)", float("nan"), [f"{type(exc).__name__}: {exc}"])
    finally:
        await session.close()


async def atlas_visit(port: int, number: int) -> View:
    """One student opens the Atlas page (the demo corpus: on a fresh cache the first visit builds its atlas)."""
    session = Session(port)
    try:
        await session.connect()
        await session.enter_code()
        run = await session.run("Atlas")
        errors = run.errors + ([] if run.widgets else ["the Atlas page drew nothing"])
        return View(number, "Atlas", run.seconds, errors)
    except Exception as exc:
        return View(number, "Atlas", float("nan"), [f"{type(exc).__name__}: {exc}"])
    finally:
        await session.close()


async def cold_atlas(port: int, cache: Path, sessions: int) -> dict:
    """``sessions`` students open a cold Atlas page at the same moment: errors, settle times, builds made."""
    start = time.perf_counter()
    views = await asyncio.gather(*(atlas_visit(port, i) for i in range(sessions)))
    wall = time.perf_counter() - start
    errors = [e for v in views for e in v.errors]
    folders = [p for p in (cache / "atlas").iterdir() if p.is_dir()] if (cache / "atlas").is_dir() else []
    return {
        "sessions": sessions,
        "errors": len(errors),
        "error_samples": errors[:5],
        "p95_settle_seconds": round(_p95([v.seconds for v in views]), 2),
        "median_settle_seconds": round(statistics.median([v.seconds for v in views]), 2),
        "wall_seconds": round(wall, 2),
        "atlas_builds": len(folders),
    }


def _p95(values: list[float]) -> float:
    values = sorted(v for v in values if v == v)
    if not values:
        return float("nan")
    return values[math.ceil(0.95 * len(values)) - 1]  # nearest rank


async def bench(port: int, pid: int, sessions: int, pages: tuple[str, ...], epochs: int | None) -> dict:
    """The first session alone (cold), then the class with a flow fit (settle times), then the class again
    without the fit (the server's CPU per page view, not mixed with the fit's)."""
    cpu0 = _proc_cpu_seconds(pid)
    first = await tour(port, 0, pages)
    cpu1 = _proc_cpu_seconds(pid)
    start = time.perf_counter()
    seed = int(time.time()) % 10_000 + 1
    results = await asyncio.gather(flow_fit(port, seed, epochs), *(tour(port, i, pages) for i in range(1, sessions)))
    wall = time.perf_counter() - start
    cpu2 = _proc_cpu_seconds(pid)
    again = await asyncio.gather(*(tour(port, i, pages) for i in range(sessions, 2 * sessions - 1)))
    cpu3 = _proc_cpu_seconds(pid)
    fit, others = results[0], [v for views in results[1:] for v in views]
    quiet = [v for views in again for v in views]
    errors = [e for v in [*first, fit, *others, *quiet] for e in v.errors]
    settle = [v.seconds for v in others]
    per_page = {p: round(statistics.median([v.seconds for v in others if v.page == p] or [math.nan]), 2) for p in pages}
    n_quiet = sum(1 for v in quiet if v.page != "?")
    return {
        "sessions": sessions,
        "pages": list(pages),
        "errors": len(errors),
        "error_samples": errors[:5],
        "p95_settle_seconds": round(_p95(settle), 2),
        "median_settle_seconds": round(statistics.median(settle), 2) if settle else None,
        "median_settle_seconds_by_page": per_page,
        "p95_settle_seconds_without_fit": round(_p95([v.seconds for v in quiet]), 2),
        "first_session_settle_seconds": {v.page: round(v.seconds, 2) for v in first},
        "flow_fit_seconds": round(fit.seconds, 2),
        "flow_epochs": epochs or "default",
        "class_wall_seconds": round(wall, 2),
        "server_peak_rss_mib": round(_peak_rss_mib(pid), 1),
        "cpu_seconds_per_view_first": round((cpu1 - cpu0) / max(len(first), 1), 3),
        "cpu_seconds_per_view_others": round((cpu3 - cpu2) / max(n_quiet, 1), 3),
        "cpu_seconds_class_with_fit": round(cpu2 - cpu1, 2),
        "cpu_cores_busy_during_class": round((cpu2 - cpu1) / wall, 2) if wall else None,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10 sessions instead of 30")
    parser.add_argument("--sessions", type=int, default=None, help="number of sessions (default: 30, --quick 10)")
    parser.add_argument("--plain", action="store_true", help="serve `isoscope app` without --classroom (no code)")
    args = parser.parse_args(argv)
    sessions = args.sessions or (10 if args.quick else 30)
    port = _free_port()
    with tempfile.TemporaryDirectory(prefix="isoscope-classroom-") as cache:
        started = time.perf_counter()
        server = start_server(port, Path(cache), classroom=not args.plain)
        Session.gated = not args.plain
        try:
            pid = _server_pid(server)
            pages, epochs = (QUICK_TOUR, QUICK_EPOCHS) if args.quick else (TOUR, None)
            report = asyncio.run(bench(port, pid, sessions, pages, epochs))
            report["cold_atlas"] = asyncio.run(cold_atlas(port, Path(cache), ATLAS_SESSIONS))
            report["server_peak_rss_mib"] = round(_peak_rss_mib(pid), 1)
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=60)
    report = {"bench": "classroom", "mode": "quick" if args.quick else "full", "classroom": not args.plain, **report}
    report["total_seconds"] = round(time.perf_counter() - started, 1)
    for key in ("sessions", "errors", "p95_settle_seconds", "server_peak_rss_mib"):
        print(f"{key:<34} {report[key]}")
    atlas = report["cold_atlas"]
    print(
        f"{'cold Atlas: sessions, errors, builds':<34} {atlas['sessions']}, {atlas['errors']}, {atlas['atlas_builds']}"
    )
    print(
        f"{'cpu s/view first vs others':<34} {report['cpu_seconds_per_view_first']} vs {report['cpu_seconds_per_view_others']}"
    )
    print(json.dumps(report))
    return 0 if report["errors"] == 0 and report["cold_atlas"]["errors"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
