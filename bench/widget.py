"""Benchmark the map widget (``space.map``: jupyter-scatter on regl-scatterplot) in a real JupyterLab and browser.

Usage (from the repo root; the server needs the lab venv, ``.venv-lab``)::

    make bench-widget                   # 1k (reference), 100k and 1M points
    make bench-widget ARGS=--quick      # 100k only, shorter pans, no 1k reference: about a minute
    make bench-widget ARGS=--options    # also the drawing options side by side at 100k (OPTIONS)
    ISOSCOPE_LAB=.venv-lab/bin/jupyter-lab .venv/bin/python bench/widget.py --sizes 100000

The issue's targets: "100k points must pan smoothly, 1M must draw". For each size a fresh kernel (the project's
venv) builds ``isoscope.Space`` from seeded clustered random vectors (16-d, 12 clusters; no model) and a
notebook cell shows ``space.map(color="cluster", method="pca")`` in headless Debian chromium (tests/e2e flags:
``--disable-gpu``, so WebGL is SwiftShader, software on the CPU; the renderer string is in the JSON). Measured:

- ``first_draw_s``: from running the cell (Shift+Enter) to the first frame regl-scatterplot rendered with every
  point (its ``drawing`` event with all n points loaded); ``kernel_map_s`` is the kernel's share (PCA, the
  frame, jupyter-scatter's encoding);
- ``points_drawn``: the points the scatterplot holds and draws (all of them unless it filters, and it does
  not), checked against n and against what the kernel sent: nothing is sampled; ``painted``: the share of
  canvas pixels that are not background; ``points_in_first_view`` is regl-scatterplot's spatial-index count
  of the points in the first view (n at 100k; at 1M it reported 4,727 while all points were drawn, unexplained);
- pan: the mouse held down and moved in circles for ``--pan-seconds``; ``pan_fps`` counts the frames the
  scatterplot rendered (its ``drawing`` events), ``pan_ms_per_frame`` is their mean interval (p90 too),
  ``raf_fps`` the browser's requestAnimationFrame ticks meanwhile, ``input_moves_per_s`` the mouse events
  sent. The 1k map is the reference measured in the same run: there the frame rate is what the input and the
  browser allow, so ``pan_fps_100k / pan_fps_1k`` is the cost of the points themselves;
- ``render_fps``: frames per second when the scatterplot redraws at every animation frame with no input (what
  the renderer alone allows), and ``empty_frame_ms``: one frame without points, i.e. clearing and compositing
  regl-scatterplot's framebuffer, which is as large as the browser window (``framebuffer``) whatever the map's
  size: in software WebGL this fixed cost, not the points, bounds the frame rate of every map;
- hover: the mouse on one point until its text (fetched from the kernel, never sent in bulk) is in the tooltip.

``--options`` adds, at 100k and side by side in the same run, what ``space.map`` drew before it chose lean
options for big maps (``before``: 2-px points, opacity by density) and square points (``squares``).

Smooth means >= 20 frames per second (``SMOOTH_FPS``). Prints one line per measurement, the machine load, then
ONE JSON object as the last line. No request may leave the machine (refused and counted).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from tests.chromium import CHROMIUM_ARGS, chromium_path, keep_children_at_our_priority  # noqa: E402
from tests.lab import scatter  # noqa: E402
from tests.lab.jupyter import (  # noqa: E402
    LabError,
    lab_executable,
    offline_context,
    open_notebook,
    run_cell,
    running_lab,
    shutdown_kernels,
    wait_for_prompt,
    write_notebook,
)

SMOOTH_FPS = 20.0
REFERENCE_N = 1_000
VIEWPORT = {"width": 1400, "height": 1000}
DEFAULT_LAB = REPO_ROOT / ".venv-lab" / "bin" / "jupyter-lab"

SETUP = """\
import json, time
import numpy as np
import isoscope
import jscatter  # imported here: the timed cell measures the map, not the import

