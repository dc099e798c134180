"""Benchmark serving a big atlas without loading it whole (issue 42, item 2): the memory-mapped folder against
the old full load, side by side, each in a fresh process of its own.

Usage (from the repo root)::

    .venv/bin/python bench/atlas_serve.py --quick            # 300,000 points (under a minute with the build)
    .venv/bin/python bench/atlas_serve.py                    # 3,000,000 points
    .venv/bin/python bench/atlas_serve.py --n 3000000 --out DIR   # keep the folder in DIR (reused when complete)

The folder: ``n`` synthetic sentences (``isoscope.atlas.synthetic``, seeded) with made-up clustered 8-d
vectors, PCA layout, raw space only, built by ``isoscope.atlas.pipeline.build_atlas`` (every stage, the
spatial index included; the one-machine engine's 1,000,000-row cap is lifted in this process only, as the Ray
engine lifts it). Each path then runs in its own process, so its RSS is its own:

- ``new``: ``load_atlas`` (memory maps, checks chunk by chunk, points.parquet opened, nothing decoded), the
  tile map over the folder's index, colours by cluster as one byte a point in the index's order.
- ``old``: what the server did before: the same load, then every per-point array copied into memory, the whole
  points table and text column decoded, the index sorted in memory (``TileMap.of``) and colours (n, 3).

Figures per path: ``open_s`` (load and the tile map), ``first_view_s`` (from the start to the five tiles of
zoom 0-1 rendered to PNG, colours included), ``tile_ms`` (median over random tiles of zoom 2-9 holding
points), ``pick_ms`` (median nearest-point query, 8-pixel radius at zoom 6), ``hover_ms`` (median text of one
random row: the new path reads its row group, ``hover_cached_ms`` a row of a group read before),
``search_ms`` (rows containing "storm", case ignored), ``rss_before_mib`` / ``rss_after_mib`` (psutil RSS of
the server process before opening and after the view, the hovers and the search) and ``anon_after_mib``
(RSS less its file-backed pages: what the process holds that the kernel cannot drop; a memory map's touched
pages count in RSS but are shared page cache). The old path's whole read of points.parquet is refused past
``ISOSCOPE_MAX_PARQUET_BYTES`` (512 MiB: about 2.5M of these texts); it is then measured with the limit raised,
and ``refused_at_default_limits`` says so. Prints a table, then ONE JSON object last.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

QUICK_POINTS = 300_000
FULL_POINTS = 3_000_000
DIM = 8
SEED = 0
TILES = 40
PICKS = 200
HOVERS = 40
QUERY = "storm"
MiB = 2**20


def rss() -> tuple[float, float]:
    """(RSS, RSS less file-backed shared pages) of this process, MiB."""
    import psutil

    info = psutil.Process().memory_info()
    return info.rss / MiB, (info.rss - getattr(info, "shared", 0)) / MiB


def build(out: Path, n: int) -> float:
    """The folder of ``n`` synthetic points (reused when complete); seconds spent building."""
    from isoscope.atlas import inputs
    from isoscope.atlas.synthetic import synthetic_atlas

    inputs.MAX_ATLAS_ROWS = max(inputs.MAX_ATLAS_ROWS, n)  # this process only: the Ray engine lifts it
    t0 = time.perf_counter()
    synthetic_atlas(out, n, DIM, seed=SEED)
    return time.perf_counter() - t0


def _ms(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1000, 3)


def serve(folder: Path, path: str) -> dict:
    """One path's figures (run in a fresh process)."""
    from isoscope.atlas.folder import load_atlas
    from isoscope.atlas.raster import to_png
    from isoscope.atlas.tiles import TileMap
    from isoscope.dashboard.figures import atlas as figures
    from isoscope.errors import InputError

    refused = None
    rss_before, _ = rss()
    t0 = time.perf_counter()
    atlas = load_atlas(folder)
    sp = atlas.spaces["raw"]
    if path == "new":
        tmap = TileMap.of_index(sp.index, sp.bounds, density_grid=sp.grid, point_density=sp.density)
    else:  # the old load: every array and the table in memory, the index sorted here
        for a in (atlas.norm, atlas.length, atlas.overlap):
            np.array(a)
        sp.xy, sp.density, sp.cluster = np.array(sp.xy), np.array(sp.density), np.array(sp.cluster)
        atlas.norm, atlas.length, atlas.overlap = np.array(atlas.norm), np.array(atlas.length), np.array(atlas.overlap)
        try:
            atlas.texts  # noqa: B018 (reads points.parquet whole, as load_atlas did)
        except InputError as exc:  # over ISOSCOPE_MAX_PARQUET_BYTES: the old load refused the folder
            refused = str(exc)
            os.environ["ISOSCOPE_MAX_PARQUET_BYTES"] = str(64 * 2**30)  # measured past the limit all the same
            atlas.texts  # noqa: B018
        tmap = TileMap.of(sp.xy, sp.bounds, density_grid=sp.grid, point_density=sp.density)
    open_s = time.perf_counter() - t0
    if path == "new":
        codes, lut, _ = figures.colour_codes(atlas, "raw", "cluster")
        colours = tmap.sorted(codes)
    else:
        rgb, _ = figures.colours(atlas, "raw", "cluster")
        colours, lut = tmap.sorted(rgb), None
    for z, x, y in [(0, 0, 0), (1, 0, 0), (1, 1, 0), (1, 0, 1), (1, 1, 1)]:
        to_png(tmap.tile(colours, z, x, y, contours=True, lut=lut))
    first_view_s = time.perf_counter() - t0

    rng = np.random.default_rng(SEED)
    n = atlas.n
    sample = rng.integers(0, n, TILES + PICKS)
    tiles, picks, hovers, cached = [], [], [], []
    world = tmap.grid.world
    for i in range(TILES):  # the tile under a random point, at a random zoom
        z = int(rng.integers(2, 10))
        px, py = (float(v) for v in sp.xy[sample[i]])
        tx = min((1 << z) - 1, int((px - world.x0) / world.size * (1 << z)))
        ty = min((1 << z) - 1, int((world.y0 + world.size - py) / world.size * (1 << z)))
        t = time.perf_counter()
        to_png(tmap.tile(colours, z, tx, ty, contours=True, lut=lut))
        tiles.append(time.perf_counter() - t)
    radius = 8 * tmap.grid.pixel(6)
    for row in sample[TILES:]:
        px, py = (float(v) for v in sp.xy[row])
        t = time.perf_counter()
        tmap.index.nearest(px + radius / 3, py, radius)
        picks.append(time.perf_counter() - t)
    for row in rng.integers(0, n, HOVERS):
        t = time.perf_counter()
        text = atlas.texts_at([int(row)])[0] if path == "new" else str(atlas.texts[int(row)])
        hovers.append(time.perf_counter() - t)
        t = time.perf_counter()
        atlas.texts_at([int(row) ^ 1])[0] if path == "new" else str(atlas.texts[int(row) ^ 1])
        cached.append(time.perf_counter() - t)
        assert text
    t = time.perf_counter()
    hits = atlas.search(QUERY)
    search_s = time.perf_counter() - t
    rss_after, anon_after = rss()
    return {
        "open_s": round(open_s, 3),
        "first_view_s": round(first_view_s, 3),
        "tile_ms": _ms(tiles),
        "tile_p90_ms": round(float(np.quantile(tiles, 0.9)) * 1000, 3),
        "pick_ms": _ms(picks),
        "hover_ms": _ms(hovers),
        "hover_cached_ms": _ms(cached),
        "search_ms": round(search_s * 1000, 1),
        "search_hits": len(hits),
        "rss_before_mib": round(rss_before, 1),
        "rss_after_mib": round(rss_after, 1),
        "anon_after_mib": round(anon_after, 1),
        **({"refused_at_default_limits": refused} if refused else {}),
    }


