"""The Atlas map's renderers side by side on one synthetic atlas (issue 27): server tiles and browser drawing.

Usage (from the repo root; datashader lives in its own venv, ``make bench-renderers``)::

    .venv-renderers/bin/python bench/atlas_renderers.py --quick   # 100,000 points, 6 tiles a level: about a minute
    .venv-renderers/bin/python bench/atlas_renderers.py --quick --scatter   # ... and the ScatterplotLayer baseline
    .venv-renderers/bin/python bench/atlas_renderers.py           # 1,000,000 points

The atlas is ``isoscope.atlas.synthetic.synthetic_atlas`` (the one ``bench/atlas.py --quick`` renders, cached in the
same folder). Every candidate sees the same points, the same colours (cluster) and the same tile extents.

Server, per 256-px tile, for the same tiles (that hold points) of level 0, the level where points become discs,
a middle level and the deepest: ``ours`` = ``TileMap.tile`` + ``to_png`` (contours off: the same information
as datashader's; ``ours+contours`` is what the app serves by default) against datashader:
``Canvas(256, 256, x_range, y_range).points(df, "x", "y", by(cluster, count()))`` shaded by the mean colour of
the points of a pixel with a log opacity from 1 to ``FULL_COUNT`` points (our rule), and from the disc level
on ``spread`` into discs of our radius, on a canvas padded by that radius (so tiles join like ours); PNG
through our ``to_png``. ``datashader`` aggregates the whole data frame for every tile (its per-view use);
``datashader-crop`` gets only the tile's points, cut by our Morton index. Median ms a tile, median PNG bytes,
and ``ink_iou``: inked pixels shared with ours over inked pixels of either (1.0 = the same pixels drawn).

Browser: headless Debian chromium with the tests' flags (``--disable-gpu``: WebGL is SwiftShader, software),
viewport 1400 x 1000, one ``isoscope app`` on the atlas (bench/atlas.py's ``app_server``), pages measured one
after the other in fresh contexts. (a) ``ours``: the Atlas page (canvas 2-D component); a cold visit first,
which also warms the server's tile cache for every view the measured visit shows. (b) ``deck-tiles``: deck.gl
(the bundle pydeck ships, ``pydeck/nbextension/static/index.js``, global ``deck``) ``TileLayer`` + one
``BitmapLayer`` per tile in an ``OrthographicView`` of the same size, view and zoom, fetching the SAME PNGs
from the app's tile route (same origin: its HTML and the bundle are answered by a Playwright route at a path
of the app's origin, and the routes are removed before the map is created, so no tile request is
intercepted). (c) ``deck-points``: every point as a ``ScatterplotLayer`` point (1 px
radius), data handed over as binary attributes (up to ``SCATTER_MAX`` points; 3 frames). Per page: ``first_draw_ms`` from the map's start (ours: its
first frame; deck: ``new Deck``) to the first frame with every visible tile drawn, ``nav_ms`` from navigation
to that frame; ``drag_*``: bench/atlas.py's 30-step Playwright drag (median ms between frames, median draw
ms; its pace is set by Playwright's input events, not by the renderer); ``raf_*``: a pan driven from inside the
page, one step of (4, 2) px at every animation frame for 60 frames (deck: ``viewState``; ours:
the same mouse events its listeners take), so the frame rate is what the renderer sustains; ``deep_raf_*``:
the same pan ``DEEP_LEVELS`` levels deeper (ours: the wheel about the densest point from the whole map; deck:
ours' resulting view), where new tiles arrive while it moves (``*_incomplete_frames``: frames drawn with
tiles still missing, their ancestors standing in). Frame times come from each renderer's own frame hooks
(ours: its frame log; deck: ``onBeforeRender`` / ``onAfterRender``); ``draw`` is main-thread time only (the
software rasteriser works in the GPU process: the gap between frames is the cost). Every page: the hosts it
requested (only the app's may appear), a screenshot's inked share (non-blank); ``view_offset_px`` how far
deck's view ended from ours after the same drag and pan (its pan starts a few px into the drag), and
``ink_iou_vs_ours`` the inked pixels of both screenshots at ours' final view (deck set to it).

Load: ``os.getloadavg()`` at the start, between stages and at the end; other jobs may share the cores, so
the ratios measured side by side are what count. Prints a table on stderr, then ONE JSON object last.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlparse

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench import atlas as bench_atlas  # noqa: E402  bench/atlas.py: the app server and the map helpers

QUICK_POINTS = 100_000
PER_LEVEL = 12
QUICK_PER_LEVEL = 6
VIEWPORT = {"width": 1400, "height": 1000}
RAF_FRAMES, RAF_BUDGET_MS, RAF_STEP = 60, 60_000, (4, 2)  # the same 240 x 120 px as the drag, a step every frame
DEEP_LEVELS = 5  # the second in-page pan: this many levels deeper, about the densest point
SCATTER_MAX = 200_000  # the brute-force baseline only where a frame takes seconds, not minutes
BENCH_PATH = "/isoscope-bench-renderers"  # answered by a Playwright route on the app's origin, never the app


def load() -> float:
    return round(os.getloadavg()[0], 2)


# ------------------------------------------------------------------ server side: one tile, three ways


class Datashaded:
    """Datashader tiles of the same points and colours as ours: the mean colour of a pixel's points, opacity
    by our log rule, discs of our radius from the level where ours draws discs."""

    def __init__(self, tmap, colors_sorted: np.ndarray) -> None:
        import pandas as pd

        self.tmap = tmap
        uniq, code = np.unique(colors_sorted, axis=0, return_inverse=True)  # (k, 3), (n,)
        self.key = ["#" + "".join(f"{int(v):02x}" for v in c) for c in uniq]
        self.code = code.ravel().astype(np.int32)
        self.cats = pd.CategoricalDtype(list(range(len(uniq))))
        xy = tmap.index.xy.astype(np.float64)  # (n, 2), the index's sorted order
        self.df = self._frame(xy[:, 0], xy[:, 1], self.code)

    def _frame(self, x, y, code):
        import pandas as pd

        return pd.DataFrame({"x": x, "y": y, "c": pd.Categorical.from_codes(code, dtype=self.cats)})

    def tile(self, z: int, tx: int, ty: int, crop: bool) -> np.ndarray:
        import datashader as ds
        import datashader.transfer_functions as tf

        from isoscope.atlas.tiles import DISC_MIN_ALPHA, FULL_COUNT, TILE, TOP_MIN_ALPHA

        grid = self.tmap.grid
        radius = grid.point_radius(z)
        px = 0 if radius < 1 else max(1, math.floor(radius))  # spread's circle (< px + 0.5): about our disc's area
        pix = grid.pixel(z)
        x0, y0, x1, y1 = grid.world.tile_box(z, tx, ty)
        x0, y0, x1, y1 = x0 - px * pix, y0 - px * pix, x1 + px * pix, y1 + px * pix
        df = self.df
        if crop:  # only the points of the padded tile, cut by our Morton index
            pos = self.tmap.index.positions_in_box(x0, y0, x1, y1)
            xy = self.tmap.index.xy[pos].astype(np.float64)
            df = self._frame(xy[:, 0], xy[:, 1], self.code[pos])
        side = TILE + 2 * px
        cvs = ds.Canvas(plot_width=side, plot_height=side, x_range=(x0, x1), y_range=(y0, y1))
        agg = cvs.points(df, "x", "y", ds.by("c", ds.count()))
        low = TOP_MIN_ALPHA if px == 0 else DISC_MIN_ALPHA
        img = tf.shade(agg, color_key=self.key, how="log", min_alpha=low, span=(1, FULL_COUNT))
        if px:
            img = tf.spread(img, px=px, shape="circle")
        rgba = np.flipud(np.asarray(img.data).view(np.uint8).reshape(side, side, 4))  # row 0 = top
        return np.ascontiguousarray(rgba[px : px + TILE, px : px + TILE])


def _levels(grid) -> list[int]:
    disc = next((z for z in range(grid.max_level + 1) if grid.point_radius(z) >= 1), grid.max_level)
    return sorted({0, disc, grid.max_level // 2, grid.max_level})


def server_side(atlas_dir: Path, per_level: int = PER_LEVEL, seed: int = 0) -> dict:
    """Median ms and PNG bytes a tile for ours, ours with contours, datashader and datashader on the cropped
    points, the same tiles for all, interleaved tile by tile."""
    from isoscope.atlas.folder import load_atlas
    from isoscope.atlas.raster import to_png
    from isoscope.atlas.tiles import TileMap
    from isoscope.dashboard.figures.atlas import colours

    atlas = load_atlas(atlas_dir)
    sp = atlas.spaces["raw"]
    t = time.perf_counter()
    tmap = TileMap.of(sp.xy, sp.bounds, density_grid=sp.grid, point_density=sp.density)
    colors = tmap.sorted(colours(atlas, "raw", "cluster")[0])  # (n, 3) uint8
    index_s = time.perf_counter() - t
    t = time.perf_counter()
    import datashader

    shaded = Datashaded(tmap, colors)
    frame_s = time.perf_counter() - t
    renderers = {
        "ours": lambda z, x, y: tmap.tile(colors, z, x, y, contours=False),
        "ours+contours": lambda z, x, y: tmap.tile(colors, z, x, y, contours=True),
        "datashader": lambda z, x, y: shaded.tile(z, x, y, crop=False),
        "datashader-crop": lambda z, x, y: shaded.tile(z, x, y, crop=True),
    }
    levels = _levels(tmap.grid)
    rng = np.random.default_rng(seed)
    warm = {}
    for name, draw in renderers.items():  # first calls: numba compiles datashader's kernels here
        t = time.perf_counter()
        for z in (0, tmap.grid.max_level):
            to_png(draw(z, *bench_atlas.tiles_with_points(tmap, sp.xy, z, 1, rng)[0]))
        warm[name] = round(time.perf_counter() - t, 2)
    out: dict = {}
    for z in levels:
        ms: dict[str, list[float]] = {k: [] for k in renderers}
        size: dict[str, list[int]] = {k: [] for k in renderers}
        iou: dict[str, list[float]] = {k: [] for k in renderers if k != "ours"}
        names = list(renderers)
        for i, (tx, ty) in enumerate(bench_atlas.tiles_with_points(tmap, sp.xy, z, per_level, rng)):
            ink = {}
            for name in names[i % len(names) :] + names[: i % len(names)]:  # each goes first as often: the
                draw = renderers[name]  # first to touch a tile's points pays the cache misses
                t = time.perf_counter()
                rgba = draw(z, tx, ty)
                png = to_png(rgba)
                ms[name].append((time.perf_counter() - t) * 1000)
                size[name].append(len(png))
                ink[name] = rgba[..., 3] > 0
            for name in iou:
                union = (ink[name] | ink["ours"]).sum()
                iou[name].append(float((ink[name] & ink["ours"]).sum() / union) if union else 1.0)
        out[str(z)] = {
            name: {
                "median_ms": round(float(np.median(ms[name])), 2),
                "png_bytes": int(np.median(size[name])),
                **({"ink_iou": round(float(np.median(iou[name])), 3)} if name in iou else {}),
            }
            for name in renderers
        }
        out[str(z)]["point_radius_px"] = round(tmap.grid.point_radius(z), 2)
    return {
        "datashader_version": datashader.__version__,
        "tile_levels": tmap.grid.max_level + 1,
        "levels_measured": levels,
        "tiles_per_level": per_level,
        "tilemap_seconds": round(index_s, 2),  # TileMap.of and the colours (with scipy.spatial's first import)
        "datashader_frame_seconds": round(frame_s, 2),
        "first_calls_seconds": warm,
        "by_level": out,
        "tmap": tmap,  # popped by main: the world and pyramid the browser side maps into deck.gl
    }


# ------------------------------------------------------------------ browser side


class Requests:
    """Every request a page makes: the hosts, and the first URL of a tile of the map."""

    def __init__(self, page) -> None:
        self.urls: list[str] = []
        page.on("request", lambda r: self.urls.append(r.url))
        page.on("websocket", lambda ws: self.urls.append(ws.url))

    def hosts(self) -> list[str]:
        return sorted({urlparse(u).netloc for u in self.urls if urlparse(u).scheme in ("http", "https", "ws", "wss")})

    def tile_template(self) -> str | None:
        for u in self.urls:
            path = urlparse(u).path
            if "/t/" in path and path.endswith(".png"):
                return re.sub(r"/\d+/\d+/\d+\.png$", "/{z}/{x}/{y}.png", path)
        return None


def _ink(png: bytes) -> tuple[float, np.ndarray]:
    """Share of a screenshot's pixels that are not white, and that mask (H, W) bool."""
    from PIL import Image

    img = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)
    ink = (img < 235).any(axis=2)
    return round(float(ink.mean()), 4), ink


