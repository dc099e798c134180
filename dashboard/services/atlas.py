"""The Atlas page's services: build (once, on disk, one build per folder) and load whole-corpus atlases, and
cache what the map needs per choice (colours, the tile map, search hits, box selections, metrics). The
figures themselves are built in ``isoscope.dashboard.figures.atlas``, the tiles served by
``isoscope.dashboard.tiles``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import streamlit as st

from isoscope.atlas.folder import LEDGER, AtlasDamaged, finished_atlas
from isoscope.atlas.pipeline import (
    MAX_ATLAS_ROWS,
    Atlas,
    AtlasConfig,
    build_atlas,
    is_complete,
    load_atlas,
)
from isoscope.atlas.tiles import TileMap
from isoscope.cache import default_cache_dir, make_key, text_digest
from isoscope.dashboard.figures import atlas as figures
from isoscope.dashboard.launch import ENV_ATLAS_DIR
from isoscope.dashboard.services.keyed import Vectors
from isoscope.dashboard.services.space import SessionSpace
from isoscope.data import Corpus, load_corpus
from isoscope.errors import InputError
from isoscope.neighbours.costs import record_umap

if TYPE_CHECKING:  # services.models loads models: imported where one is loaded
    from isoscope.dashboard.services.models import ModelKey

ATLAS_DIR_ENV = ENV_ATLAS_DIR  # a finished atlas folder (isoscope atlas --out DIR; isoscope app DIR) to open
STAGE_TEXT = {
    "wait": "Another session is building this atlas; it is shared as soon as it is done",
    "texts": "Saving the texts",
    "embed": "Embedding every text",
    "raw_knn": "Neighbour graph (raw)",
    "raw_layout": "2-D layout (raw; UMAP compiles its code on a machine's first run)",
    "raw_clusters": "Density, clusters and labels (raw)",
    "calibrate": "Calibrating every vector",
    "cal_knn": "Neighbour graph (calibrated)",
    "cal_layout": "2-D layout (calibrated)",
    "cal_clusters": "Density, clusters and labels (calibrated)",
    "extras": "Norms, lengths, neighbour overlap",
    "index": "Spatial index of the maps",
}
NEIGHBOURS_MAX_ROWS = MAX_ATLAS_ROWS  # Open in Neighbours reads every text and the vectors: up to this many


# ------------------------------------------------------------------ sources and building


def atlas_dir_env() -> str | None:
    path = os.environ.get(ATLAS_DIR_ENV, "").strip()
    return path or None


def launched_atlas() -> str | None:
    """The atlas folder given to ``isoscope app`` (``ISOSCOPE_ATLAS_DIR``) as the Atlas page names it, checked:
    a finished atlas (InputError when it is not); None when none was given."""
    given = atlas_dir_env()
    return None if given is None else str(finished_atlas(given))


def warm(path: str) -> None:
    """What the Atlas page's first view of the atlas in ``path`` computes (the atlas opened and checked, the first
    space's tile map, colours and cluster names), into the caches the page reads: the server calls it at start for
    the launched atlas, so that its first visitor finds the map ready (bench/RESULTS.md, issue 42)."""
    atlas = open_atlas(path)
    space = next(iter(atlas.spaces))
    colouring(path, space, figures.colour_options(atlas)[0])
    cluster_names(path, space)
    atlas.spaces[space].view  # noqa: B018 (a cached property: the map's first view box)


def max_rows() -> int:
    """Texts an atlas may have here: ``MAX_ATLAS_ROWS``, or in classroom mode the class's row limit (every
    upload path keeps the class limits)."""
    from isoscope.dashboard import classroom
    from isoscope.data import DecodeLimits

    return min(MAX_ATLAS_ROWS, DecodeLimits.from_env().max_rows) if classroom.enabled() else MAX_ATLAS_ROWS


@st.cache_data(show_spinner="Reading the corpus…", max_entries=2)
def read_corpus(path: str, text_column: str | None, mtime: float, limit: int) -> Corpus:
    """A corpus file of up to ``limit`` rows (raises InputError; errors are not cached)."""
    return load_corpus(path, text_column=text_column, max_rows=limit)


@st.cache_data(show_spinner="Reading the upload…", max_entries=2)
def parse_upload(data: bytes, name: str, limit: int) -> Corpus:
    """An uploaded corpus of up to ``limit`` rows, decoded within the server's limits (one of
    ``services.data.PARALLEL_PARSES`` at a time)."""
    from isoscope.dashboard.services.data import _parsing

    with _parsing:
        return load_corpus(data, name, max_rows=limit)


def atlas_folder(model_fingerprint: str, corpus: Corpus, config: AtlasConfig) -> Path:
    """Where the atlas of ``corpus`` with ``config`` lives in the cache (content-keyed)."""
    meta_digest = text_digest(map(str, corpus.meta.columns))
    key = make_key("atlas-v2", model_fingerprint, text_digest(corpus.texts), meta_digest, json.dumps(config.to_dict()))
    return default_cache_dir() / "atlas" / key


def ensure_atlas(model: ModelKey, corpus: Corpus, config: AtlasConfig) -> str:
    """The folder of a finished atlas of ``corpus``: found in the cache (and checked), or built (or repaired)
    now with a progress bar; a build another session started is waited for and shared."""
    from isoscope.dashboard.services import models

    encoder = models.encoder(model)
    return _built(encoder, corpus, atlas_folder(encoder.fingerprint, corpus, config), config, model=model)


def ensure_vectors_atlas(space: SessionSpace, corpus: Corpus, config: AtlasConfig) -> str:
    """The folder of a finished atlas of the session's vectors file (``corpus``: its rows), keyed by the file's
    provenance: found in the cache, or built now from its vectors (nothing is embedded)."""
    assert space.table is not None
    return _built(None, corpus, atlas_folder(space.key, corpus, config), config, space.table.vectors)


def _built(
    encoder,
    corpus: Corpus,
    path: Path,
    config: AtlasConfig,
    vectors: np.ndarray | None = None,
    model: ModelKey | None = None,
) -> str:
    """``path`` when it holds a finished atlas, else built now (``vectors``: nothing is embedded) with a bar,
    and, when it will take long, what it will cost (said before the build starts, cleared when it is done)."""
    if is_complete(path):
        try:
            open_atlas(str(path))  # every file checked once per load; a damaged one is rebuilt below
            return str(path)
        except AtlasDamaged:
            pass
    from isoscope.dashboard.services import costs
    from isoscope.dashboard.services.keyed import texts

    dim = encoder.hidden_size if encoder is not None else vectors.shape[1]
    cost = costs.atlas(model, texts(corpus.texts), config, dim)
    note = st.empty()
    if cost.long:
        note.caption(f":material/schedule: Building this atlas: {cost.describe()} on this machine.")
    bar = st.progress(0.0, text="Building the atlas…")

    def progress(stage: str, done: int, total: int) -> None:
        frac = done / total if total else 1.0
        text = STAGE_TEXT.get(stage, stage)
        counted = stage != "wait" and total > 1  # a stage's start and end marks are (0, 1) and (1, 1): no count
        bar.progress(min(1.0, frac), text=f"{text}: {done:,} / {total:,}" if counted else f"{text}…")

    run = build_atlas(encoder, corpus.texts, path, config=config, meta=corpus.meta, progress=progress, vectors=vectors)
    if config.layout == "umap" and not 0 < config.landmarks < len(corpus):  # the rate the next estimate uses
        for stage in ("raw_layout", "cal_layout"):
            if stage in run.seconds:
                record_umap(len(corpus), run.seconds[stage])
    bar.empty()
    note.empty()
    return str(path)


@st.cache_resource(show_spinner="Loading the atlas…", max_entries=2)
def load(path: str, version: int) -> Atlas:
    """The atlas in ``path`` (arrays shared by every session, never copied); ``version``: its ledger's mtime."""
    return load_atlas(path)


