// The Atlas map: a Streamlit custom component (v2) that draws the tile pyramid served by the app's own
// server (isoscope.dashboard.tiles) on a 2-D canvas. No WebGL, no library, no request to another host.
//
// - Zoom with the mouse wheel (about the cursor) or the +/- buttons, pan by dragging. The tiles of the level
//   whose pixels are at least as fine as the screen's are drawn (a tile is never shown enlarged once it has
//   arrived; until then its nearest loaded ancestor stands in), so every zoom is sharp.
// - Hover asks the server for the point under the cursor (one spatial-index lookup) and shows its text as
//   plain text; a click selects it (shift-click adds), shift-drag (or the box button) selects a region.
//   Selections go back to Python as trigger values: {"click": {row, add}} and {"box": [x0, y0, x1, y1]}.
//   Hover and click share one pick path (`pick`), each with the pixel and view of its gesture taken once, at
//   the event (`gesture`); the tooltip only ever names the pixel and view under the pointer now (a move or a
//   view change hides it), and a click where it shows selects the row it names.
// - Cluster labels of the level that suits the zoom, placed largest first, never overlapping.
// - window.__isoscopeAtlas[name]: the view, the placed labels, frame times and the last picks (each with its
//   pixel, view and row), for tests and benchmarks.

const STATE = new WeakMap(); // host element -> map state
const VIEWS = new Map(); // map name -> last view (kept if the component is torn down and mounted again)
const LABEL_STEP = 1.5; // zoom levels between two label levels
const MIN_LABELS = 5; // regions the fitted view names at least, where a level has them
const MAX_LOADS = 8;
const CACHE_TILES = 600;
const HOVER_MS = 40;
const PICK_PX = 8;
const PICKS_KEPT = 50; // picks logged for tests

function el(tag, cls, parent) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (parent) parent.appendChild(e);
  return e;
}

function createMap(host) {
  const root = el("div", "isoscope-atlas", host);
  const canvas = el("canvas", "isoscope-atlas-canvas", root);
  const tip = el("div", "isoscope-atlas-tip", root);
  const bar = el("div", "isoscope-atlas-bar", root);
  const status = el("div", "isoscope-atlas-status", root);
  const button = (label, title) => {
    const b = el("button", "", bar);
    b.type = "button";
    b.textContent = label;
    b.title = title;
    b.setAttribute("aria-label", title);
    return b;
  };
  const s = {
    root, canvas, tip, status, data: null, view: null, tiles: new Map(), queue: [], loading: 0,
    dirty: true, drag: null, boxMode: false, placed: [], frames: [], hoverTimer: 0, hoverSeq: 0, raf: 0,
    pending: null, shown: null, picks: [],
    buttons: {
      zin: button("+", "Zoom in"),
      zout: button("\u2212", "Zoom out"),
      fit: button("\u21BA", "Fit the map (press again: every stray point too)"),
      box: button("\u25AD", "Box select (or shift-drag)"),
      png: button("\u2913", "Download this view as PNG"),
    },
  };
  s.ctx = canvas.getContext("2d");
  return s;
}

// ------------------------------------------------------------------ geometry

function size(s) {
  const r = s.root.getBoundingClientRect();
  return { w: Math.max(50, Math.round(r.width)), h: Math.max(50, Math.round(s.data.height)) };
}

function scaleAt(s, zoom) {
  // screen pixels per world unit
  return (s.data.world.tile * Math.pow(2, zoom)) / s.data.world.size;
}

function scale(s) {
  return scaleAt(s, s.view.zoom);
}

function levelAt(s, zoom) {
  // the tile level drawn at this zoom: its pixels at least as fine as the screen's
  const dpr = window.devicePixelRatio || 1;
  return Math.max(0, Math.min(s.data.world.maxLevel, Math.ceil(zoom + Math.log2(dpr) - 1e-6)));
}

function toScreen(s, x, y) {
  const { w, h } = size(s);
  const k = scale(s);
  return [w / 2 + (x - s.view.cx) * k, h / 2 - (y - s.view.cy) * k];
}