def _stats(frames: list, prefix: str) -> dict:
    """Frames [[t, draw_ms, missing], ...]: count, median / p95 gap between frames, fps, median draw ms."""
    starts = np.array([f[0] for f in frames], float)
    draws = np.array([f[1] for f in frames], float)
    gaps = np.diff(starts)
    span = starts[-1] - starts[0] if len(starts) > 1 else 0.0
    return {
        f"{prefix}_frames": len(frames),
        f"{prefix}_frame_ms_median": round(float(np.median(gaps)), 1) if len(gaps) else None,
        f"{prefix}_frame_ms_p95": round(float(np.percentile(gaps, 95)), 1) if len(gaps) else None,
        f"{prefix}_fps": round(1000 * len(gaps) / span, 1) if span > 0 else None,
        f"{prefix}_draw_ms_median": round(float(np.median(draws)), 2) if len(draws) else None,
    }


RAF_PAN_OURS = """async (canvas, [name, n, budget, dx, dy]) => {
    const r = canvas.getBoundingClientRect();
    const x0 = r.left + r.width / 2, y0 = r.top + r.height / 2;
    const raf = () => new Promise((ok) => requestAnimationFrame(ok));
    const ev = (type, i) => new MouseEvent(type, {clientX: x0 + dx * i, clientY: y0 + dy * i, button: 0,
                                                  bubbles: true, composed: true});
    canvas.dispatchEvent(ev("mousedown", 0));
    await raf();
    const t0 = performance.now();
    let i = 1;
    for (; i <= n && performance.now() - t0 < budget; i++) {
        window.dispatchEvent(ev("mousemove", i));
        await raf();
    }
    await raf();
    const t1 = performance.now();
    window.dispatchEvent(ev("mouseup", i));
    const frames = window.__isoscopeAtlas[name].frames.filter((f) => f[0] >= t0 && f[0] <= t1);
    return {steps: i - 1, frames};
}"""


