"""The Atlas map's HTTP routes, served by the app's own server (Starlette routes given to ``st.App`` in
``dashboard/serve.py``): map tiles, the lit-up points, and the point under the cursor.

GET {PREFIX}/{token}/{space}/t/{style}/{z}/{x}/{y}.png   a tile of the map (isoscope.atlas.tiles)
GET {PREFIX}/{token}/{space}/h/{mark}/{z}/{x}/{y}.png    the lit-up points of that tile, on transparency
GET {PREFIX}/{token}/{space}/pick?x=..&y=..&r=..&z=..[&lit=mark]   {"row", "text", "cluster", "x", "y"} ({"row": -1}: none)

The Atlas page publishes what its map shows (``publish``) and hands the browser the URLs: ``token`` names an
atlas folder by a random string (never its path), ``style`` a colouring and ``mark`` a set of lit-up rows.
Only a session that got past the classroom's access code runs the page, so only it learns a token: the code
covers these routes too, and the security headers of ``serve.py`` are on their responses like on every
other. Anything unknown (token, style, mark, a tile outside the pyramid, bad numbers) is a 404.

The pick is the one answer to "which point is under the pointer", for the hover's text and the click's
selection alike (the browser asks it with the pixel and the view of its gesture, taken once): the point nearest
(x, y) within r, except that a lit-up point (``lit``: the map's mark) whose yellow disc at the level ``z`` the
map draws reaches (x, y) comes first, as it is drawn over the others (``isoscope.atlas.tiles.pick_row``).

The top levels of the default style come from the atlas folder when its build rendered them (the ``tiles``
stage, ``isoscope.atlas.pyramid``), each checked against the size and SHA-256 of the folder's ledger (a missing
or damaged one is drawn instead). Other tiles are rendered on demand and cached in memory (``MEMORY_BYTES``, least recently used out) and on disk
under ``$ISOSCOPE_CACHE/atlas-tiles`` keyed by the atlas's ledger (so a rebuilt atlas never gets old tiles),
each file with a SHA-256 trailer that names its tile, checked when it is read back; a cache that cannot be
written is skipped.
"""

from __future__ import annotations

import hashlib
import logging
import re
import secrets
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from isoscope.cache import default_cache_dir, make_key, verified, warn_once, with_checksum

log = logging.getLogger("isoscope.dashboard")

PREFIX = "/isoscope/atlas"
MEMORY_BYTES = 96 * 2**20
MARKS = 64  # lit-up row sets kept
PICK_CHARS = 300
_lock = threading.Lock()
_tokens: dict[str, str] = {}  # token -> atlas folder
_by_path: dict[str, str] = {}
_styles: dict[str, tuple[str, bool]] = {}  # style id -> (colour_by, contours)
_marks: OrderedDict[str, np.ndarray] = OrderedDict()  # mark id -> rows (m,) int64
_positions: OrderedDict[tuple, np.ndarray] = OrderedDict()  # (atlas, space, mark) -> sorted positions (m,)
_memory: OrderedDict[tuple, bytes] = OrderedDict()
_memory_bytes = 0
_ledgers: dict[str, tuple[tuple, object]] = {}  # atlas folder -> (its ledger file's identity, Ledger)


@dataclass(frozen=True)
class MapUrls:
    """What the browser fetches for one map: tile and highlight URL templates ({z}, {x}, {y}), the pick URL, and
    the lit-up rows' mark (the pick's ``lit``; None: none lit)."""

    tiles: str
    highlight: str | None
    pick: str
    mark: str | None = None