function unproject(s, v, px, py) {
  // the world point at pixel (px, py) of the view v = {cx, cy, zoom, w, h}
  const k = scaleAt(s, v.zoom);
  return [v.cx + (px - v.w / 2) / k, v.cy - (py - v.h / 2) / k];
}

function toWorld(s, px, py) {
  const { w, h } = size(s);
  return unproject(s, { ...s.view, w, h }, px, py);
}

function boxView(s, b) {
  // the view that shows the box b = [x0, y0, x1, y1] whole, centred
  const { w, h } = size(s);
  const world = s.data.world;
  const span = Math.max((b[2] - b[0]) / w, (b[3] - b[1]) / h); // world units per pixel to fit the box
  return { cx: (b[0] + b[2]) / 2, cy: (b[1] + b[3]) / 2, zoom: Math.log2(world.size / (world.tile * span)) };
}

function fitView(s, all = false) {
  // The first view (and the fit button's): the box holding the bulk of the points (data.fit, a few stray
  // points left outside), or every point (data.bounds) when `all`; the zoom-out limit reaches every point.
  // `auto`: untouched by the user, so a resize fits again.
  const whole = boxView(s, s.data.bounds);
  const bulk = s.data.fit ? boxView(s, s.data.fit) : whole;
  const v = all ? whole : bulk;
  return { ...v, fit: bulk.zoom, min: Math.min(bulk.zoom, whole.zoom) - 2, auto: true, all };
}

function clampZoom(s, z) {
  const lowest = s.view.min ?? s.view.fit - 2;
  return Math.min(Math.max(z, lowest), s.data.world.maxLevel + 1);
}

function zoomAt(s, px, py, dz) {
  const [wx, wy] = toWorld(s, px, py);
  s.view.auto = false;
  s.view.zoom = clampZoom(s, s.view.zoom + dz);
  const [nx, ny] = toWorld(s, px, py);
  s.view.cx += wx - nx;
  s.view.cy += wy - ny;
  redraw(s);
}

// ------------------------------------------------------------------ tiles

function tileUrl(template, z, x, y) {
  return template.replace("{z}", z).replace("{x}", x).replace("{y}", y);
}

function visibleTiles(s, z) {
  const world = s.data.world;
  const { w, h } = size(s);
  const [x0, y1] = toWorld(s, 0, 0);
  const [x1, y0] = toWorld(s, w, h);
  const side = world.size / Math.pow(2, z);
  const n = Math.pow(2, z);
  const c0 = Math.max(0, Math.floor((x0 - world.x0) / side));
  const c1 = Math.min(n - 1, Math.floor((x1 - world.x0) / side));
  const r0 = Math.max(0, Math.floor((world.y0 + world.size - y1) / side));
  const r1 = Math.min(n - 1, Math.floor((world.y0 + world.size - y0) / side));
  const out = [];
  for (let ty = r0; ty <= r1; ty++) for (let tx = c0; tx <= c1; tx++) out.push([tx, ty]);
  return out;
}

function getTile(s, url) {
  let t = s.tiles.get(url);
  if (t) {
    s.tiles.delete(url); // most recently used last
    s.tiles.set(url, t);
  } else {
    t = { img: null, state: "queued", url };
    s.tiles.set(url, t);
    if (s.tiles.size > CACHE_TILES) {
      for (const [key, old] of s.tiles) {
        if (s.tiles.size <= CACHE_TILES) break;
        if (old.state !== "loading") s.tiles.delete(key);
      }
    }
  }
  if (t.state === "queued") s.queue.push(t);
  return t;
}

function pump(s) {
  while (s.loading < MAX_LOADS && s.queue.length) {
    const t = s.queue.shift(); // in the order the current view asked for them
    if (t.state !== "queued" || s.tiles.get(t.url) !== t) continue;
    t.state = "loading";
    s.loading += 1;
    const img = new Image();
    img.decoding = "async";
    img.onload = () => {
      t.img = img;
      t.state = "ready";
      s.loading -= 1;
      redraw(s);
      pump(s);
    };
    img.onerror = () => {
      t.state = "failed";
      s.loading -= 1;
      s.failed = (s.failed || 0) + 1;
      redraw(s);
      pump(s);
    };
    img.src = t.url;
  }
}