def _raf_pan_ours(page) -> dict:
    return bench_atlas._canvas(page).evaluate(RAF_PAN_OURS, [bench_atlas.MAP, RAF_FRAMES, RAF_BUDGET_MS, *RAF_STEP])


def _zoom_in_at(page, x: float, y: float, levels: int) -> None:
    """Back to the whole map (its button), then ``levels`` wheel steps of one zoom level each with the cursor on
    the world point (x, y), which the map keeps under the cursor."""
    page.locator('button[aria-label="Whole map"]').first.click()
    page.wait_for_timeout(100)
    for _ in range(levels):
        box = bench_atlas._canvas(page).bounding_box()
        sx, sy = page.evaluate(f"window.__isoscopeAtlas[{bench_atlas.MAP!r}].toScreen({x}, {y})")
        page.mouse.move(box["x"] + sx, box["y"] + sy)
        page.mouse.wheel(0, -200)  # atlas_map.js: -deltaY / 200 levels, at most one a wheel event
        page.wait_for_timeout(80)


def _ours(browser, base: str, deep_at: tuple[float, float], timeout_s: float) -> tuple[dict, dict]:
    """The Atlas page, twice in fresh contexts: a cold visit (which also fills the server's tile cache for every
    view the second one shows), then the measured visit. Each: first draw, the drag, the in-page pan, a
    screenshot, then ``DEEP_LEVELS`` levels of zoom about ``deep_at`` and the in-page pan there."""
    out: dict = {}
    for visit in ("cold", "warm"):
        ctx = browser.new_context(viewport=VIEWPORT)
        page = ctx.new_page()
        log = Requests(page)
        page.goto(f"{base}/atlas", wait_until="commit")
        drawn = bench_atlas._wait_drawn(page, timeout_s)
        if drawn is None:
            raise SystemExit(f"our map drew no complete frame in {timeout_s:.0f} s ({visit} visit)")
        m = bench_atlas._map(page)
        first = m["frames"][0][0]
        bench_atlas._settle(page, timeout_s)
        view = dict(bench_atlas._map(page)["view"])
        box = bench_atlas._canvas(page).bounding_box()
        pan = bench_atlas._pan(page)
        bench_atlas._settle(page, timeout_s)
        raf = _raf_pan_ours(page)
        bench_atlas._settle(page, timeout_s)
        page.mouse.move(box["x"] + 2, box["y"] + 2)  # no tooltip in the picture
        page.wait_for_timeout(200)
        shot = bench_atlas._canvas(page).screenshot()
        end_view = dict(bench_atlas._map(page)["view"])
        _zoom_in_at(page, *deep_at, DEEP_LEVELS)
        bench_atlas._settle(page, timeout_s)
        deep_view = dict(bench_atlas._map(page)["view"])
        deep_level = bench_atlas._map(page)["level"]
        deep = _raf_pan_ours(page)
        bench_atlas._settle(page, timeout_s)
        if visit == "cold":
            cold = {"cold_nav_ms": round(drawn, 1), "cold_first_draw_ms": round(drawn - first, 1)}
        else:
            ink, mask = _ink(shot)
            out = {
                "nav_ms": round(drawn, 1),
                "first_draw_ms": round(drawn - first, 1),
                "level": m["level"],
                **{k.replace("pan_", "drag_"): v for k, v in pan.items()},
                "raf_steps": raf["steps"],
                **_stats(raf["frames"], "raf"),
                "deep_level": deep_level,
                "deep_levels": round(deep_view["zoom"] - deep_view["fit"], 2),  # how deep the wheel took it
                "deep_raf_steps": deep["steps"],
                **_stats(deep["frames"], "deep_raf"),
                "deep_raf_incomplete_frames": sum(1 for f in deep["frames"] if f[2]),
                "ink": ink,
                "hosts": log.hosts(),
            }
            seen = {
                "view": view,
                "end_view": end_view,
                "deep_view": deep_view,
                "box": box,
                "template": log.tile_template(),
                "mask": mask,
                "shot": shot,
            }
        ctx.close()
    return {**cold, **out}, seen