def publish(path: str, space: str, colour_by: str, contours: bool, lit: np.ndarray | None = None) -> MapUrls:
    """Make the map of ``space`` of the atlas in ``path`` servable; ``lit`` (m,) rows drawn lit up."""
    with _lock:
        token = _by_path.get(path)
        if token is None:
            token = secrets.token_urlsafe(18)
            _tokens[token], _by_path[path] = path, token
        style = make_key("style", colour_by, contours)[:20]
        _styles[style] = (colour_by, bool(contours))
        mark = None
        if lit is not None and len(lit):
            rows = np.unique(np.asarray(lit, np.int64))
            mark = hashlib.sha256(rows.tobytes()).hexdigest()[:20]
            _marks[mark] = rows
            _marks.move_to_end(mark)
            while len(_marks) > MARKS:
                _marks.popitem(last=False)
    base = f"{PREFIX}/{token}/{space}"
    return MapUrls(
        f"{base}/t/{style}/{{z}}/{{x}}/{{y}}.png",
        None if mark is None else f"{base}/h/{mark}/{{z}}/{{x}}/{{y}}.png",
        f"{base}/pick",
        mark,
    )


def _atlas_path(token: str) -> str | None:
    with _lock:
        return _tokens.get(token)


# ---------------------------------------------------------------- caches


def _remember(key: tuple, png: bytes) -> None:
    global _memory_bytes
    with _lock:
        if key in _memory:
            return
        _memory[key] = png
        _memory_bytes += len(png)
        while _memory_bytes > MEMORY_BYTES and _memory:
            _, old = _memory.popitem(last=False)
            _memory_bytes -= len(old)


def _recall(key: tuple) -> bytes | None:
    with _lock:
        png = _memory.get(key)
        if png is not None:
            _memory.move_to_end(key)
        return png


def _disk_path(path: str, space: str, style: tuple[str, bool], z: int, x: int, y: int) -> Path | None:
    from isoscope.atlas.folder import LEDGER, file_digest

    try:
        atlas_key = file_digest(Path(path) / LEDGER)[:24]  # every file of the atlas, by its SHA-256
    except OSError:
        return None
    style_key = make_key(*style)[:20]
    return default_cache_dir() / "atlas-tiles" / atlas_key / space / style_key / str(z) / f"{x}-{y}.png"


def _tile_key(p: Path) -> str:
    """The key a tile file's checksum names: atlas, space, style, zoom and position (its last five path parts),
    so a tile file moved or swapped under another tile's name is drawn again, never served as that tile."""
    return "/".join(p.parts[-5:])


def _disk_read(p: Path | None) -> bytes | None:
    if p is None:
        return None
    try:
        return verified(p.read_bytes(), _tile_key(p)) if p.is_file() else None
    except OSError:
        return None
    except ValueError:  # damaged: dropped and drawn again
        p.unlink(missing_ok=True)
        return None


def _disk_write(p: Path | None, png: bytes) -> None:
    if p is None:
        return
    from isoscope.cache import atomic_write_bytes

    try:
        atomic_write_bytes(p, with_checksum(png, _tile_key(p)))
    except OSError as exc:
        warn_once(
            p.parents[4], "unusable", "cannot write atlas tiles in %s (%s); serving from memory", p.parents[4], exc
        )


def _ledger(path: str):
    """The atlas folder's ledger, read once per version of its file (its identity: inode, size, mtime)."""
    from isoscope.atlas.folder import LEDGER, Ledger

    try:
        st = (Path(path) / LEDGER).stat()
    except OSError:
        return None
    stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
    with _lock:
        held = _ledgers.get(path)
    if held is None or held[0] != stamp:
        held = (stamp, Ledger(Path(path)))
        with _lock:
            _ledgers[path] = held
    return held[1]


def _prerendered(path: str, space: str, style: tuple[str, bool], z: int, x: int, y: int) -> bytes | None:
    """The folder's own tile (the ``tiles`` build stage: the top levels in the default style) when it has one
    that matches the size and SHA-256 its ledger recorded; None otherwise (drawn here instead)."""
    from isoscope.atlas.pyramid import DEFAULT_STYLE, TOP_LEVEL, read_tile

    if tuple(style) != DEFAULT_STYLE or z > TOP_LEVEL:
        return None
    ledger = _ledger(path)
    return None if ledger is None else read_tile(path, space, z, x=x, y=y, ledger=ledger)


