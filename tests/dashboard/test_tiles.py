"""dashboard/tiles.py as ``isoscope app`` serves it (the routes and middleware dashboard/serve.py gives st.App):
tiles, lit-up points and the point under the cursor for a published atlas, 404 for anything else, the
classroom's security headers on every response, and the tile cache on disk (checked when read back, keyed by
the atlas's ledger)."""

from __future__ import annotations

import io
import json
import os
import runpy
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from isoscope.atlas.pipeline import AtlasConfig, build_atlas
from isoscope.atlas.synthetic import synthetic_corpus
from isoscope.dashboard import tiles

SERVE = Path(__file__).resolve().parents[2] / "dashboard" / "serve.py"


def build(out: Path, n: int = 400, seed: int = 0) -> list[str]:
    texts, topics = synthetic_corpus(n, seed)
    vectors = np.random.default_rng(seed).normal(0, 1, (n, 8)).astype(np.float32)
    config = AtlasConfig(layout="pca", calibrate="none")
    build_atlas(None, texts, out, config=config, meta=pd.DataFrame({"topic": topics}), vectors=vectors)
    return texts


@pytest.fixture()
def served(tmp_path, monkeypatch):
    """The classroom app of serve.py under a test client, and a small atlas published on it."""
    from starlette.testclient import TestClient

    from isoscope.dashboard.launch import code_hash

    monkeypatch.setenv("ISOSCOPE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("ISOSCOPE_CLASSROOM", "1")
    monkeypatch.setenv("ISOSCOPE_ACCESS_CODE_SHA256", code_hash("TULIP-TULIP"))
    out = tmp_path / "atlas"
    texts = build(out)
    from starlette.applications import Starlette

    serve = runpy.run_path(str(SERVE))  # builds the st.App without starting Streamlit's runtime
    assert [r.path for r in serve["app"]._user_routes] == [r.path for r in tiles.routes()]
    app = Starlette(routes=serve["app"]._user_routes, middleware=serve["middleware"])
    with TestClient(app) as client:
        yield client, str(out), texts


def secured(response) -> None:
    assert response.headers["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in response.headers["content-security-policy"]


def rgba(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGBA"))


def test_tiles_and_highlights_are_served_with_the_classroom_headers(served):
    client, path, _ = served
    urls = tiles.publish(path, "raw", "cluster", True, lit=np.array([0, 5, 9]))
    top = client.get(urls.tiles.format(z=0, x=0, y=0))
    assert top.status_code == 200 and top.headers["content-type"] == "image/png"
    secured(top)
    assert rgba(top.content).shape == (256, 256, 4) and (rgba(top.content)[..., 3] > 0).sum() > 50
    lit = client.get(urls.highlight.format(z=0, x=0, y=0))
    assert lit.status_code == 200 and 0 < (rgba(lit.content)[..., 3] > 0).sum() < (rgba(top.content)[..., 3] > 0).sum()
    for bad in (
        urls.tiles.format(z=0, x=1, y=0),  # outside the pyramid
        urls.tiles.format(z=99, x=0, y=0),
        urls.tiles.replace("/raw/", "/cal/").format(z=0, x=0, y=0),  # a space the atlas lacks
        urls.tiles.replace(urls.tiles.split("/")[3], "guessed-token").format(z=0, x=0, y=0),
        urls.tiles.replace(urls.tiles.split("/")[6], "nostyle").format(z=0, x=0, y=0),
        urls.highlight.replace(urls.highlight.split("/")[6], "nomark").format(z=0, x=0, y=0),
    ):
        r = client.get(bad)
        assert r.status_code == 404, bad
        secured(r)


def test_pick_returns_the_nearest_point_and_its_text(served):
    from isoscope.dashboard.services import atlas as svc

    client, path, texts = served
    urls = tiles.publish(path, "raw", "cluster", False)
    xy = svc.open_atlas(path).spaces["raw"].xy
    rng = np.random.default_rng(3)
    for row in rng.choice(len(xy), 5, replace=False):
        x, y = (xy[row] + rng.normal(0, 1e-4, 2)).tolist()
        got = client.get(urls.pick, params={"x": x, "y": y, "r": 0.5})
        secured(got)
        got = got.json()
        want = int(np.argmin(((xy.astype(np.float64) - [x, y]) ** 2).sum(axis=1)))
        assert got["row"] == want and got["text"] == texts[want][: tiles.PICK_CHARS]
    far = client.get(urls.pick, params={"x": 1e6, "y": 1e6, "r": 1.0}).json()
    assert far == {"row": -1}
    for params in ({"x": "nan", "y": 0, "r": 1}, {"x": 0, "y": 0}, {"x": "a", "y": 0, "r": 1}):
        assert client.get(urls.pick, params=params).status_code == 404


def test_pick_names_the_lit_point_whose_yellow_is_under_the_pointer_not_a_nearer_neighbour(served):
    """Issue 50 item 8: the hover's text and the click's selection (one route) at a pixel the served highlight
    tile paints yellow name that lit-up point, as the map shows it drawn over the others, even where an unlit
    point lies nearer the pointer; without the map's mark, the nearest point. A bad level is a 404."""
    from isoscope.atlas.tiles import TILE
    from isoscope.dashboard.services import atlas as svc

    client, path, _ = served
    xy = svc.open_atlas(path).spaces["raw"].xy.astype(np.float64)
    grid = svc.tile_map(path, "raw").grid
    d = np.hypot(*(xy[:, None] - xy[None]).transpose(2, 0, 1)) + np.diag(np.full(len(xy), np.inf))  # (n, n)
    i, j = np.unravel_index(np.argmin(d), d.shape)  # the closest pair: i lit, j not
    x, y = xy[i] + 0.6 * (xy[j] - xy[i])  # nearer j than i
    urls = tiles.publish(path, "raw", "cluster", False, lit=np.array([i]))
    r = float(d[i, j])  # a pick radius that reaches both
    for z in range(grid.max_level, -1, -1):  # the deepest level whose yellow disc of i covers the pointer
        tx, ty = (
            int((x - grid.world.x0) // (TILE * grid.pixel(z))),
            int((grid.world.y0 + grid.world.size - y) // (TILE * grid.pixel(z))),
        )
        x0, _, _, y1 = grid.world.tile_box(z, tx, ty)
        px, py = int((x - x0) // grid.pixel(z)), int((y1 - y) // grid.pixel(z))
        if (rgba(client.get(urls.highlight.format(z=z, x=tx, y=ty)).content)[py, px, :3] == (255, 200, 0)).all():
            break
    else:
        raise AssertionError("no level paints the pointer yellow")
    mark = urls.highlight.split("/h/")[1].split("/")[0]  # the lit rows' mark, as the highlight tiles name it
    lit = client.get(urls.pick, params={"x": x, "y": y, "r": r, "z": z, "lit": mark})
    secured(lit)
    assert lit.json()["row"] == i, (int(i), int(j), z)
    assert urls.mark == mark  # what the map hands its picks
    assert client.get(urls.pick, params={"x": x, "y": y, "r": r, "z": z}).json()["row"] == j  # nothing lit
    for z_bad in ("-1", "1.5", "x", str(grid.max_level + 1)):
        assert client.get(urls.pick, params={"x": x, "y": y, "r": r, "z": z_bad}).status_code == 404


def test_tiles_are_cached_on_disk_checked_on_read_and_keyed_by_the_atlas(served, tmp_path):
    client, path, _ = served
    urls = tiles.publish(path, "raw", "topic", False)
    first = client.get(urls.tiles.format(z=1, x=0, y=1)).content
    cached = list((tmp_path / "cache" / "atlas-tiles").rglob("*.png"))
    assert len(cached) == 1
    with tiles._lock:
        tiles._memory.clear()
    cached[0].write_bytes(b"\x89PNG damaged")  # a damaged cache file is dropped and the tile drawn again
    assert client.get(urls.tiles.format(z=1, x=0, y=1)).content == first
    assert cached[0].exists() and cached[0].read_bytes() != b"\x89PNG damaged"
    ledger = Path(path) / "ledger.json"  # a rebuilt stage rewrites the ledger: its tiles are never the old ones
    ledger.write_bytes(ledger.read_bytes() + b" ")
    with tiles._lock:
        tiles._memory.clear()
    client.get(urls.tiles.format(z=1, x=0, y=1))
    keys = {p.relative_to(tmp_path / "cache" / "atlas-tiles").parts[0] for p in (tmp_path / "cache").rglob("*.png")}
    assert len(keys) == 2


def test_prerendered_top_tiles_are_served_checked_and_equal_to_drawn_ones(served, tmp_path):
    from isoscope.atlas.folder import Ledger
    from isoscope.atlas.pyramid import tile_rel

    client, path, _ = served
    urls = tiles.publish(path, "raw", "cluster", True)  # the page's default style: the build rendered its top
    own = Path(path) / tile_rel("raw", 2, 1, 2)
    built = own.read_bytes()
    with tiles._lock:
        tiles._memory.clear()
    assert client.get(urls.tiles.format(z=2, x=1, y=2)).content == built
    assert not list((tmp_path / "cache").rglob("*.png"))  # served from the folder, nothing drawn or cached
    own.unlink()  # missing: drawn on demand, byte for byte the build's tile
    with tiles._lock:
        tiles._memory.clear()
    assert client.get(urls.tiles.format(z=2, x=1, y=2)).content == built
    own.write_bytes(built[:-8] + b"damaged!")  # same size, other bytes: its SHA-256 differs, so it is drawn again
    other = Path(path) / tile_rel("raw", 3, 4, 4)
    other.write_bytes(b"\x89PNG damaged")
    with tiles._lock:
        tiles._memory.clear()
    assert client.get(urls.tiles.format(z=2, x=1, y=2)).content == built
    drawn = client.get(urls.tiles.format(z=3, x=4, y=4))
    assert drawn.status_code == 200 and rgba(drawn.content).shape == (256, 256, 4)
    ledger = Ledger(Path(path))  # a folder built before the stage: no tiles recorded, none on disk
    del ledger.stages["tiles"]
    data = json.dumps({"format": "isoscope-atlas-ledger", "stages": ledger.stages}, indent=1).encode()
    (Path(path) / "ledger.json").write_bytes(data)
    for p in (Path(path) / "raw" / "tiles").rglob("*.png"):
        p.unlink()
    with tiles._lock:
        tiles._memory.clear()
    assert client.get(urls.tiles.format(z=2, x=1, y=2)).content == built
    assert client.get(urls.tiles.format(z=0, x=0, y=0)).status_code == 200


def test_a_layout_cut_short_under_the_open_atlas_is_refused_in_one_line_not_a_dead_server(served):
    from isoscope.dashboard.services import atlas as svc

    client, path, _ = served
    urls = tiles.publish(path, "raw", "cluster", False)
    xy = svc.open_atlas(path).spaces["raw"].xy
    x, y = xy[0].tolist()
    assert client.get(urls.pick, params={"x": x, "y": y, "r": 0.5}).status_code == 200
    index_xy = Path(path) / "raw" / "morton_xy.npy"
    os.truncate(index_xy, index_xy.stat().st_size - 8)  # one row short, within the last page: no SIGBUS either way
    got = client.get(urls.pick, params={"x": x, "y": y, "r": 0.5})
    assert got.status_code == 409, got.text
    assert "raw/morton_xy.npy was cut short" in got.text and "\n" not in got.text.strip() and path not in got.text
    secured(got)