DECK_PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>deck.gl renderer bench</title>
<style>html, body { margin: 0; background: #fff; } #map { position: absolute; left: 0; top: 0;
  width: __W__px; height: __H__px; overflow: hidden; }</style>
<script src="__BENCH__/deck.js"></script>
</head><body><div id="map"></div><script>
const CFG = __CFG__;
const rec = { frames: [], missing: 1, loading: 0, level: null, started: 0, error: null };
let deckgl = null, before = 0, data = null;
window.__isoscopeAtlas = {};
window.__deckVersion = deck.VERSION || null;
function counts() {
  if (CFG.mode !== "tiles") return [0, 0];  // every point is in the first frame (binary attributes, no fetch)
  const layer = deckgl.layerManager && deckgl.layerManager.getLayers().find((l) => l.id === "tiles");
  const ts = layer && layer.state && layer.state.tileset;
  if (!ts || !ts.selectedTiles || !ts.selectedTiles.length) return [1, 0];
  rec.level = ts.selectedTiles[0].index.z;
  return [ts.selectedTiles.filter((t) => !t.isLoaded).length, Array.from(ts.tiles).filter((t) => t.isLoading).length];
}
function expose() {
  const c = document.querySelector("#map canvas");
  if (c) c.classList.add("isoscope-atlas-canvas");
  window.__isoscopeAtlas[CFG.name] = { view: rec.view, level: rec.level, maxLevel: CFG.maxLevel, missing: rec.missing,
    loading: rec.loading, frames: rec.frames.slice(), started: rec.started, error: rec.error };
}
window.__benchReady = (async () => {
  if (CFG.mode === "points") {
    const [p, c] = await Promise.all(["points.bin", "colors.bin"].map((f) => fetch(`${CFG.bench}/${f}`).then((r) => r.arrayBuffer())));
    data = { length: CFG.n, attributes: { getPosition: { value: new Float32Array(p), size: 3 },
                                           getFillColor: { value: new Uint8Array(c), size: 3, normalized: true } } };
  }
  return true;
})();
window.__benchStart = () => {
  rec.started = performance.now();
  const layer = CFG.mode === "tiles"
    ? new deck.TileLayer({ id: "tiles", data: CFG.template, tileSize: 256, minZoom: 0, maxZoom: CFG.maxLevel,
        extent: [0, 0, 256, 256], maxRequests: 8,
        renderSubLayers: (props) => {
          const { left, bottom, right, top } = props.tile.bbox;
          return new deck.BitmapLayer(props, { data: null, image: props.data, bounds: [left, bottom, right, top] });
        } })
    : new deck.ScatterplotLayer({ id: "points", data, radiusUnits: "pixels", getRadius: 1, radiusMinPixels: 1,
        stroked: false, filled: true });
  rec.view = { target: CFG.target, zoom: CFG.zoom };
  deckgl = new deck.Deck({
    parent: document.getElementById("map"), width: CFG.w, height: CFG.h,
    views: new deck.OrthographicView({ id: "ortho", controller: true }),
    initialViewState: { target: CFG.target, zoom: CFG.zoom },
    layers: [layer],
    onViewStateChange: ({ viewState }) => { rec.view = viewState; },
    onBeforeRender: () => { before = performance.now(); },
    onAfterRender: () => {
      const now = performance.now();
      [rec.missing, rec.loading] = counts();
      rec.frames.push([before, now - before, rec.missing]);
      expose();
    },
    onError: (e) => { rec.error = String(e && e.message || e); expose(); },
  });
  expose();
};
window.__benchView = (target, zoom) => {
  rec.view = { target, zoom };
  deckgl.setProps({ viewState: rec.view });
};
window.__benchPan = async (n, budget, dx, dy) => {
  const raf = () => new Promise((ok) => requestAnimationFrame(ok));
  let v = { ...rec.view };
  const k = Math.pow(2, v.zoom);
  await raf();
  const t0 = performance.now();
  let i = 1;
  for (; i <= n && performance.now() - t0 < budget; i++) {
    v = { ...v, target: [v.target[0] - dx / k, v.target[1] - dy / k, 0] };
    rec.view = v;
    deckgl.setProps({ viewState: v });
    await raf();
  }
  await raf();
  const t1 = performance.now();
  return { steps: i - 1, frames: rec.frames.filter((f) => f[0] >= t0 && f[0] <= t1) };
};
</script></body></html>
"""


def _deck_bundle() -> Path:
    import pydeck

    path = Path(pydeck.__file__).parent / "nbextension" / "static" / "index.js"
    if not path.is_file():
        raise SystemExit(f"pydeck ships no deck.gl bundle at {path}")
    return path


def _deck(browser, base: str, mode: str, cfg: dict, files: dict[str, bytes], timeout_s: float) -> dict:
    """A deck.gl page on the app's origin: its HTML, the bundle and data answered by a Playwright route (removed
    before the map starts), then the same script as ours: first draw, drag, in-page pan, screenshot, and for
    tiles the in-page pan at ours' deep view."""
    ctx = browser.new_context(viewport=VIEWPORT)
    page = ctx.new_page()
    log = Requests(page)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    html = (
        DECK_PAGE.replace("__CFG__", json.dumps({**cfg, "mode": mode, "bench": BENCH_PATH}))
        .replace("__W__", str(cfg["w"]))
        .replace("__H__", str(cfg["h"]))
        .replace("__BENCH__", BENCH_PATH)
    )
    bundle = _deck_bundle()

    def answer(route) -> None:
        name = urlparse(route.request.url).path.rsplit("/", 1)[-1]
        if name == "deck.html":
            route.fulfill(body=html, content_type="text/html")
        elif name == "deck.js":
            route.fulfill(path=str(bundle), content_type="text/javascript")
        elif name in files:
            route.fulfill(body=files[name], content_type="application/octet-stream")
        else:
            route.fulfill(status=404)

    page.route(f"{base}{BENCH_PATH}/**", answer)
    t_nav = time.perf_counter()
    page.goto(f"{base}{BENCH_PATH}/deck.html", wait_until="load")
    page.evaluate("window.__benchReady")
    bundle_ms = page.evaluate("performance.now()")
    page.unroute_all(behavior="wait")  # nothing the map fetches is intercepted
    page.evaluate("window.__benchStart()")
    drawn = bench_atlas._wait_drawn(page, timeout_s)
    m = bench_atlas._map(page) or {}
    if drawn is None:
        raise SystemExit(f"deck.gl {mode}: no complete frame in {timeout_s:.0f} s (error: {m.get('error')}; {errors})")
    out = {
        "deck_version": page.evaluate("window.__deckVersion"),
        "bundle_loaded_ms": round(bundle_ms, 1),
        "nav_ms": round(drawn, 1),
        "first_draw_ms": round(drawn - m["started"], 1),
        "level": m["level"],
    }
    bench_atlas._settle(page, timeout_s)
    box = bench_atlas._canvas(page).bounding_box()
    if mode == "tiles":
        pan = bench_atlas._pan(page)
        out.update({k.replace("pan_", "drag_"): v for k, v in pan.items()})
        bench_atlas._settle(page, timeout_s)
        frames, budget = RAF_FRAMES, RAF_BUDGET_MS
    else:  # brute force: a few frames of seconds each
        frames, budget = 3, 12_000
    raf = page.evaluate("([n, b, dx, dy]) => window.__benchPan(n, b, dx, dy)", [frames, budget, *RAF_STEP])
    out["raf_steps"] = raf["steps"]
    out.update(_stats(raf["frames"], "raf"))
    bench_atlas._settle(page, timeout_s)
    out["end_view"] = bench_atlas._map(page)["view"]
    if mode == "tiles":  # the picture of exactly ours' view (deck's drag starts a few px late: view_offset_px)
        page.evaluate("([t, z]) => window.__benchView(t, z)", [cfg["end_target"], cfg["end_zoom"]])
        bench_atlas._settle(page, timeout_s)
    page.mouse.move(box["x"] + 2, box["y"] + 2)
    page.wait_for_timeout(200)
    shot = bench_atlas._canvas(page).screenshot()
    if mode == "tiles":
        page.evaluate("([t, z]) => window.__benchView(t, z)", [cfg["deep_target"], cfg["deep_zoom"]])
        bench_atlas._settle(page, timeout_s)
        out["deep_level"] = bench_atlas._map(page)["level"]
        deep = page.evaluate("([n, b, dx, dy]) => window.__benchPan(n, b, dx, dy)", [RAF_FRAMES, budget, *RAF_STEP])
        out["deep_raf_steps"] = deep["steps"]
        out.update(_stats(deep["frames"], "deep_raf"))
        out["deep_raf_incomplete_frames"] = sum(1 for f in deep["frames"] if f[2])
        bench_atlas._settle(page, timeout_s)
    out["ink"], mask = _ink(shot)
    out["hosts"] = log.hosts()
    out["page_errors"] = errors[:3]
    out["_mask"], out["_shot"] = mask, shot
    out["wall_s"] = round(time.perf_counter() - t_nav, 1)
    ctx.close()
    return out