function drawTiles(s, template, z) {
  const ctx = s.ctx;
  const world = s.data.world;
  const side = world.size / Math.pow(2, z);
  const k = scale(s);
  let missing = 0;
  for (const [tx, ty] of visibleTiles(s, z)) {
    const [px, py] = toScreen(s, world.x0 + tx * side, world.y0 + world.size - ty * side);
    const d = side * k;
    const t = getTile(s, tileUrl(template, z, tx, ty));
    if (t.state === "ready") {
      ctx.drawImage(t.img, px, py, d, d);
      continue;
    }
    missing += 1;
    for (let up = 1; up <= z; up++) {
      // the nearest loaded ancestor, cropped to this tile, stands in until the tile arrives
      const f = Math.pow(2, up);
      const a = s.tiles.get(tileUrl(template, z - up, Math.floor(tx / f), Math.floor(ty / f)));
      if (a && a.state === "ready") {
        const sub = world.tile / f;
        ctx.drawImage(a.img, (tx % f) * sub, (ty % f) * sub, sub, sub, px, py, d, d);
        break;
      }
    }
  }
  return missing;
}

// ------------------------------------------------------------------ labels

function placeLabels(s) {
  const labels = s.data.labels || [];
  const levels = s.data.levels || 0;
  s.placed = [];
  if (!labels.length || !levels) return;
  // the fitted view names the coarsest level with at least MIN_LABELS regions (a corpus that is one broad
  // blob has one or two coarse basins), each LABEL_STEP of zoom a finer one
  let base = 0;
  while (base < levels - 1 && labels.filter((l) => l[0] === base).length < MIN_LABELS) base++;
  const step = Math.floor((s.view.zoom - s.view.fit) / LABEL_STEP);
  const level = Math.max(0, Math.min(levels - 1, base + step));
  s.labelBase = base;
  const ctx = s.ctx;
  const { w, h } = size(s);
  const boxes = [];
  const font = level === 0 ? 14 : 12;
  ctx.font = `${level === 0 ? "600 " : ""}${font}px sans-serif`;
  ctx.textAlign = "center";
  ctx.textBaseline = "middle";
  for (const [lv, x, y, , text] of labels) {
    if (lv !== level) continue; // sorted by size, largest first, by the server
    const [px, py] = toScreen(s, x, y);
    const tw = ctx.measureText(text).width + 10;
    const th = font + 8;
    const b = [px - tw / 2, py - th / 2, px + tw / 2, py + th / 2];
    if (b[0] < 0 || b[1] < 0 || b[2] > w || b[3] > h) continue;
    if (boxes.some((o) => b[0] < o[2] + 2 && o[0] < b[2] + 2 && b[1] < o[3] + 2 && o[1] < b[3] + 2)) continue;
    boxes.push(b);
    ctx.fillStyle = "rgba(255,255,255,0.82)";
    ctx.fillRect(b[0], b[1], tw, th);
    ctx.fillStyle = "#1a1d29";
    ctx.fillText(text, px, py + 0.5);
    s.placed.push({ text, level, box: b });
  }
}

// ------------------------------------------------------------------ drawing

function redraw(s) {
  s.dirty = true;
  if (!s.raf) s.raf = requestAnimationFrame(() => frame(s));
}