# ---------------------------------------------------------------- what the routes draw


def tile_png(path: str, space: str, style: tuple[str, bool], z: int, x: int, y: int) -> bytes | None:
    """PNG of one map tile (None outside the pyramid)."""
    from isoscope.atlas.raster import to_png
    from isoscope.atlas.tiles import check_tile
    from isoscope.dashboard.services import atlas as svc

    tmap = svc.tile_map(path, space)
    if not check_tile(tmap.grid, z, x, y):
        return None
    key = ("t", path, space, style, z, x, y)
    if (png := _recall(key)) is not None:
        return png
    if (png := _prerendered(path, space, style, z, x, y)) is not None:
        _remember(key, png)
        return png
    disk = _disk_path(path, space, style, z, x, y)
    if (png := _disk_read(disk)) is None:
        colouring = svc.colouring(path, space, style[0])  # one byte a point, in the index's order
        png = to_png(tmap.tile(colouring.codes, z, x, y, contours=style[1], lut=colouring.lut))
        _disk_write(disk, png)
    _remember(key, png)
    return png


def _lit_positions(path: str, space: str, mark: str, rows: np.ndarray, tmap) -> np.ndarray:
    """The sorted positions (m,) of a mark's rows in the space's index (its rank gathered once per mark and
    space, not once per tile)."""
    key = (path, space, mark)
    with _lock:
        lit = _positions.get(key)
    if lit is None:
        lit = tmap.index.positions_of(rows[rows < tmap.index.n])
        with _lock:
            _positions[key] = lit
            while len(_positions) > MARKS:
                _positions.popitem(last=False)
    return lit


def highlight_png(path: str, space: str, mark: str, z: int, x: int, y: int) -> bytes | None:
    from isoscope.atlas.raster import to_png
    from isoscope.atlas.tiles import check_tile, highlight_tile
    from isoscope.dashboard.services import atlas as svc

    with _lock:
        rows = _marks.get(mark)
    tmap = svc.tile_map(path, space)
    if rows is None or not check_tile(tmap.grid, z, x, y):
        return None
    key = ("h", path, space, mark, z, x, y)
    if (png := _recall(key)) is not None:
        return png
    png = to_png(highlight_tile(tmap.index, _lit_positions(path, space, mark, rows, tmap), tmap.grid, z, x, y))
    _remember(key, png)
    return png


def pick(path: str, space: str, x: float, y: float, *, r: float, z: int = 0, mark: str | None = None) -> dict:
    """The point a pointer at (x, y) names on the map drawn at level ``z`` (``isoscope.atlas.tiles.pick_row``: a
    lit-up point of ``mark`` whose yellow disc reaches it, else the nearest within r world units): its row, text
    (cut), cluster and position."""
    from isoscope.atlas.tiles import pick_row
    from isoscope.dashboard.services import atlas as svc

    tmap = svc.tile_map(path, space)
    with _lock:
        rows = _marks.get(mark) if mark is not None else None
    lit = None if rows is None else _lit_positions(path, space, mark, rows, tmap)
    row = pick_row(tmap.index, tmap.grid, x, y, radius=r, z=z, lit=lit)
    if row < 0:
        return {"row": -1}
    atlas = svc.open_atlas(path)
    sp = atlas.spaces[space]
    text = atlas.texts_at([row])[0]  # one row group of points.parquet (cached for the next hover)
    c = int(sp.cluster[row])
    cluster = svc.cluster_names(path, space).get(c, "no cluster") if c >= 0 else "no cluster"
    return {
        "row": row,
        "text": text if len(text) <= PICK_CHARS else text[: PICK_CHARS - 1] + "…",
        "cluster": f"cluster {cluster}" if c >= 0 else cluster,
        "x": float(sp.xy[row, 0]),
        "y": float(sp.xy[row, 1]),
    }


# ---------------------------------------------------------------- Starlette endpoints


