"""The map widget as a page sees it: jupyter-scatter keeps its regl-scatterplot instance on its container
element (``container.api``), which publishes ``drawing`` after every frame it renders. Shared by the widget's
browser test and ``bench/widget.py``: wait for the first frame that shows every point, count frames while the
mouse pans, find a point's place on the screen, read the WebGL renderer."""

from __future__ import annotations

FIND_API = """() => {
    for (const el of document.querySelectorAll('.jp-OutputArea-output div')) { if (el.api) return el.api; }
    return null;
}"""

# window.__map: t0 (performance.now() when the watch began), api (once the widget exists), drawn (ms from t0 to the
# first frame rendered with every one of the n points), late (the points were drawn before the watch saw the api)
WATCH_FIRST_DRAW = (
    """n => {
    const find = """
    + FIND_API
    + """;
    const state = {t0: performance.now(), api: null, drawn: null, late: false};
    window.__map = state;
    const full = api => api.get('isPointsDrawn') && api.get('points').length === n;
    const look = () => {
        const api = find();
        if (!api) { requestAnimationFrame(look); return; }
        state.api = api;
        if (full(api)) { state.drawn = performance.now() - state.t0; state.late = true; return; }
        const sub = api.subscribe('drawing', () => {
            if (state.drawn === null && full(api)) { state.drawn = performance.now() - state.t0; api.unsubscribe(sub); }
        });
    };
    look();
}"""
)

# what the scatterplot holds and would draw: every point given, none filtered out, all inside the first view
POINTS = """() => {
    const api = window.__map.api;
    return {points: api.get('points').length, filtered: api.get('isPointsFiltered'),
            in_view: api.get('pointsInView').length, drawn: api.get('isPointsDrawn'),
            performance_mode: api.get('performanceMode'), point_size: api.get('pointSize'),
            opacity: api.get('opacity')};
}"""

# the painted share of the canvas (pixels that differ from its top-left corner, the background)
PAINTED = """() => {
    const c = window.__map.api.get('canvas');
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let painted = 0;
    for (let i = 0; i < d.length; i += 4) {
        if (d[i] !== d[0] || d[i + 1] !== d[1] || d[i + 2] !== d[2] || d[i + 3] !== d[3]) painted++;
    }
    return painted / (d.length / 4);
}"""

START_FRAMES = """() => {
    const rec = {draws: [], rafs: [], stop: false};
    window.__frames = rec;
    rec.sub = window.__map.api.subscribe('drawing', () => rec.draws.push(performance.now()));
    const tick = t => { if (!rec.stop) { rec.rafs.push(t); requestAnimationFrame(tick); } };
    requestAnimationFrame(tick);
}"""

STOP_FRAMES = """() => {
    const rec = window.__frames;
    rec.stop = true;
    window.__map.api.unsubscribe(rec.sub);
    return {draws: rec.draws, rafs: rec.rafs};
}"""

# the page position of point i (or of the first point in view when i is not), for the mouse
SCREEN_POINT = """i => {
    const api = window.__map.api;
    const inView = api.get('pointsInView');
    const j = inView.includes(i) ? i : inView[0];
    const [x, y] = api.getScreenPosition(j);
    const r = api.get('canvas').getBoundingClientRect();
    return {point: j, x: r.left + x, y: r.top + y};
}"""

HOVERED = "() => window.__map.api.get('hoveredPoint')"

WEBGL_RENDERER = """() => {
    const gl = document.createElement('canvas').getContext('webgl');
    if (!gl) return 'no webgl';
    const info = gl.getExtension('WEBGL_debug_renderer_info');
    return info ? gl.getParameter(info.UNMASKED_RENDERER_WEBGL) : gl.getParameter(gl.RENDERER);
}"""


def watch_first_draw(page, n: int) -> None:
    """Start watching for the widget's first frame of all ``n`` points (call just before running its cell)."""
    page.evaluate(WATCH_FIRST_DRAW, n)


def wait_first_draw(page, timeout_ms: float) -> float:
    """Milliseconds from ``watch_first_draw`` to the first frame that showed every point."""
    page.wait_for_function("() => window.__map && window.__map.drawn !== null", timeout=timeout_ms, polling=100)
    return float(page.evaluate("() => window.__map.drawn"))