def atlas_version(path: str) -> int:
    """Changes whenever a stage of the atlas is (re)built: the ledger's modification time."""
    try:
        return os.stat(Path(path) / LEDGER).st_mtime_ns
    except OSError:
        return 0


def open_atlas(path: str) -> Atlas:
    return load(path, atlas_version(path))


@st.cache_resource(show_spinner="Reading the atlas's texts and vectors…", max_entries=2)
def _atlas_corpus(path: str, version: int) -> tuple[Corpus, Vectors]:
    atlas = open_atlas(path)
    if atlas.n > NEIGHBOURS_MAX_ROWS:  # the Neighbours page holds every text: bounded like an atlas build
        raise InputError(
            f"the Neighbours page takes up to {NEIGHBOURS_MAX_ROWS:,} texts and this atlas has {atlas.n:,}; "
            "search and select on the Atlas page instead"
        )
    points = atlas.points  # read whole here (under ISOSCOPE_MAX_PARQUET_BYTES), never on the map's path
    meta = points.drop(columns=["text"]).reset_index(drop=True)
    corpus = Corpus([str(t) for t in atlas.texts], meta, name=Path(path).name)
    vectors = np.ascontiguousarray(atlas.vectors("raw"), dtype=np.float32)  # (n, d)
    return corpus, Vectors(make_key("atlas-raw", path, version), vectors)


def atlas_corpus(path: str) -> tuple[Corpus, Vectors]:
    """The texts (with their metadata) of the atlas in ``path`` and its raw vectors: the rows the Atlas page
    showed, for the Neighbours page (nothing is embedded again). Reads every text: an atlas over
    ``NEIGHBOURS_MAX_ROWS`` texts, or whose table decodes past the Parquet limit, is an InputError."""
    return _atlas_corpus(path, atlas_version(path))