rng = np.random.default_rng({seed})
n, d, k = {n}, 16, 12
centres = rng.normal(0.0, 4.0, size=(k, d))
cluster = rng.integers(0, k, size=n)
X = (centres[cluster] + rng.normal(size=(n, d))).astype(np.float32)  # (n, d): k clusters
texts = [f"point {{i}} · cluster {{c}}" for i, c in enumerate(cluster.tolist())]
space = isoscope.Space(X, texts, {{"cluster": [f"c{{c:02d}}" for c in cluster.tolist()]}}, name="bench", cache=False)"""

MAP = """\
t = time.perf_counter()
m = space.map(color="cluster", method="pca"{kwargs})
{tweak}
map_s = time.perf_counter() - t
open("{stem}.json", "w").write(json.dumps({{"map_s": map_s, "points": int(len(m.widget.points))}}))
m"""

# name -> (extra space.map arguments, code run on the map before it is shown): what --options compares at 100k.
# "default" is space.map as shipped (from LEAN_ROWS: 1-px points at one opacity); "before" is what it drew before
# (2-px points, opacity by density, jupyter-scatter's default); "squares" adds regl-scatterplot's performanceMode.
OPTIONS: dict[str, tuple[str, str]] = {
    "default": ("", ""),
    "before": (", point_size=2", 'm.scatter.opacity(by="density")'),
    "squares": ("", 'm.scatter.options(regl_scatterplot_options={"performanceMode": True})'),
}

# frames per second when the scatterplot redraws at every animation frame without input (what the renderer
# alone allows), and the ms of one frame without points (clearing and compositing the window-sized framebuffer)
RENDER = """async seconds => {
    const api = window.__map.api, renderer = api.get('renderer');
    let frames = 0;
    const sub = api.subscribe('drawing', () => frames++);
    const t0 = performance.now();
    await new Promise(done => {
        const tick = () => { api.redraw(); if (performance.now() - t0 < seconds * 1000) requestAnimationFrame(tick); else done(); };
        requestAnimationFrame(tick);
    });
    api.unsubscribe(sub);
    const fps = frames * 1000 / (performance.now() - t0), empty = [];
    for (let i = 0; i < 5; i++) { const t = performance.now(); renderer.render(() => {}, api.get('canvas')); empty.push(performance.now() - t); }
    empty.sort((a, b) => a - b);
    return {render_fps: Math.round(fps * 10) / 10, empty_frame_ms: Math.round(empty[2]),
            framebuffer: [renderer.canvas.width, renderer.canvas.height], canvas: [api.get('canvas').width, api.get('canvas').height]};
}"""

HOVER_TEXT = """() => {
    const api = window.__map.api;
    const h = api.get('hoveredPoint');
    if (h === undefined || h < 0) return null;
    const out = api.get('canvas').closest('.jp-OutputArea-output');
    return out && out.textContent.includes('point ' + h + ' ·') ? {point: h} : null;
}"""


def _label(n: int) -> str:
    return f"{n // 1_000_000}m" if n >= 1_000_000 and n % 1_000_000 == 0 else f"{n // 1000}k"


def _rate(stamps: list[float]) -> dict[str, float | int | None]:
    """Frames per second and ms per frame (mean and p90 interval) of ``stamps`` (ms)."""
    t = np.asarray(stamps, np.float64)
    if len(t) < 2:
        return {"frames": len(t), "fps": None, "ms_per_frame": None, "ms_p90": None}
    gaps = np.diff(t)  # (frames - 1,)
    mean = float((t[-1] - t[0]) / (len(t) - 1))
    return {
        "frames": len(t),
        "fps": round(1000.0 / mean, 1),
        "ms_per_frame": round(mean, 1),
        "ms_p90": round(float(np.percentile(gaps, 90)), 1),
    }


def _canvas_box(page) -> dict[str, float]:
    return page.evaluate(
        "() => { const r = window.__map.api.get('canvas').getBoundingClientRect(); "
        "return {x: r.left, y: r.top, width: r.width, height: r.height}; }"
    )


def pan(page, seconds: float, radius: float = 60.0) -> dict:
    """Hold the mouse down at the map's centre and move it in circles for ``seconds``; frames counted meanwhile."""
    box = _canvas_box(page)
    cx, cy = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(cx, cy)
    page.mouse.down()
    page.evaluate(scatter.START_FRAMES)
    moves, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        a = 0.35 * (moves + 1)  # ~21 px per event on a circle through the centre
        page.mouse.move(cx + radius * (math.cos(a) - 1), cy + radius * math.sin(a))
        moves += 1
    wall = time.perf_counter() - start
    page.mouse.move(cx + radius, cy + radius)  # end away from the start: a drag, not a click that selects
    rec = page.evaluate(scatter.STOP_FRAMES)
    page.mouse.up()
    drawn, ticks = _rate(rec["draws"]), _rate(rec["rafs"])
    return {
        "pan_frames": drawn["frames"],
        "pan_fps": drawn["fps"],
        "pan_ms_per_frame": drawn["ms_per_frame"],
        "pan_ms_p90": drawn["ms_p90"],
        "raf_fps": ticks["fps"],
        "input_moves_per_s": round(moves / wall, 1),
        "pan_seconds": round(wall, 2),
    }