def client_side(atlas_dir: Path, tmap, n: int, scatter: bool, shots: Path | None, timeout_s: float = 300.0) -> dict:
    from playwright.sync_api import sync_playwright

    from isoscope.atlas.folder import load_atlas
    from isoscope.dashboard.figures.atlas import colours
    from tests.chromium import CHROMIUM_ARGS, chromium_path, keep_children_at_our_priority

    exe = chromium_path()
    if exe is None:
        raise SystemExit("chromium not found: run scripts/ensure_browser.sh")
    keep_children_at_our_priority()  # chromium must not renice itself above the other jobs on the machine
    w = tmap.grid.world

    def to_deck(x, y):  # world -> deck's orthographic units: the world square is [0, 256]^2, y down
        return (np.asarray(x) - w.x0) / w.size * 256, (w.y0 + w.size - np.asarray(y)) / w.size * 256

    sp = load_atlas(atlas_dir).spaces["raw"]
    deep_at = tuple(float(v) for v in sp.xy[int(np.argmax(sp.density))])  # the densest point: tiles full of points
    out: dict = {"load_start": load()}
    with bench_atlas.app_server(atlas_dir) as base, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
        out["chromium"] = browser.version
        t = time.perf_counter()
        ours, seen = _ours(browser, base, deep_at, timeout_s)
        ours["wall_s"] = round(time.perf_counter() - t, 1)
        out["ours"] = ours
        out["load_after_ours"] = load()
        if seen["template"] is None:
            raise SystemExit("the Atlas page fetched no tile: nothing to hand deck.gl")
        view, end, box, deep = seen["view"], seen["end_view"], seen["box"], seen["deep_view"]
        cfg = {
            "name": bench_atlas.MAP,
            "w": round(box["width"]),
            "h": round(box["height"]),
            "target": [*(float(v) for v in to_deck(view["cx"], view["cy"])), 0.0],
            "zoom": float(view["zoom"]),
            "end_target": [*(float(v) for v in to_deck(end["cx"], end["cy"])), 0.0],
            "end_zoom": float(end["zoom"]),
            "deep_target": [*(float(v) for v in to_deck(deep["cx"], deep["cy"])), 0.0],
            "deep_zoom": float(deep["zoom"]),
            "maxLevel": tmap.grid.max_level,
            "template": seen["template"],
            "n": n,
        }
        out["viewport_px"] = [cfg["w"], cfg["h"]]
        deck_tiles = _deck(browser, base, "tiles", cfg, {}, timeout_s)
        out["load_after_deck_tiles"] = load()
        mask = deck_tiles.pop("_mask")
        dv = deck_tiles.pop("end_view")
        ex, ey = to_deck(end["cx"], end["cy"])  # where both maps should be after the same drag and pan
        k = 2 ** float(end["zoom"])
        deck_tiles["view_offset_px"] = round(float(np.hypot(dv["target"][0] - ex, dv["target"][1] - ey) * k), 1)
        h, wd = min(seen["mask"].shape[0], mask.shape[0]), min(seen["mask"].shape[1], mask.shape[1])
        a, b = seen["mask"][:h, :wd], mask[:h, :wd]  # the canvases may differ by a pixel (ours: a fractional box)
        # the same tiles in the same view: the same picture, but for ours' labels and toolbar
        deck_tiles["ink_iou_vs_ours"] = round(float((a & b).sum() / max(1, (a | b).sum())), 3)
        out["deck_tiles"] = deck_tiles
        shots_out = {"ours": seen["shot"], "deck_tiles": deck_tiles.pop("_shot")}
        if scatter:
            atlas = load_atlas(atlas_dir)
            px, py = to_deck(sp.xy[:, 0], sp.xy[:, 1])
            pos = np.stack([px, py, np.zeros_like(px)], axis=1).astype(np.float32)  # (n, 3)
            rgb = np.ascontiguousarray(colours(atlas, "raw", "cluster")[0], np.uint8)  # (n, 3)
            files = {"points.bin": pos.tobytes(), "colors.bin": rgb.tobytes()}
            points = _deck(browser, base, "points", cfg, files, timeout_s)
            points.pop("_mask")
            points.pop("end_view")
            shots_out["deck_points"] = points.pop("_shot")
            points["points"] = n
            out["deck_points"] = points
            out["load_after_deck_points"] = load()
        browser.close()
    if shots is not None:
        shots.mkdir(parents=True, exist_ok=True)
        for name, png in shots_out.items():
            (shots / f"{name}.png").write_bytes(png)
        out["screenshots"] = str(shots)
    app_host = urlparse(base).netloc
    pages = [k for k in ("ours", "deck_tiles", "deck_points") if k in out]
    out["foreign_hosts"] = sorted({h for k in pages for h in out[k]["hosts"] if h != app_host})
    out["all_drew"] = all(out[k]["ink"] > 0.01 for k in pages)
    return out