function frame(s) {
  s.raf = 0;
  if (!s.dirty || !s.data) return;
  s.dirty = false;
  const t0 = performance.now();
  const { w, h } = size(s);
  const dpr = window.devicePixelRatio || 1;
  if (s.canvas.width !== Math.round(w * dpr) || s.canvas.height !== Math.round(h * dpr)) {
    s.canvas.width = Math.round(w * dpr);
    s.canvas.height = Math.round(h * dpr);
    s.canvas.style.width = `${w}px`;
    s.canvas.style.height = `${h}px`;
  }
  const ctx = s.ctx;
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.imageSmoothingEnabled = true;
  ctx.fillStyle = "#ffffff";
  ctx.fillRect(0, 0, w, h);
  const z = levelAt(s, s.view.zoom);
  s.queue = []; // only what this view needs is fetched
  let missing = drawTiles(s, s.data.tiles, z);
  if (s.data.highlight) missing += drawTiles(s, s.data.highlight, z);
  drawSelection(s);
  if (s.data.showLabels) placeLabels(s);
  else s.placed = [];
  if (s.drag && s.drag.box) {
    const [a, b] = [s.drag.start, s.drag.now];
    ctx.strokeStyle = "#4c6ef5";
    ctx.fillStyle = "rgba(76,110,245,0.12)";
    ctx.lineWidth = 1.5;
    ctx.fillRect(Math.min(a[0], b[0]), Math.min(a[1], b[1]), Math.abs(a[0] - b[0]), Math.abs(a[1] - b[1]));
    ctx.strokeRect(Math.min(a[0], b[0]), Math.min(a[1], b[1]), Math.abs(a[0] - b[0]), Math.abs(a[1] - b[1]));
  }
  pump(s);
  s.level = z;
  s.missing = missing;
  s.status.textContent = s.failed ? "Some tiles could not be loaded (open the app with `isoscope app`)." : "";
  const t1 = performance.now();
  s.frames.push([t0, t1 - t0, missing]);
  if (s.frames.length > 600) s.frames.splice(0, s.frames.length - 600);
  const tipAt = s.shown ? s.shown.at : s.pending;
  if (tipAt && !sameView(tipAt, gesture(s, tipAt.px, tipAt.py))) hideTip(s); // it named another view's pixel
  expose(s);
}

function drawSelection(s) {
  const pts = s.data.selected || [];
  const ctx = s.ctx;
  ctx.strokeStyle = "#d6336c";
  ctx.lineWidth = 2;
  for (const [x, y] of pts) {
    const [px, py] = toScreen(s, x, y);
    ctx.beginPath();
    ctx.arc(px, py, 6, 0, 2 * Math.PI);
    ctx.stroke();
  }
}

function expose(s) {
  window.__isoscopeAtlas = window.__isoscopeAtlas || {};
  window.__isoscopeAtlas[s.data.name || "map"] = {
    view: { ...s.view },
    level: s.level,
    labelBase: s.labelBase,
    fit: s.data.fit,
    bounds: s.data.bounds,
    maxLevel: s.data.world.maxLevel,
    pick: s.data.pick,
    missing: s.missing,
    loading: s.loading,
    placed: s.placed.map((p) => ({ ...p })),
    frames: s.frames.slice(),
    picks: s.picks, // [{kind: "hover" | "click", px, py, view: {cx, cy, zoom, w, h, level}, row, named}]
    box: () => {
      const { w, h } = size(s);
      const [x0, y1] = toWorld(s, 0, 0);
      const [x1, y0] = toWorld(s, w, h);
      return [x0, y0, x1, y1];
    },
    toScreen: (x, y) => toScreen(s, x, y),
    toWorld: (px, py) => toWorld(s, px, py),
  };
}

// ------------------------------------------------------------------ hover, click, box

function local(s, e) {
  const r = s.canvas.getBoundingClientRect();
  return [e.clientX - r.left, e.clientY - r.top];
}

function gesture(s, px, py) {
  // A pointer gesture's pixel and the view it was made on, taken once, at the event: its pick reads these, never
  // the live view, so a view that changes before the answer (a refit, a rerun) cannot move what it names.
  const { w, h } = size(s);
  const v = s.view;
  const level = levelAt(s, v.zoom);
  return { px, py, cx: v.cx, cy: v.cy, zoom: v.zoom, w, h, level, pick: s.data.pick, mark: s.data.mark || "" };
}

const VIEW_KEYS = ["cx", "cy", "zoom", "w", "h", "level", "pick", "mark"];

function sameView(a, b) {
  return VIEW_KEYS.every((k) => a[k] === b[k]);
}

function samePixel(a, b) {
  return !!a && !!b && a.px === b.px && a.py === b.py && sameView(a, b);
}