def hover(page, timeout_ms: float) -> dict:
    """Move the mouse onto a point and wait for its own text in the tooltip (the kernel sends it on hover)."""
    page.mouse.move(5, 5)
    target = page.evaluate(scatter.SCREEN_POINT, 0)
    start = time.perf_counter()
    page.mouse.move(target["x"] - 1, target["y"])
    page.mouse.move(target["x"], target["y"])
    shown = page.wait_for_function(HOVER_TEXT, timeout=timeout_ms, polling=50).json_value()
    return {"hover_s": round(time.perf_counter() - start, 2), "hover_point": shown["point"]}


def measure(browser, lab, n: int, option: str, pan_seconds: float, timeout_s: float) -> dict:
    """One map of ``n`` points in a fresh notebook and kernel: first draw, points drawn, pan, hover."""
    stem = f"map_{_label(n)}_{option}"
    kwargs, tweak = OPTIONS[option]
    write_notebook(
        lab.root / f"{stem}.ipynb", (SETUP.format(n=n, seed=0), MAP.format(kwargs=kwargs, tweak=tweak, stem=stem))
    )
    context, outside = offline_context(browser, lab, VIEWPORT)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    timeout_ms = timeout_s * 1000
    out: dict = {"n": n, "option": option, "load_1min": round(os.getloadavg()[0], 2)}
    try:
        open_notebook(page, lab, f"{stem}.ipynb", timeout_ms)
        run_cell(page, 0)
        wait_for_prompt(page, 0, 1, timeout_ms)
        scatter.watch_first_draw(page, n)
        run_cell(page, 1)
        out["first_draw_s"] = round(scatter.wait_first_draw(page, timeout_ms) / 1000, 2)
        wait_for_prompt(page, 1, 2, timeout_ms)
        kernel = json.loads((lab.root / f"{stem}.json").read_text())
        out["kernel_map_s"] = round(kernel["map_s"], 2)
        points = page.evaluate(scatter.POINTS)
        out["points_sent"] = kernel["points"]
        out["points_drawn"] = points["points"] if points["drawn"] and not points["filtered"] else 0
        out["points_in_first_view"] = points["in_view"]
        out["renderer_options"] = {k: points[k] for k in ("performance_mode", "point_size", "opacity")}
        out["painted"] = round(page.evaluate(scatter.PAINTED), 4)
        out["version"] = page.evaluate("() => window.__map.api.get('version')")
        page.wait_for_timeout(500)  # let the first view settle (the legend, the label canvas)
        out.update(page.evaluate(RENDER, pan_seconds))
        out.update(pan(page, pan_seconds))
        out.update(hover(page, timeout_ms))
    finally:
        context.close()
        shutdown_kernels(lab)
    out["outside_requests"] = len(outside)
    out["page_errors"] = errors[:3]
    return out