# ------------------------------------------------------------------ what the map needs, cached per choice


@dataclass(frozen=True)
class Colouring:
    """One colour choice of one space as the tiles draw it: ``codes`` (n,) uint8 in the tile map's order (one
    byte a point: 10 MB at ten million), the colour table ``lut`` (k, 3) uint8 and the legend."""

    codes: np.ndarray
    lut: np.ndarray
    legend: list[tuple[str, str]]


@st.cache_resource(show_spinner=False, max_entries=8)
def _colouring(path: str, space: str, colour_by: str, version: int) -> Colouring:
    codes, lut, legend = figures.colour_codes(open_atlas(path), space, colour_by)  # (n,) in row order
    return Colouring(tile_map(path, space).sorted(codes), lut, legend)


def colouring(path: str, space: str, colour_by: str) -> Colouring:
    """``figures.atlas.colour_codes`` of the atlas in ``path`` in the tile map's order, computed chunk by chunk
    once per choice (shared by the page and the tile routes)."""
    return _colouring(path, space, colour_by, atlas_version(path))


def legend(path: str, space: str, colour_by: str) -> list[tuple[str, str]]:
    return colouring(path, space, colour_by).legend


@st.cache_resource(show_spinner=False, max_entries=4)
def _tile_map(path: str, space: str, version: int) -> TileMap:
    sp = open_atlas(path).spaces[space]
    if sp.index is None:  # a folder built before the index stage: sorted here, in memory
        return TileMap.of(sp.xy, sp.bounds, density_grid=sp.grid, point_density=sp.density)
    return TileMap.of_index(sp.index, sp.bounds, density_grid=sp.grid, point_density=sp.density)


def tile_map(path: str, space: str) -> TileMap:
    """The spatial index (the folder's, memory-mapped), tile pyramid and contour field of one space (shared by
    the page and the tile routes)."""
    return _tile_map(path, space, atlas_version(path))


@st.cache_data(show_spinner=False, max_entries=8)
def cluster_names(path: str, space: str) -> dict[int, str]:
    return open_atlas(path).spaces[space].cluster_names()


@st.cache_data(show_spinner=False, max_entries=64)
def rows_in_box(path: str, space: str, box: tuple[float, float, float, float]) -> np.ndarray:
    """Rows (m,) whose point lies in the box (x0, y0, x1, y1) of the space's map."""
    return tile_map(path, space).index.rows_in_box(*box)


@st.cache_data(show_spinner=False, max_entries=32)
def cluster_rows(path: str, space: str, clusters: tuple[int, ...]) -> np.ndarray:
    """Rows (m,) ascending in any of ``clusters``, read from the memory map a chunk at a time."""
    cluster = open_atlas(path).spaces[space].cluster
    step = 1 << 20
    found = [
        s + np.flatnonzero(np.isin(np.asarray(cluster[s : s + step]), clusters)) for s in range(0, len(cluster), step)
    ]
    return np.concatenate(found).astype(np.int64) if found else np.zeros(0, np.int64)


@st.cache_data(show_spinner="Searching…", max_entries=32)
def search(path: str, query: str) -> np.ndarray:
    """Rows (m,) whose text contains ``query`` (case-insensitive, plain text, not a pattern), one row group of
    ``points.parquet`` at a time (``Atlas.search``)."""
    return open_atlas(path).search(query)


@st.cache_data(show_spinner=False, max_entries=16)
def selection_table(path: str, space: str, rows: tuple[int, ...]) -> pd.DataFrame:
    """``figures.atlas.selection_table`` of ``rows``: texts and metadata read from the row groups they fall in,
    once per selection (not at every rerun of the page)."""
    return figures.selection_table(open_atlas(path), space, np.asarray(rows, np.int64))


@st.cache_data(show_spinner="Anisotropy metrics…", max_entries=16)
def metrics(path: str, space: str, rows: tuple[int, ...], sample: int = 20_000, seed: int = 0) -> pd.DataFrame:
    """isoscope.geometry.metrics.all_metrics of the selected rows and of the whole corpus (each a seeded sample of at most
    ``sample`` rows), side by side."""
    from isoscope.geometry.metrics import all_metrics
    from isoscope.sampling import sample_indices

    atlas = open_atlas(path)
    vectors = atlas.vectors(space)
    whole = sample_indices(len(vectors), sample, seed)
    picked = np.asarray(rows, np.int64)[sample_indices(len(rows), sample, seed)]
    out = {"whole corpus": all_metrics(np.asarray(vectors[whole], np.float32), seed)}
    if len(picked) >= 2:
        out["selection"] = all_metrics(np.asarray(vectors[np.sort(picked)], np.float32), seed)
    frame = pd.DataFrame(out)
    frame.index.name = "metric"
    return frame.reset_index()