# ------------------------------------------------------------------ report


def _table(result: dict) -> str:
    lines = [f"{result['points']:,} points, load {result['load']}"]
    srv = result["server"]
    lines.append(f"server: ms a 256-px tile (PNG KiB, ink IoU vs ours), datashader {srv['datashader_version']}")
    names = ("ours", "ours+contours", "datashader", "datashader-crop")
    lines.append("  level radius " + "".join(f"{n:>28}" for n in names))
    for z, row in srv["by_level"].items():
        cells = []
        for name in names:
            c = row[name]
            iou = f", {c['ink_iou']:.2f}" if "ink_iou" in c else ""
            cells.append(f"{c['median_ms']:>9.1f} ({c['png_bytes'] / 1024:.1f}{iou})")
        lines.append(f"  {z:>5} {row['point_radius_px']:>6}" + "".join(f"{c:>28}" for c in cells))
    cl = result["client"]
    lines.append(
        f"browser ({cl['chromium']}, map {cl['viewport_px'][0]} x {cl['viewport_px'][1]} px, software WebGL): ms; "
        "gap = between frames (median), pan = in-page pan at the whole map / deep = 5 levels deeper"
    )
    head = (
        "first draw",
        "nav",
        "drag gap",
        "drag draw",
        "pan gap",
        "pan fps",
        "pan draw",
        "deep gap",
        "deep fps",
        "ink",
    )
    lines.append(f"  {'page':<12}" + "".join(f"{h:>10}" for h in head))

    def f(v, d=1) -> str:
        return "-" if v is None else f"{v:.{d}f}"

    for k in ("ours", "deck_tiles", "deck_points"):
        if k not in cl:
            continue
        r = cl[k]
        cells = (
            f(r["first_draw_ms"], 0),
            f(r["nav_ms"], 0),
            f(r.get("drag_frame_ms_median")),
            f(r.get("drag_draw_ms_median"), 2),
            f(r["raf_frame_ms_median"]),
            f(r["raf_fps"]),
            f(r["raf_draw_ms_median"], 2),
            f(r.get("deep_raf_frame_ms_median")),
            f(r.get("deep_raf_fps")),
            f(r["ink"], 3),
        )
        lines.append(f"  {k:<12}" + "".join(f"{c:>10}" for c in cells))
    lines.append(f"  hosts other than the app's: {cl['foreign_hosts'] or 'none'}; every page drew: {cl['all_drew']}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--quick", action="store_true", help=f"{QUICK_POINTS:,} points, {QUICK_PER_LEVEL} tiles a level, no baseline"
    )
    ap.add_argument("--n", type=int, default=None, help="points (default: 100,000 with --quick, else 1,000,000)")
    ap.add_argument("--out", default=None, help="atlas folder (default: bench/atlas.py's cache folder for n)")
    ap.add_argument("--per-level", type=int, default=None, help=f"tiles timed per level (default {PER_LEVEL})")
    ap.add_argument(
        "--scatter",
        action=argparse.BooleanOptionalAction,
        default=None,
        help=f"the ScatterplotLayer baseline (seconds a frame; default: up to {SCATTER_MAX:,} points, not --quick)",
    )
    ap.add_argument("--screenshots", default=None, help="folder for the three pages' screenshots")
    args = ap.parse_args()
    import importlib.util

    if importlib.util.find_spec("datashader") is None:
        raise SystemExit("datashader is not installed here: run `make bench-renderers` (its own venv, .venv-renderers)")
    from isoscope.atlas.synthetic import synthetic_atlas
    from isoscope.cache import default_cache_dir

    n = args.n or (QUICK_POINTS if args.quick else 1_000_000)
    out = Path(args.out) if args.out else default_cache_dir() / "bench-atlas-v2" / f"synthetic-vectors-{n}"
    t0 = time.perf_counter()
    result: dict = {"points": n, "load": {"start": load()}, "cores": os.cpu_count(), "nice": os.nice(0)}
    t = time.perf_counter()
    synthetic_atlas(out, n)
    result["atlas_seconds"] = round(time.perf_counter() - t, 1)  # 0 when cached
    t = time.perf_counter()
    server = server_side(out, args.per_level or (QUICK_PER_LEVEL if args.quick else PER_LEVEL))
    tmap = server.pop("tmap")
    server["seconds"] = round(time.perf_counter() - t, 1)
    result["server"] = server
    result["load"]["after_server"] = load()
    scatter = (n <= SCATTER_MAX and not args.quick) if args.scatter is None else args.scatter
    shots = Path(args.screenshots) if args.screenshots else Path(tempfile.mkdtemp(prefix="atlas-renderers-shots-"))
    t = time.perf_counter()
    result["client"] = client_side(out, tmap, n, scatter, shots)
    result["client"]["seconds"] = round(time.perf_counter() - t, 1)
    result["load"]["end"] = load()
    result["seconds"] = round(time.perf_counter() - t0, 1)
    print(_table(result), file=sys.stderr)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