async function pick(s, at) {
  // THE pick, for hover and click alike: the row the server names at pixel (px, py) of the gesture's view (the
  // nearest point within PICK_PX, a lit-up point first where its yellow disc, drawn on top, reaches the pixel)
  const [x, y] = unproject(s, at, at.px, at.py);
  const r = PICK_PX / scaleAt(s, at.zoom);
  const lit = at.mark ? `&lit=${encodeURIComponent(at.mark)}` : "";
  try {
    const res = await fetch(`${at.pick}?x=${x}&y=${y}&r=${r}&z=${at.level}${lit}`, { credentials: "same-origin" });
    return res.ok ? await res.json() : null;
  } catch (_err) {
    return null;
  }
}

function logPick(s, kind, at, hit, named) {
  const { px, py, cx, cy, zoom, w, h, level } = at;
  s.picks.push({ kind, px, py, view: { cx, cy, zoom, w, h, level }, row: hit ? hit.row : null, named });
  if (s.picks.length > PICKS_KEPT) s.picks.splice(0, s.picks.length - PICKS_KEPT);
}

function hideTip(s) {
  // the tooltip and any pick on its way for it are dropped
  clearTimeout(s.hoverTimer);
  s.tip.style.display = "none";
  s.hoverSeq += 1;
  s.pending = null;
  s.shown = null;
}

function hover(s, at) {
  if (samePixel(s.shown && s.shown.at, at) || samePixel(s.pending, at)) return; // named, or being named, already
  hideTip(s); // it named another pixel: never left showing what the pointer has moved off
  s.pending = at;
  s.hoverTimer = setTimeout(async () => {
    const seq = ++s.hoverSeq;
    const hit = await pick(s, at);
    if (seq !== s.hoverSeq) return; // the cursor moved on, or the view changed
    s.pending = null;
    logPick(s, "hover", at, hit, null);
    if (!hit || hit.row < 0) return;
    s.tip.textContent = ""; // user text is only ever text, never HTML
    const head = el("div", "isoscope-atlas-tip-head", s.tip);
    head.textContent = `#${hit.row} \u00b7 ${hit.cluster}`;
    const body = el("div", "isoscope-atlas-tip-text", s.tip);
    body.textContent = hit.text;
    s.tip.style.display = "block";
    s.tip.style.left = `${Math.min(at.px + 14, at.w - 320)}px`;
    s.tip.style.top = `${at.py + 14}px`;
    s.shown = { at, hit };
  }, HOVER_MS);
}

function onCanvas(e, canvas) {
  // the map lives in a shadow root (Streamlit isolates a component's styles): a listener on window sees the
  // event retargeted to the shadow host, so the element under the pointer is the first of its composed path
  const path = e.composedPath ? e.composedPath() : [e.target];
  return path[0] === canvas;
}

