"""Projection map: the corpus in 2-D or 3-D (PCA, UMAP, t-SNE), raw and calibrated side by side.

Colour by a metadata column, the vector norm, the length or (after a Migration run) each text's adapter
cosine; hover shows the text; select a region (lasso or box) to list its points; highlight the texts that contain
a search string.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from isoscope.dashboard import ui
from isoscope.dashboard.figures import projection as figures
from isoscope.dashboard.services import models, projection
from isoscope.dashboard.services.keyed import texts as keyed_texts
from isoscope.errors import InputError
from isoscope.migrate.where import error_column
from isoscope.neighbours.projection import PROJECTION_DESCRIPTIONS, precomputed_coordinates
from isoscope.sampling import sample_indices

# its place in the navigation and its line on the Home page (dashboard/navigation.py)
PAGE = {
    "section": "Neighbours",
    "title": "Projection map",
    "icon": ":material/map:",
    "order": 20,
    "teaches": "The space as a 2D/3D map (PCA, UMAP, t-SNE), raw and calibrated side by side.",
}

METHODS = {"PCA": "pca", "UMAP": "umap", "t-SNE": "tsne"}
PCA_NOTE = (
    "PCA draws the two directions of largest variance, and in a sentence space those are rarely the topics: its "
    "map can look like one blob even when the neighbours keep the topics apart. The purity under each map "
    "measures it; UMAP draws the neighbourhoods."
)
PRECOMPUTED = "precomputed (x, y columns)"
DERIVED = ("norm", "token length", "text length", "none")
ADAPTER = "adapter cosine"  # offered when the Migration page has run (views/migration.py)
MIGRATION = "migration_result"


def method_words(label: str) -> str:
    """A Method option in words (``PROJECTION_DESCRIPTIONS``; the precomputed one: the file's own columns)."""
    if label == PRECOMPUTED:
        return "the coordinates in the corpus's own x and y (and z) columns, drawn as they are"
    return PROJECTION_DESCRIPTIONS[METHODS[label]]


def show_map(fig: go.Figure, name: str, dims: int) -> set[int]:
    """A map with downloads; on a 2-D map, the corpus rows a lasso or box selection picked."""
    if dims != 2:
        ui.chart(fig, name)
        return set()
    return figures.selected_rows(fig, ui.chart(fig, name, selectable=True))


s = ui.settings()
st.title("Projection map")
st.caption(
    "Every sentence as a point: nearby points have similar vectors. The same corpus is drawn from the raw "
    "vectors and from the calibrated ones (fitted on the corpus, no labels). PCA keeps the global shape; "
    "UMAP and t-SNE keep local neighbourhoods (distances between far clusters mean little)."
)
corpus = ui.space_corpus("pj")
if corpus is None:
    st.stop()
texts = corpus.texts
n = len(texts)
if n < 5:
    st.info("A map needs at least 5 texts; load a larger corpus.")
    st.stop()
raw = ui.space_vectors(texts)  # (n, d)

space = ui.calibrated_space("pj", raw, texts)
cal, calibrated = space.calibration, space.vectors

# ------------------------------------------------------------------ map settings
xyz = precomputed_coordinates(corpus.meta)  # (n, 2|3) or None
labels = list(METHODS) + ([PRECOMPUTED] if xyz is not None else [])
c1, c2, c3, c4 = st.columns([2, 1, 2, 1])
st.session_state.setdefault("pj_projection", figures.DEFAULT_METHOD)  # the map that shows the corpus (figures)
label = c1.selectbox("Method", labels, key="pj_projection", help=ui.glossary(labels, method_words))
dim_options = (2, 3) if label != PRECOMPUTED or xyz.shape[1] == 3 else (2,)
if st.session_state.get("pj_dims") not in dim_options:
    st.session_state["pj_dims"] = dim_options[0]
dims = int(c2.radio("Dimensions", dim_options, format_func=lambda d: f"{d}D", horizontal=True, key="pj_dims"))
ui.clamp("pj_sample", 5, n)
sample = int(
    c3.number_input(
        "Points drawn (seeded sample)", 5, n, min(n, 3000), step=500, key="pj_sample", help="Big corpora: sample."
    )
)
seed = int(c4.number_input("Seed", 0, 1_000_000, 0, key="pj_sample_seed"))
method = METHODS.get(label, "precomputed")
params: dict[str, float | int] = {}
if method == "umap":
    with st.expander("UMAP settings"):
        p1, p2 = st.columns(2)
        params["n_neighbors"] = int(p1.slider("Neighbours", 2, 100, 15, key="pj_umap_neighbors"))
        params["min_dist"] = float(p2.slider("Minimum distance", 0.0, 0.99, 0.1, 0.01, key="pj_umap_min_dist"))
elif method == "tsne":
    with st.expander("t-SNE settings"):
        params["perplexity"] = float(st.slider("Perplexity", 2.0, 100.0, 30.0, 1.0, key="pj_tsne_perplexity"))

meta_cols = {str(c): c for c in ui.meta_columns(corpus, exclude=DERIVED)}
space_is_model = ui.space().is_model
derived = DERIVED if space_is_model else tuple(d for d in DERIVED if d != "token length")  # needs the model
migration = st.session_state.get(MIGRATION)  # the Migration page's last run: each text's adapter cosine
options = [*meta_cols, *derived] + ([ADAPTER] if migration is not None else [])
d1, d2 = st.columns(2)
colour_by = d1.selectbox(
    "Colour by", options, index=options.index("topic") if "topic" in options else 0, key="pj_color"
)
search = d2.text_input("Highlight texts containing", key="pj_search", max_chars=200).strip()
if colour_by == "none":
    colour, categorical = None, False
elif colour_by == "norm":
    colour, categorical = np.linalg.norm(raw.array, axis=1), False
elif colour_by == "token length":
    colour, categorical = models.token_lengths(s.model, keyed_texts(texts)), False
elif colour_by == "text length":
    colour, categorical = np.array([len(t) for t in texts]), False
elif colour_by == ADAPTER:
    colour, categorical = error_column(migration, texts), False
    rec = migration.recommendation
    st.caption(
        f"{ADAPTER}: the cosine of each text's vector mapped by {ui.literal(rec.method)} ({rec.direction}) with its "
        f"true vector (1: exact), for the {int(np.isfinite(colour).sum()):,} texts of this corpus held out of the "
        "Migration page's last run; grey: no value (a fit pair, or a text not in that run)."
    )
else:
    colour, categorical = figures.meta_colours(corpus.meta[meta_cols[colour_by]])
hits = np.array([search.lower() in t.lower() for t in texts]) if search else np.zeros(n, bool)  # (n,)
if search:
    st.caption(f"{int(hits.sum()):,} text(s) contain “{ui.literal(search)}” (drawn as red rings).")

# ------------------------------------------------------------------ the maps
selected: dict[str, set[int]] = {}
if method == "precomputed":
    rows = sample_indices(n, sample, seed)
    st.caption("Precomputed coordinates from the x/y columns: one map (calibration does not apply to them).")
    hover = [ui.plot_text(texts[i]) for i in rows]
    fig = figures.map_figure(
        xyz[rows, :dims],
        rows,
        hover,
        title="precomputed coordinates",
        colour=colour,
        categorical=categorical,
        hits=hits,
        colour_name=colour_by,
    )
    selected["precomputed"] = show_map(fig, f"projection_xy_{dims}d", dims)
else:
    params_json = json.dumps(params, sort_keys=True)
    spaces = (
        ("raw", f"raw ({s.pooling if space_is_model else ui.plot_text(ui.space().label, 200)})", raw),
        ("calibrated", f"calibrated ({cal.method})", calibrated),
    )
    for col, (space_name, title, vectors) in zip(st.columns(2), spaces, strict=True):
        with col:
            try:
                rows, coords = projection.projection(vectors, method, dims, sample, seed, params_json)
            except InputError as exc:
                ui.user_error(exc)
                continue
            hover = [ui.plot_text(texts[i]) for i in rows]
            fig = figures.map_figure(
                coords,
                rows,
                hover,
                title=f"{label} · {title}",
                colour=colour,
                categorical=categorical,
                hits=hits,
                colour_name=colour_by,
            )
            selected[space_name] = show_map(fig, f"projection_{space_name}_{method}_{dims}d", dims)
            if categorical and colour is not None:
                purity = figures.map_purity(coords, colour[rows])
                st.caption(
                    f"{ui.literal(colour_by)} purity {purity:.2f}: the share of each point's {figures.PURITY_K} nearest "
                    f"neighbours on this map with its {ui.literal(colour_by)}."
                )
    if method == "pca":
        st.caption(PCA_NOTE)
if dims == 3:
    st.caption("Drag to rotate. Region selection works on the 2-D maps.")

# ------------------------------------------------------------------ selected region
chosen = sorted(set().union(*selected.values())) if selected else []
st.subheader("Selected points")
if not chosen:
    st.caption("Draw a lasso or a box on a 2-D map to list the points inside.")
else:
    table = pd.DataFrame({"row": chosen, "text": [texts[i] for i in chosen]})
    table["selected on"] = [", ".join(sp for sp, rows_ in selected.items() if i in rows_) for i in chosen]
    for c, column in meta_cols.items():
        table[c] = corpus.meta[column].iloc[chosen].astype(str).to_numpy()
    if colour is not None and not categorical:
        table[colour_by] = np.round(np.asarray(colour, np.float64)[chosen], 4)
    st.caption(f"{len(table):,} point(s).")
    st.dataframe(table, width="stretch", hide_index=True)
    ui.download_table(table, "projection_selection")