def run(sizes: list[int], options: list[str], pan_seconds: float, timeout_s: float, executable: Path) -> dict:
    from playwright.sync_api import sync_playwright

    report: dict = {
        "bench": "widget",
        "sizes": sizes,
        "smooth_fps": SMOOTH_FPS,
        "cpus": os.cpu_count(),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
    }
    runs: list[dict] = []
    keep_children_at_our_priority()
    with tempfile.TemporaryDirectory(prefix="isoscope-bench-widget-") as base:
        with running_lab(executable, Path(base)) as lab, sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
            try:
                context = browser.new_context()
                report["webgl_renderer"] = context.new_page().evaluate(scatter.WEBGL_RENDERER)
                report["browser"] = browser.version
                context.close()
                plan = [(n, "default") for n in sizes] + [(100_000, o) for o in options if o != "default"]
                for n, option in plan:
                    r = measure(browser, lab, n, option, pan_seconds, timeout_s)
                    runs.append(r)
                    print(_line(r), flush=True)
            finally:
                browser.close()
    report["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    report["runs"] = runs
    for r in runs:
        suffix = _label(r["n"]) + ("" if r["option"] == "default" else f"_{r['option']}")
        for key in (
            "first_draw_s",
            "kernel_map_s",
            "pan_ms_per_frame",
            "pan_fps",
            "raf_fps",
            "render_fps",
            "empty_frame_ms",
            "points_drawn",
            "hover_s",
        ):
            report[f"{key}_{suffix}"] = r.get(key)
        report[f"all_points_drawn_{suffix}"] = r["points_drawn"] == r["n"] == r["points_sent"]
    ref, big = report.get(f"pan_fps_{_label(REFERENCE_N)}"), report.get("pan_fps_100k")
    if ref and big:
        report["pan_fps_100k_vs_1k"] = round(big / ref, 3)
    if big is not None:
        report["pans_smoothly_100k"] = bool(big >= SMOOTH_FPS)
    if "all_points_drawn_1m" in report:
        report["draws_1m"] = report["all_points_drawn_1m"]
    report["outside_requests"] = sum(r["outside_requests"] for r in runs)
    return report


def _line(r: dict) -> str:
    return (
        f"{r['n']:>9,} {r['option']:<8} first draw {r['first_draw_s']:6.2f} s (kernel {r['kernel_map_s']:.2f} s), "
        f"drawn {r['points_drawn']:,}/{r['n']:,}, pan {r['pan_fps']} fps = {r['pan_ms_per_frame']} ms/frame "
        f"(p90 {r['pan_ms_p90']}, rAF {r['raf_fps']} fps, {r['input_moves_per_s']} moves/s), redrawing alone "
        f"{r['render_fps']} fps, empty frame {r['empty_frame_ms']} ms, hover {r['hover_s']} s, "
        f"load {r['load_1min']}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100k only, 2 s pans (no 1k reference)")
    parser.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",")], default=None)
    parser.add_argument("--options", action="store_true", help=f"also {', '.join(OPTIONS)} at 100k, side by side")
    parser.add_argument("--pan-seconds", type=float, default=None)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per step (1M points take a while)")
    args = parser.parse_args(argv)
    executable = lab_executable() or (DEFAULT_LAB if DEFAULT_LAB.is_file() else None)
    if executable is None or chromium_path() is None:
        why = "no JupyterLab: run `make bench-widget`" if executable is None else "no chromium: run `make browser`"
        print(f"widget: {why}")
        print(json.dumps({"bench": "widget", "skipped": why}))
        return 0
    sizes = args.sizes or ([100_000] if args.quick else [REFERENCE_N, 100_000, 1_000_000])
    pan_seconds = args.pan_seconds or (2.0 if args.quick else 6.0)
    options = list(OPTIONS) if args.options else []
    try:
        report = run(sizes, options, pan_seconds, args.timeout, executable)
    except LabError as exc:
        raise SystemExit(f"widget: {exc}") from None
    print(
        f"load average {report['load_average_at_start']} -> {report['load_average_at_end']} on {report['cpus']} cores, "
        f"WebGL: {report['webgl_renderer']}"
    )
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
