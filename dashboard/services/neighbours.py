"""Neighbour indexes over a space, one query's neighbours in two spaces, and corpus-wide neighbourhood change."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import streamlit as st

from isoscope.dashboard.services.calibration import calibrated
from isoscope.dashboard.services.keyed import HASH_FUNCS, Vectors
from isoscope.errors import InputError
from isoscope.neighbours.change import NeighbourhoodChange, QueryNeighbours, compare_hits
from isoscope.neighbours.change import neighbourhood_change as change_of_neighbourhoods
from isoscope.neighbours.exact import check_k
from isoscope.neighbours.index import VectorIndex, as_unit_float32, build_index


@dataclass(frozen=True)
class SpaceIndex:
    """A FAISS index over one space and the unit rows it holds (for exact ranks)."""

    index: VectorIndex
    unit: np.ndarray  # (n, d) L2-normalised float32, read-only


@st.cache_resource(show_spinner="Building the neighbour index…", max_entries=8, hash_funcs=HASH_FUNCS)
def space_index(vectors: Vectors) -> SpaceIndex:
    """isoscope.neighbours.index.build_index over ``vectors`` (kind by size)."""
    index = build_index(vectors.array)
    unit = index.stored_vectors() if index.kind == "flat" else as_unit_float32(vectors.array)
    unit.flags.writeable = False
    return SpaceIndex(index, unit)


def query_neighbours(
    raw: Vectors,
    calibrated_space: Vectors,
    raw_query: np.ndarray,
    *,
    cal_query: np.ndarray,
    k: int,
    row: int | None = None,
) -> QueryNeighbours:
    """Top-``k`` of one query vector in the raw and the calibrated space, searched with the cached FAISS
    indexes, with each hit's exact rank in the other space, places gained and overlap@k (Jaccard).

    ``raw_query`` (1, d) / ``cal_query`` (1, d'). ``row``: the corpus row the query is, left out of its own
    neighbours as everywhere else (``isoscope.neighbours.exact.check_k`` bounds ``k``).
    """
    raw_ix, cal_ix = space_index(raw), space_index(calibrated_space)
    k = check_k(k, raw_ix.unit.shape[0], outside=row is None)
    q_raw = as_unit_float32(raw_query, "query", raw_ix.index.dim)[0]  # (d,)
    q_cal = as_unit_float32(cal_query, "calibrated query", cal_ix.index.dim)[0]  # (d',)
    hits = []
    for ix, q in ((raw_ix, q_raw), (cal_ix, q_cal)):
        scores, ids = ix.index.search(q[None], k + (row is not None))  # (1, k [+ 1]) each
        keep = (ids[0] >= 0) & (ids[0] != (-1 if row is None else row))
        hits.append((ids[0][keep][:k], scores[0][keep][:k]))  # (k,), (k,)
    return compare_hits(row, hits[0], hits[1], raw_scores=raw_ix.unit @ q_raw, cal_scores=cal_ix.unit @ q_cal)


@st.cache_data(show_spinner="Comparing every neighbourhood…", max_entries=32, hash_funcs=HASH_FUNCS)
def neighbourhood_change(raw: Vectors, calibrated_space: Vectors, k: int, sample: int) -> NeighbourhoodChange:
    """isoscope.neighbours.change.neighbourhood_change (each sentence's own top-``k`` excludes itself) on a seeded sample."""
    return change_of_neighbourhoods(raw.array, calibrated_space.array, k=k, sample=sample, seed=0)


@st.cache_data(show_spinner=False, max_entries=16, hash_funcs=HASH_FUNCS)
def overlap_by_calibrator(
    raw: Vectors, fit: Vectors, methods: tuple[str, ...], *, flow_json: str, k: int, sample: int
) -> pd.DataFrame:
    """Mean overlap@k between raw and calibrated neighbourhoods for each calibrator (fitted on ``fit``).

    A method that cannot be fitted on these vectors (e.g. ``abtt:3`` on 3-dimensional ones, an InputError)
    is left out; the page lists it.
    """
    bar = st.progress(0.0, text="Neighbourhoods under each calibrator…")
    rows = []
    try:
        for i, m in enumerate(methods):
            bar.progress(i / max(len(methods), 1), text=f"Neighbourhoods under {m}…")
            try:
                z = calibrated(m, flow_json if m == "flow" else "", fit, raw)
            except InputError:
                continue
            change = neighbourhood_change(raw, z, k=k, sample=sample)
            rows.append({"calibration": m, "mean_overlap": change.mean_overlap, "k": change.k})
    finally:
        bar.empty()
    return pd.DataFrame(rows)