def _numbers(params, *names: str, kind=float):
    values = []
    for name in names:
        v = kind(params[name])
        if not np.isfinite(v):
            raise ValueError(name)
        values.append(v)
    return values


def _space(path: str, space: str) -> bool:
    from isoscope.dashboard.services import atlas as svc

    return space in svc.open_atlas(path).spaces


def _png(png: bytes | None):
    from starlette.responses import Response

    if png is None:
        return Response(status_code=404)
    return Response(png, media_type="image/png", headers={"Cache-Control": "private, max-age=86400"})


_COORDINATE = re.compile(r"[0-9]{1,10}")  # z, x and y of a tile: a pyramid has at most 2**32 tiles a side


def _tile_at(params) -> tuple[int, int, int] | None:
    """(z, x, y) of a tile URL, or None: the text is checked before ``int`` converts it (a 5,000-digit number
    would raise inside the router), then ``check_tile`` bounds it by the atlas's pyramid."""
    texts = (params["z"], params["x"], params["y"])
    if not all(_COORDINATE.fullmatch(t) for t in texts):
        return None
    z, x, y = (int(t) for t in texts)
    return z, x, y


def _tile_endpoint(request):
    from starlette.responses import Response

    p = request.path_params
    path = _atlas_path(p["token"])
    with _lock:
        style = _styles.get(p["style"])
    at = _tile_at(p)
    if path is None or style is None or at is None or not _space(path, p["space"]):
        return Response(status_code=404)
    return _png(tile_png(path, p["space"], style, *at))


def _highlight_endpoint(request):
    from starlette.responses import Response

    p = request.path_params
    path = _atlas_path(p["token"])
    at = _tile_at(p)
    if path is None or at is None or not _space(path, p["space"]):
        return Response(status_code=404)
    return _png(highlight_png(path, p["space"], p["mark"], *at))


def _pick_endpoint(request):
    from starlette.responses import JSONResponse, Response

    from isoscope.dashboard.services import atlas as svc

    p = request.path_params
    path = _atlas_path(p["token"])
    if path is None or not _space(path, p["space"]):
        return Response(status_code=404)
    query = request.query_params
    try:
        x, y, r = _numbers(query, "x", "y", "r")
    except (KeyError, ValueError):
        return Response(status_code=404)
    z = query.get("z", "0")  # the level the map draws (its lit-up discs' size); checked as a tile's z is
    if not _COORDINATE.fullmatch(z) or int(z) > svc.tile_map(path, p["space"]).grid.max_level:
        return Response(status_code=404)
    z = int(z)
    hit = pick(path, p["space"], x, y, r=min(abs(r), 1e12), z=z, mark=query.get("lit"))
    return JSONResponse(hit, headers={"Cache-Control": "no-store"})


def _refusing(endpoint):
    """``endpoint`` answering an InputError (an atlas file changed on disk since it was opened:
    ``isoscope.data.maps.MapShrunk``) with 409 and its one line, logged as a warning, not as a server bug."""
    import functools

    from isoscope.errors import InputError

    @functools.wraps(endpoint)
    def answer(request):
        from starlette.responses import PlainTextResponse

        try:
            return endpoint(request)
        except InputError as exc:
            log.warning("atlas route: %s", exc)
            return PlainTextResponse(str(exc), status_code=409, headers={"Cache-Control": "no-store"})

    return answer


def routes() -> list:
    """The Starlette routes (``st.App(routes=...)``); sync endpoints run in Starlette's thread pool."""
    from starlette.routing import Route

    tile = "/{z}/{x}/{y}.png"  # text, checked by _tile_at: the router's int converter has no bound
    return [
        Route(PREFIX + "/{token}/{space}/t/{style}" + tile, _refusing(_tile_endpoint), methods=["GET"]),
        Route(PREFIX + "/{token}/{space}/h/{mark}" + tile, _refusing(_highlight_endpoint), methods=["GET"]),
        Route(PREFIX + "/{token}/{space}/pick", _refusing(_pick_endpoint), methods=["GET"]),
    ]