function listen(s, args) {
  const c = s.canvas;
  s.args = args;
  c.addEventListener("wheel", (e) => {
    e.preventDefault();
    const unit = e.deltaMode === 1 ? 33 : e.deltaMode === 2 ? 400 : 1;
    const dz = Math.max(-1, Math.min(1, (-e.deltaY * unit) / 200));
    const [px, py] = local(s, e);
    hideTip(s);
    zoomAt(s, px, py, dz);
  }, { passive: false });
  c.addEventListener("mousedown", (e) => {
    if (e.button !== 0) return;
    const p = local(s, e);
    const at = gesture(s, ...p); // a click picks at this pixel of this view, whatever happens before mouseup
    const named = samePixel(s.shown && s.shown.at, at) ? s.shown.hit : null; // what the tooltip names here
    const box = s.boxMode || e.shiftKey;
    s.drag = { start: p, now: p, moved: false, box, shift: e.shiftKey, view: { ...s.view }, at, named };
    hideTip(s);
  });
  const onMove = (e) => {
    if (!s.drag) return;
    const p = local(s, e);
    s.drag.now = p;
    if (Math.hypot(p[0] - s.drag.start[0], p[1] - s.drag.start[1]) > 3) s.drag.moved = true;
    if (!s.drag.box && s.drag.moved) {
      const k = scale(s);
      s.view.auto = false;
      s.view.cx = s.drag.view.cx - (p[0] - s.drag.start[0]) / k;
      s.view.cy = s.drag.view.cy + (p[1] - s.drag.start[1]) / k;
    }
    redraw(s);
  };
  const onUp = async (e) => {
    const d = s.drag;
    if (!d) return;
    s.drag = null;
    redraw(s);
    if (d.box && d.moved) {
      const [x0, y1] = toWorld(s, Math.min(d.start[0], d.now[0]), Math.min(d.start[1], d.now[1]));
      const [x1, y0] = toWorld(s, Math.max(d.start[0], d.now[0]), Math.max(d.start[1], d.now[1]));
      s.args.setTriggerValue("box", [x0, y0, x1, y1]);
      return;
    }
    if (!d.moved && onCanvas(e, c)) {
      const hit = d.named || (await pick(s, d.at)); // the tooltip's row where it named this pixel, else the same pick
      logPick(s, "click", d.at, hit, d.named ? d.named.row : null);
      if (hit && hit.row >= 0) s.args.setTriggerValue("click", { row: hit.row, add: d.shift });
    }
  };
  window.addEventListener("mousemove", onMove);
  window.addEventListener("mouseup", onUp);
  c.addEventListener("mousemove", (e) => {
    if (s.drag) return;
    hover(s, gesture(s, ...local(s, e)));
  });
  c.addEventListener("mouseleave", () => hideTip(s));
  const centre = () => {
    const { w, h } = size(s);
    return [w / 2, h / 2];
  };
  s.buttons.zin.onclick = () => zoomAt(s, ...centre(), 1);
  s.buttons.zout.onclick = () => zoomAt(s, ...centre(), -1);
  s.buttons.fit.onclick = () => {
    s.view = fitView(s, s.view.auto && !s.view.all); // a second press shows every point
    redraw(s);
  };
  s.buttons.box.onclick = () => {
    s.boxMode = !s.boxMode;
    s.buttons.box.classList.toggle("on", s.boxMode);
    c.style.cursor = s.boxMode ? "crosshair" : "grab";
  };
  s.buttons.png.onclick = () => {
    c.toBlob((blob) => {
      const a = document.createElement("a");
      a.href = URL.createObjectURL(blob);
      a.download = "atlas-view.png";
      a.click();
      setTimeout(() => URL.revokeObjectURL(a.href), 1000);
    });
  };
  s.resize = new ResizeObserver(() => {
    if (s.view && s.view.auto) s.view = fitView(s, s.view.all); // laid out after the first draw: fit again
    redraw(s);
  });
  s.resize.observe(s.root);
  s.teardown = () => {
    window.removeEventListener("mousemove", onMove);
    window.removeEventListener("mouseup", onUp);
    s.resize.disconnect();
    clearTimeout(s.hoverTimer);
    if (s.raf) cancelAnimationFrame(s.raf);
    s.root.remove();
  };
}

function sameWorld(a, b) {
  return a && b && a.size === b.size && a.x0 === b.x0 && a.y0 === b.y0;
}

export default function (component) {
  const { data, parentElement } = component;
  let s = STATE.get(parentElement);
  if (!s) {
    s = createMap(parentElement);
    STATE.set(parentElement, s);
    listen(s, component);
  }
  s.args = component; // the newest setTriggerValue
  const old = s.data;
  s.data = data;
  s.root.style.height = `${data.height}px`;
  const kept = VIEWS.get(data.name);
  if (!sameWorld(old && old.world, data.world)) {
    s.tiles.clear();
    s.view = kept && sameWorld(kept.world, data.world) ? { ...kept.view } : fitView(s);
  }
  VIEWS.set(data.name, { world: data.world, get view() { return s.view; } });
  s.failed = 0;
  redraw(s);
  return () => {
    VIEWS.set(data.name, { world: data.world, view: { ...s.view } });
    STATE.delete(parentElement);
    s.teardown();
  };
}