def child(folder: Path, path: str) -> dict:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    cmd = [sys.executable, __file__, "--serve", path, "--out", str(folder)]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO_ROOT, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{path} path failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help=f"{QUICK_POINTS:,} points")
    ap.add_argument("--n", type=int, default=None, help=f"points (default {FULL_POINTS:,}; --quick {QUICK_POINTS:,})")
    ap.add_argument("--out", type=Path, default=None, help="the folder (kept; reused when complete)")
    ap.add_argument("--skip-old", action="store_true", help="measure the memory-mapped path only")
    ap.add_argument("--serve", choices=["new", "old"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        print(json.dumps(serve(args.out, args.serve)))
        return
    n = args.n or (QUICK_POINTS if args.quick else FULL_POINTS)
    with tempfile.TemporaryDirectory(prefix="atlas-serve-") as tmp:
        folder = args.out or Path(tmp) / "atlas"
        build_s = build(folder, n)
        disk = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
        result: dict = {"bench": "atlas_serve", "n": n, "build_s": round(build_s, 1), "folder_mib": round(disk / MiB)}
        result["new"] = child(folder, "new")
        if not args.skip_old:
            result["old"] = child(folder, "old")
            old, new = result["old"], result["new"]
            result["ratios"] = {
                "first_view_old_over_new": round(old["first_view_s"] / new["first_view_s"], 2),
                "rss_after_old_over_new": round(old["rss_after_mib"] / new["rss_after_mib"], 2),
                "anon_after_old_over_new": round(old["anon_after_mib"] / new["anon_after_mib"], 2),
                "search_new_over_old": round(new["search_ms"] / old["search_ms"], 2),
            }
            assert old["search_hits"] == new["search_hits"], "the two searches disagree"
    result["quick"] = bool(args.quick)
    result["ok"] = True
    print(f"{'figure':<18}{'new':>14}{'old':>14}")
    for key in result["new"]:
        print(f"{key:<18}{result['new'][key]!s:>14}{result.get('old', {}).get(key, '-')!s:>14}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
