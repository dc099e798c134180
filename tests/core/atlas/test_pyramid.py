"""The ``tiles`` build stage (isoscope.atlas.pyramid): the top of each space's tile pyramid in the default style,
written into the folder and recorded in its ledger; the per-level function the ray engine's tasks run gives the
same files; a damaged tile rebuilds the stage."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
from PIL import Image

from isoscope.atlas import pyramid
from isoscope.atlas.folder import Ledger
from isoscope.atlas.pipeline import STAGES, AtlasConfig, build_atlas, planned_stages
from isoscope.atlas.pyramid import TOP_LEVEL, cluster_codes, read_tile, render_levels, tile_rel, top_files
from isoscope.atlas.synthetic import synthetic_corpus


def _build(out, n: int = 400):
    texts, topics = synthetic_corpus(n, 0)
    vectors = np.random.default_rng(0).normal(0, 1, (n, 8)).astype(np.float32)
    config = AtlasConfig(layout="pca", calibrate="none")
    return build_atlas(None, texts, out, config=config, meta=pd.DataFrame({"topic": topics}), vectors=vectors)


def test_the_stage_writes_the_top_levels_and_records_them(tmp_path):
    assert STAGES[-2:] == ("index", "tiles")
    assert planned_stages(AtlasConfig(layout="pca", calibrate="none"))[-1] == "tiles"
    out = tmp_path / "atlas"
    run = _build(out)
    assert "tiles" in run.computed
    files = top_files(out, "raw")
    assert len(files) == sum(4**z for z in range(TOP_LEVEL + 1)) == 341
    ledger = Ledger(out)
    recorded = set(ledger.stages["tiles"]["outputs"])
    assert recorded == {p.relative_to(out).as_posix() for p in files} | {f"raw/tiles/renderer-{pyramid.RENDERER}.json"}
    top = np.asarray(Image.open(io.BytesIO((out / tile_rel("raw", 0, 0, 0)).read_bytes())).convert("RGBA"))
    assert top.shape == (256, 256, 4) and (top[..., 3] > 0).sum() > 100  # the points are drawn
    colours = {tuple(c) for c in top[top[..., 3] > 0][:, :3]}
    assert len(colours) > 2  # clusters in several colours, contours over them
    assert read_tile(out, "raw", 0, x=0, y=0, ledger=ledger) == (out / tile_rel("raw", 0, 0, 0)).read_bytes()
    assert _build(out).computed == []  # fresh: nothing redone


def test_the_ray_tasks_level_function_gives_the_stages_files_and_a_damaged_tile_is_rebuilt(tmp_path):
    out = tmp_path / "atlas"
    _build(out)
    before = {p: p.read_bytes() for p in top_files(out, "raw")}
    target = out / tile_rel("raw", 3, 2, 5)
    target.write_bytes(b"\x89PNG damaged")
    assert read_tile(out, "raw", 3, x=2, y=5, ledger=Ledger(out)) is None  # checked against the ledger: not served
    rels = render_levels(out, "raw", [3])  # what one Ray task of the ray engine runs (isoscope.atlas.distributed)
    assert len(rels) == 64 and tile_rel("raw", 3, 2, 5) in rels
    assert {p: p.read_bytes() for p in top_files(out, "raw")} == before
    target.write_bytes(b"\x89PNG damaged")
    run = _build(out)
    assert run.computed == ["tiles"]
    assert target.read_bytes() == before[target]


def test_tiles_of_another_renderer_are_never_served_and_the_next_build_redraws_them(tmp_path, monkeypatch):
    """A folder whose tiles an older drawing made (its ledger records ``renderer-1.json``, this Isoscope draws
    version 2): the server draws every tile itself, and a resumed build runs the ``tiles`` stage again."""
    out = tmp_path / "atlas"
    _build(out)
    monkeypatch.setattr(pyramid, "RENDERER", pyramid.RENDERER + 1)
    assert read_tile(out, "raw", 0, x=0, y=0, ledger=Ledger(out)) is None
    assert _build(out).computed == ["tiles"]
    assert (out / pyramid.renderer_rel("raw")).name == f"renderer-{pyramid.RENDERER}.json"
    assert read_tile(out, "raw", 0, x=0, y=0, ledger=Ledger(out)) == (out / tile_rel("raw", 0, 0, 0)).read_bytes()


def test_cluster_codes_palette_then_grey():
    cluster = np.array([0, 1, -1, 13, 2, 12, 11], np.int32)
    codes, lut, other = cluster_codes(cluster, 14)
    assert codes.tolist() == [0, 1, 12, 12, 2, 12, 11] and lut.shape == (13, 3) and other == 3
    assert tuple(lut[12]) == (170, 170, 170)
