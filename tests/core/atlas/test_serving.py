"""Serving an atlas without loading it whole (issue 42, item 2): the per-point arrays memory-mapped, the
on-disk Morton index drawing the same tiles as the index built in memory, texts and metadata read from
points.parquet by row group, search over the row groups equal to pandas' ``str.contains``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from isoscope.atlas.folder import LEDGER, AtlasDamaged, file_digest, load_atlas
from isoscope.atlas.pipeline import AtlasConfig, build_atlas
from isoscope.atlas.points import ROW_GROUP_ROWS, PointsFile
from isoscope.atlas.spatial import INDEX_FILES, SpatialIndex, World
from isoscope.atlas.tiles import TileMap
from isoscope.data import load_corpus
from isoscope.paths import DEMO_CORPUS
from tests.hostile.conftest import assert_one_line

QUERIES = ["the", "THE", "storm", "Vaccine", "a new", "ß", "é", "-storey", "no such phrase at all", ".", "'s"]


def made_up_vectors(n: int, dim: int = 16, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(0, 1, (n, dim)).astype(np.float32)


@pytest.fixture(scope="module")
def demo_atlas(tmp_path_factory) -> Path:
    """The demo corpus (4,846 texts, two metadata columns) as an atlas with made-up vectors (PCA, raw and
    whitened): what the folder holds is under test, not the model."""
    corpus = load_corpus(DEMO_CORPUS)
    out = tmp_path_factory.mktemp("serving") / "demo"
    config = AtlasConfig(layout="pca", calibrate="whitening")
    build_atlas(None, corpus.texts, out, config=config, meta=corpus.meta, vectors=made_up_vectors(len(corpus)))
    return out


def test_the_per_point_arrays_and_the_index_are_memory_mapped(demo_atlas: Path) -> None:
    atlas = load_atlas(demo_atlas)
    assert atlas.frame is None and atlas.text_array is None  # nothing of points.parquet decoded yet
    for a in (atlas.norm, atlas.length, atlas.overlap):
        assert isinstance(a, np.memmap)
    for sp in atlas.spaces.values():
        for a in (sp.xy, sp.density, sp.cluster, sp.index.codes, sp.index.order, sp.index.rank, sp.index.xy):
            assert isinstance(a, np.memmap)
    assert atlas.n == 4846 and atlas.columns == ["topic", "source"]
    md = pq.ParquetFile(demo_atlas / "points.parquet").metadata
    assert all(md.row_group(g).num_rows <= ROW_GROUP_ROWS for g in range(md.num_row_groups))


def test_the_folders_index_draws_the_tiles_of_the_index_built_in_memory(demo_atlas: Path) -> None:
    atlas = load_atlas(demo_atlas)
    rng = np.random.default_rng(0)
    for sp in atlas.spaces.values():
        memory = TileMap.of(np.asarray(sp.xy), sp.bounds, density_grid=sp.grid, point_density=np.asarray(sp.density))
        disk = TileMap.of_index(sp.index, sp.bounds, density_grid=sp.grid, point_density=sp.density)
        assert disk.grid == memory.grid
        np.testing.assert_array_equal(disk.index.codes, memory.index.codes)
        np.testing.assert_array_equal(disk.index.order, memory.index.order)
        colours = rng.integers(0, 256, (atlas.n, 3)).astype(np.uint8)
        lit = rng.choice(atlas.n, 300, replace=False)
        for z in (0, 1, 3, 7):
            side = 1 << z
            for tx, ty in {(0, 0), (side // 2, side // 2), (side - 1, side // 3)}:
                a = memory.tile(memory.sorted(colours), z, tx, ty, contours=True)
                b = disk.tile(disk.sorted(colours), z, tx, ty, contours=True)
                np.testing.assert_array_equal(a, b)
                np.testing.assert_array_equal(memory.highlight(lit, z, tx, ty), disk.highlight(lit, z, tx, ty))
        x0, y0, x1, y1 = sp.bounds
        for q in rng.uniform([x0, y0], [x1, y1], (50, 2)):
            r = (x1 - x0) / 50
            assert disk.index.nearest(q[0], q[1], r) == memory.index.nearest(q[0], q[1], r)
            box = (q[0] - r, q[1] - r, q[0] + 3 * r, q[1] + 2 * r)
            np.testing.assert_array_equal(disk.index.rows_in_box(*box), memory.index.rows_in_box(*box))


def test_search_over_the_row_groups_equals_pandas_str_contains(demo_atlas: Path) -> None:
    lazy = load_atlas(demo_atlas)
    texts = load_atlas(demo_atlas).points["text"]  # the whole column, as the page used to search it
    for query in QUERIES:
        want = np.flatnonzero(texts.str.contains(query, case=False, regex=False).to_numpy(bool))
        np.testing.assert_array_equal(lazy.search(query), want, err_msg=query)
    assert lazy.text_array is None and lazy.frame is None  # searched without loading the column


def test_hover_texts_and_selection_rows_are_the_rows_texts(demo_atlas: Path) -> None:
    lazy, whole = load_atlas(demo_atlas), load_atlas(demo_atlas)
    rows = np.array([4845, 0, 17, 2400, 17, 3000])
    assert lazy.texts_at(rows) == [str(t) for t in whole.texts[rows]]
    table = lazy.table_at(rows, ["topic", "source"])
    pd.testing.assert_frame_equal(table, whole.points[["topic", "source"]].iloc[rows].reset_index(drop=True))
    assert lazy.frame is None


def test_a_points_file_of_many_row_groups_is_read_across_their_borders(tmp_path: Path) -> None:
    n = 100
    texts = [f"Text number {i}" + (" Storm" if i % 9 == 0 else "") for i in range(n)]
    path = tmp_path / "points.parquet"
    pq.write_table(pa.table({"text": texts, "k": list(range(n))}), path, row_group_size=7)
    points = PointsFile.open(path, n)
    assert len(points.offsets) == 16  # 15 groups of up to 7 rows
    rows = np.array([99, 6, 7, 0, 13, 14, 50])
    assert points.texts(rows) == [texts[r] for r in rows]
    assert points.values(rows, "k") == rows.tolist()
    np.testing.assert_array_equal(points.search("storm"), np.arange(0, n, 9))
    assert [start for start, _ in points.chunks("k")] == list(range(0, n, 7))
    with pytest.raises(IndexError):
        points.texts([n])


def forge(out: Path, rel: str, array: np.ndarray | None) -> None:
    """Write ``rel`` (None: as it is) and record it in the ledger as it is now (a forger who also fixed the
    ledger)."""
    if array is not None:
        np.save(out / rel, array)
    ledger = json.loads((out / LEDGER).read_text())
    for entry in ledger["stages"].values():
        if rel in entry["outputs"]:
            entry["outputs"][rel] = [(out / rel).stat().st_size, file_digest(out / rel)]
    (out / LEDGER).write_text(json.dumps(ledger))


def small_atlas(out: Path, n: int = 300) -> Path:
    texts = [f"text {i}" for i in range(n)]
    config = AtlasConfig(layout="pca", calibrate="none")
    build_atlas(None, texts, out, config=config, vectors=made_up_vectors(n))
    return out


@pytest.mark.parametrize("damage", ["cut", "changed", "forged_order", "forged_codes"])
def test_a_damaged_index_file_is_refused_in_one_line(tmp_path: Path, damage: str) -> None:
    out = small_atlas(tmp_path / "a")
    order = out / "raw" / "morton_order.npy"
    if damage == "cut":
        order.write_bytes(order.read_bytes()[:-40])
    elif damage == "changed":
        data = bytearray(order.read_bytes())
        data[-4:] = bytes(reversed(data[-4:]))
        data[-1] ^= 1
        order.write_bytes(bytes(data))
    elif damage == "forged_order":  # two rows swapped: no longer the inverse of the rank
        forged = np.load(order)
        forged[[0, 1]] = forged[[1, 0]]
        forge(out, "raw/morton_order.npy", forged)
    else:
        forge(out, "raw/morton_codes.npy", np.load(out / "raw" / "morton_codes.npy")[::-1].copy())
    with pytest.raises(AtlasDamaged) as info:
        load_atlas(out)
    message = str(info.value)
    assert_one_line(message)
    assert "morton_" in message and str(out) not in message


def test_a_folder_built_before_the_index_stage_is_served_from_an_index_in_memory(tmp_path: Path) -> None:
    out = small_atlas(tmp_path / "a")
    ledger = json.loads((out / LEDGER).read_text())
    del ledger["stages"]["index"]
    (out / LEDGER).write_text(json.dumps(ledger))
    for name in INDEX_FILES:
        (out / "raw" / name).unlink()
    atlas = load_atlas(out)
    sp = atlas.spaces["raw"]
    assert sp.index is None
    index = SpatialIndex.build(sp.xy, World.around(sp.bounds))
    assert index.nearest(float(sp.xy[5, 0]), float(sp.xy[5, 1]), 1e-6) == 5
    run = build_atlas(
        None,
        [f"text {i}" for i in range(300)],
        out,
        config=AtlasConfig(layout="pca", calibrate="none"),
        vectors=made_up_vectors(300),
    )
    assert run.computed == ["index"]  # a rerun adds only the index
    assert isinstance(load_atlas(out).spaces["raw"].index.codes, np.memmap)


def test_a_map_without_clusters_opens(tmp_path: Path) -> None:
    """Every point in no cluster (-1) and no cluster in clusters.json (a tiny or uniform corpus): the cluster
    numbers, checked a chunk at a time, are within range."""
    out = small_atlas(tmp_path / "a")
    meta = json.loads((out / "raw" / "clusters.json").read_text())
    (out / "raw" / "clusters.json").write_text(json.dumps({**meta, "clusters": [], "levels": []}))
    forge(out, "raw/cluster.npy", np.full(300, -1, np.int32))
    forge(out, "raw/clusters.json", None)
    assert load_atlas(out).spaces["raw"].clusters == []
