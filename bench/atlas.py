"""Benchmark the whole-corpus atlas: pipeline at scale, layouts side by side, and drawing in a real browser.

Usage (from the repo root)::

    .venv/bin/python bench/atlas.py --quick             # render 100,000 precomputed points in headless chromium
    .venv/bin/python bench/atlas.py --n 1000000         # full: embed 1M synthetic sentences, graph, layout, render
    .venv/bin/python bench/atlas.py --quick --n 1000000  # render 1M precomputed points
    .venv/bin/python bench/atlas.py --precomputed --n 200000   # graph, UMAP, RSS on 384-d vectors, no embedding
    .venv/bin/python bench/atlas.py --layouts [--rust-umap DIR]   # UMAP (umap-learn) vs Rust UMAP vs PCA, 10k

Render: a Streamlit server opens the Atlas page on the atlas folder (``ISOSCOPE_ATLAS_DIR``); headless
Debian chromium (tests/e2e flags, software WebGL) loads it with every WebGL draw call and texture upload
recorded. ``render_seconds`` is the time from navigation to the first draw after the image of every
point was uploaded as a texture (``renderer`` ``image``), or, with ``--live``, to the first instanced draw
of all n points (``renderer`` ``webgl-points``). The image is computed from every point
(``points_drawn`` = points rasterised into it = n: nothing sampled). Pan: 12 mouse drags, median time
between successive frames. Full run: synthetic sentences (isoscope.atlas.synthetic, seeded), the real
embedded model, resumable in ``--out``. Layouts: the FAISS graph of 10,000 STS-B sentences fed to
umap-learn and (through node, when ``--rust-umap`` names an unpacked ``embedding-atlas`` npm package) to
Embedding Atlas's Rust/WASM UMAP, plus PCA; each in its own process for its peak RSS; trustworthiness
(scikit-learn, 15 neighbours, cosine) on the 10k points. Prints a table, then ONE JSON object last.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

QUICK_POINTS = 100_000
RENDER_TARGET_S = 10.0
RSS_TARGET_GIB = 8.0

HOOK = """
(() => {
  window.__gl = [];
  const wrap = (proto) => {
    for (const name of ["drawArrays", "drawElements", "drawArraysInstanced", "drawElementsInstanced"]) {
      const orig = proto[name];
      proto[name] = function (...a) {
        const count = name === "drawArraysInstanced" ? a[3] : name === "drawElementsInstanced" ? a[4] : 0;
        const r = orig.apply(this, a);
        window.__gl.push([performance.now(), "draw", count]);
        return r;
      };
    }
    for (const name of ["texImage2D", "texSubImage2D", "texStorage2D"]) {
      const orig = proto[name];
      proto[name] = function (...a) {
        const src = a[a.length - 1];
        const w = name === "texStorage2D" ? a[3] : name === "texSubImage2D" && a.length >= 9 ? a[4]
          : a.length >= 9 ? a[3] : (src && (src.width || src.naturalWidth)) || 0;
        window.__gl.push([performance.now(), "tex", w]);
        return orig.apply(this, a);
      };
    }
  };
  if (window.WebGL2RenderingContext) wrap(WebGL2RenderingContext.prototype);
})();
"""


def peak_rss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # Linux: KiB


# ------------------------------------------------------------------ atlases


def synthetic_atlas(out: Path, n: int, dim: int = 32, layout: str = "pca", calibrate: str = "none", seed: int = 0):
    """An atlas of ``n`` synthetic sentences whose vectors are precomputed (clustered ``dim``-d points by
    topic): the render input of ``--quick`` (32-d, PCA, raw only) and, with ``--precomputed``, the graph,
    layout and memory of a big corpus without the hours of embedding (384-d, UMAP, whitening).
    Returns (folder, AtlasRun or None when it was already complete)."""
    import pandas as pd

    from isoscope.atlas.pipeline import AtlasConfig, build_atlas, is_complete
    from isoscope.atlas.synthetic import TOPICS, synthetic_corpus

    if is_complete(out):
        return out, None
    texts, topics = synthetic_corpus(n, seed)
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 4 / np.sqrt(dim / 32), (len(TOPICS), dim))
    code = pd.Categorical(topics, categories=list(TOPICS)).codes
    vectors = (centres[code] + rng.normal(0, 1, (n, dim))).astype(np.float32)  # (n, dim)
    config = AtlasConfig(layout=layout, calibrate=calibrate)
    run = build_atlas(None, texts, out, config, pd.DataFrame({"topic": topics}), vectors=vectors)
    return out, run


def full_atlas(out: Path, n: int) -> dict:
    """Embed and map ``n`` synthetic sentences with the real model; stage seconds (only stages run now)."""
    import pandas as pd

    from isoscope.atlas.pipeline import AtlasConfig, build_atlas
    from isoscope.atlas.synthetic import synthetic_corpus
    from isoscope.encode.models import load_encoder

    texts, topics = synthetic_corpus(n, 0)
    last = {"stage": None}

    def progress(stage: str, done: int, total: int) -> None:
        if stage != last["stage"]:
            print(f"  {stage} ...", file=sys.stderr, flush=True)
            last["stage"] = stage

    run = build_atlas(load_encoder(), texts, out, AtlasConfig(), pd.DataFrame({"topic": topics}), progress)
    secs = run.seconds
    return {
        "stage_seconds": {k: round(v, 1) for k, v in secs.items()},
        "embed_texts_per_s": round(n / secs["embed"], 1) if "embed" in secs else None,
        "knn_seconds": round(secs.get("raw_knn", 0) + secs.get("cal_knn", 0), 1) or None,
        "layout_seconds": round(secs.get("raw_layout", 0) + secs.get("cal_layout", 0), 1) or None,
        "peak_rss_gib": round(peak_rss_gib(), 2),
        "resumed_stages": run.skipped,
    }


# ------------------------------------------------------------------ render in headless chromium


def render(atlas_dir: Path, n: int, live: bool, timeout_s: float = 300.0) -> dict:
    """Cold visit (fresh server: app start, model load, the image computed), then a warm visit in a new
    session (what every later user sees): time to every point drawn, and pan frame times. ``live``: then
    tick "Every point live" and time the first instanced draw of all n points, and panning it."""
    from playwright.sync_api import sync_playwright

    from tests.e2e.conftest import CHROMIUM_ARGS, chromium_path, free_port

    exe = chromium_path()
    if exe is None:
        raise SystemExit("chromium not found: run scripts/ensure_browser.sh")
    port = free_port()
    env = dict(os.environ, ISOSCOPE_ATLAS_DIR=str(atlas_dir), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    env.pop("ISOSCOPE_DATA_FILE", None)
    cmd = [str(REPO_ROOT / ".venv/bin/streamlit"), "run", "dashboard/app.py", "--server.headless", "true"]
    cmd += ["--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"]
    cmd += ["--server.maxMessageSize", "1024"]
    log = open(tempfile.mkstemp(suffix=".log")[1], "wb")
    proc = subprocess.Popen(cmd, cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}/atlas"
    out: dict = {"renderer": "image"}
    try:
        _wait_health(port, proc)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
            for visit in ("cold", "warm"):
                if visit == "warm":  # Streamlit's own page load, next to the warm atlas visit
                    out["home_page_seconds"] = _baseline(browser, url.rsplit("/", 1)[0] + "/")
                ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
                ctx.add_init_script(HOOK)
                page = ctx.new_page()
                t0 = time.perf_counter()
                drawn_ms = _first_draw(page, url, n, False, timeout_s)
                out[f"{visit}_render_seconds"] = None if drawn_ms is None else round(drawn_ms / 1000, 2)
                out[f"{visit}_wall_seconds"] = round(time.perf_counter() - t0, 2)
                if visit == "warm":
                    out["render_seconds"] = out["warm_render_seconds"]
                    out["points_drawn"] = n if drawn_ms is not None else 0
                    out.update(_pan(page))
                    if live:
                        page.get_by_text("Every point live").click()
                        ms = _first_draw(page, None, n, True, timeout_s)
                        pan = _pan(page, drags=3)
                        out["live"] = {
                            "renderer": "webgl-points",
                            "render_seconds_after_click": None if ms is None else round(ms / 1000, 2),
                            "pan_frame_ms_median": pan["pan_frame_ms_median"],
                            "pan_frames": pan["pan_frames"],
                        }
                ctx.close()
            browser.close()
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(timeout=30)
    return out


def _baseline(browser, url: str) -> float:
    """Seconds until the Home page (no map) has finished its run in a new session: Streamlit's own page load
    on this machine, measured next to the atlas (a loaded machine slows both)."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = ctx.new_page()
    t0 = time.perf_counter()
    page.goto(url, wait_until="commit")
    page.wait_for_selector(
        '[data-testid="stApp"][data-test-script-state="notRunning"]', state="attached", timeout=300_000
    )
    page.wait_for_selector('[data-testid="stHeading"]', timeout=300_000)
    secs = time.perf_counter() - t0
    ctx.close()
    return round(secs, 2)


def _wait_health(port: int, proc: subprocess.Popen) -> None:
    import urllib.request

    for _ in range(400):
        if proc.poll() is not None:
            raise SystemExit(f"streamlit exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as r:
                if r.read().strip() == b"ok":
                    return
        except OSError:
            time.sleep(0.25)
    raise SystemExit("streamlit did not become healthy")


def _first_draw(page, url: str | None, n: int, live: bool, timeout_s: float) -> float | None:
    """ms from navigation start (performance.now) to the first draw showing every point."""
    if url is not None:
        page.goto(url, wait_until="commit")
    else:
        page.evaluate("window.__gl = []; window.__t0 = performance.now()")
    start = page.evaluate("window.__t0 || 0")
    deadline = time.perf_counter() + timeout_s
    while time.perf_counter() < deadline:
        events = page.evaluate("window.__gl || []")
        if live:
            hit = [t for t, kind, c in events if kind == "draw" and c >= n]
        else:
            tex = [t for t, kind, w in events if kind == "tex" and w >= 1024]
            hit = [t for t, kind, _ in events if kind == "draw" and tex and t > tex[0]]
        if hit:
            return hit[0] - start
        time.sleep(0.2)
    return None


def _pan(page, drags: int = 12) -> dict:
    canvas = page.locator("canvas").first
    box = canvas.bounding_box()
    cx, cy = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.evaluate("window.__gl = []")
    t0 = time.perf_counter()
    page.mouse.move(cx, cy)
    page.mouse.down()
    for k in range(drags):
        page.mouse.move(cx + 8 * (k + 1), cy + 4 * (k + 1))
    page.mouse.up()
    time.sleep(0.5)
    draws = sorted({round(t, 1) for t, kind, _ in page.evaluate("window.__gl") if kind == "draw"})
    frames = [draws[0]] if draws else []
    for t in draws[1:]:  # draw calls of one frame come within a few ms of each other
        if t - frames[-1] > 8:
            frames.append(t)
    gaps = np.diff(frames) if len(frames) > 1 else np.array([])
    return {
        "pan_frames": len(frames),
        "pan_frame_ms_median": round(float(np.median(gaps)), 1) if len(gaps) else None,
        "pan_seconds": round(time.perf_counter() - t0, 2),
    }


# ------------------------------------------------------------------ layouts side by side


LAYOUT_CHILD = r"""
import json, resource, sys, time
import numpy as np
sys.path.insert(0, {root!r})
method, d = sys.argv[1], sys.argv[2]
X = np.load(d + "/x.npy"); ids = np.load(d + "/ids.npy"); dist = np.load(d + "/dist.npy")
t = time.perf_counter()
if method == "pca":
    from isoscope.atlas.layout import pca_layout
    Y = pca_layout(X)
elif method == "umap-learn":
    from isoscope.atlas.layout import umap_layout
    Y = umap_layout(X, (ids, dist), seed=0)
else:
    import subprocess
    ids.astype(np.int32).tofile(d + "/ids.bin"); dist.astype(np.float32).tofile(d + "/dist.bin")
    out = subprocess.run(["node", {runner!r}, sys.argv[3], d, str(len(X)), str(ids.shape[1])], check=True,
                         capture_output=True, text=True).stdout
    Y = np.fromfile(d + "/y.bin", np.float32).reshape(-1, 2)
secs = time.perf_counter() - t
np.save(d + "/y-" + method + ".npy", Y)
def hwm(text):  # VmHWM of a fresh address space: ru_maxrss would include the parent's RSS at fork
    return float(next(x for x in text.splitlines() if x.startswith("VmHWM")).split()[1]) / 1024
peak = hwm(open("/proc/self/status").read())
if method == "rust-umap":
    peak = float(out.strip().splitlines()[-1])  # node's own VmHWM (MiB)
print(json.dumps({{"seconds": secs, "peak_rss_mib": peak}}))
"""

NODE_RUNNER = r"""
import { readFileSync, writeFileSync } from "node:fs";
const [, , pkg, d, n, k] = process.argv;
const { createUMAPFromKNN } = await import(pkg + "/dist/umap.js");
const ids = new Int32Array(readFileSync(d + "/ids.bin").buffer.slice(0));
const dist = new Float32Array(readFileSync(d + "/dist.bin").buffer.slice(0));
const umap = await createUMAPFromKNN(+n, 2, ids, dist, { seed: 0 });
await umap.run();
writeFileSync(d + "/y.bin", Buffer.from(new Float32Array(umap.embedding).buffer));
const status = readFileSync("/proc/self/status", "utf8");
console.log(+status.match(/VmHWM:\s+(\d+)/)[1] / 1024);
"""


def layouts(rust_umap: str | None, n: int = 10_000) -> dict:
    from sklearn.manifold import trustworthiness

    from isoscope.atlas.graph import knn_graph_chunked
    from isoscope.data import load_pairs
    from isoscope.encode.embed import encode
    from isoscope.encode.models import load_encoder
    from isoscope.paths import stsb_dir

    texts = list(dict.fromkeys(load_pairs(stsb_dir() / "stsb-en-train.csv").texts))[:n]
    from isoscope.cache import ArrayCache

    X = encode(load_encoder(), texts, "mean", cache=ArrayCache())  # (n, 384)
    ids, dist = knn_graph_chunked(X, 15)
    d = tempfile.mkdtemp(prefix="atlas-layouts-")
    np.save(f"{d}/x.npy", X), np.save(f"{d}/ids.npy", ids), np.save(f"{d}/dist.npy", dist)
    runner = Path(d) / "rust_umap.mjs"
    runner.write_text(NODE_RUNNER)
    child = Path(d) / "child.py"
    child.write_text(LAYOUT_CHILD.format(root=str(REPO_ROOT), runner=str(runner)))
    out = {}
    methods = ["pca", "umap-learn"] + (["rust-umap"] if rust_umap else [])
    for m in methods:
        args = [sys.executable, str(child), m, d] + ([str(Path(rust_umap).resolve())] if m == "rust-umap" else [])
        res = json.loads(
            subprocess.run(args, check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1]
        )
        Y = np.load(f"{d}/y-{m}.npy")
        res["trustworthiness"] = float(trustworthiness(X, Y, n_neighbors=15, metric="cosine"))
        out[m] = {k: round(v, 3) for k, v in res.items()}
        print(f"{m:12s} {out[m]}", file=sys.stderr, flush=True)
    return {"layout_points": len(X), "layouts": out}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help=f"render {QUICK_POINTS:,} precomputed points only")
    ap.add_argument("--n", type=int, default=None, help="points (default: 100,000 with --quick, else 1,000,000)")
    ap.add_argument("--out", default=None, help="atlas folder (resumable; default: a cache folder per n)")
    ap.add_argument(
        "--precomputed", action="store_true", help="synthetic 384-d vectors instead of embedding (graph, layout, RSS)"
    )
    ap.add_argument("--live", action="store_true", help="also render every point as a live WebGL point")
    ap.add_argument("--layouts", action="store_true", help="compare layouts on 10,000 STS-B sentences")
    ap.add_argument("--rust-umap", default=None, help="unpacked embedding-atlas npm package (for --layouts)")
    args = ap.parse_args()
    from isoscope.cache import default_cache_dir

    result: dict = {}
    if args.layouts:
        result.update(layouts(args.rust_umap))
        print(json.dumps(result))
        return
    n = args.n or (QUICK_POINTS if args.quick else 1_000_000)
    kind = "synthetic-vectors" if args.quick else "precomputed-384" if args.precomputed else "full"
    out = Path(args.out) if args.out else default_cache_dir() / "bench-atlas" / f"{kind}-{n}"
    t0 = time.perf_counter()
    if args.quick:
        synthetic_atlas(out, n)
    elif args.precomputed:
        _, run = synthetic_atlas(out, n, dim=384, layout="umap", calibrate="whitening")
        if run is not None:
            secs = run.seconds
            result["stage_seconds"] = {k: round(v, 1) for k, v in secs.items()}
            result["knn_seconds"] = round(secs.get("raw_knn", 0) + secs.get("cal_knn", 0), 1)
            result["layout_seconds"] = round(secs.get("raw_layout", 0) + secs.get("cal_layout", 0), 1)
            result["peak_rss_gib"] = round(peak_rss_gib(), 2)
    else:
        result.update(full_atlas(out, n))
    result["build_seconds"] = round(time.perf_counter() - t0, 1)
    result["points"] = n
    result.update(render(out, n, live=args.live))
    result["meets_render_target"] = result["render_seconds"] is not None and result["render_seconds"] <= RENDER_TARGET_S
    if "peak_rss_gib" in result:
        result["meets_rss_target"] = result["peak_rss_gib"] < RSS_TARGET_GIB
    print(
        f"{n:,} points: drawn in {result['render_seconds']} s ({result['renderer']}), "
        f"pan frame {result['pan_frame_ms_median']} ms",
        file=sys.stderr,
    )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
