"""Projection map: the corpus in 2-D or 3-D (PCA, UMAP, t-SNE), raw and calibrated side by side.

Colour by a metadata column, the vector norm or the length; hover shows the text; select a region (lasso
or box) to list its points; highlight the texts that contain a search string.
"""

from __future__ import annotations

import html
import json

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from isoscope.dashboard import ui
from isoscope.dashboard.services import embeddings, models, projection
from isoscope.dashboard.services.keyed import texts as keyed_texts
from isoscope.errors import InputError
from isoscope.neighbours.projection import precomputed_coordinates
from isoscope.sampling import sample_indices

METHODS = {"PCA": "pca", "UMAP": "umap", "t-SNE": "tsne"}
PRECOMPUTED = "precomputed (x, y columns)"
DERIVED = ("norm", "token length", "text length", "none")
MAX_CATEGORIES = 20  # more distinct values: the rarest are drawn together as "other"


def colour_values(name: str) -> tuple[np.ndarray | None, bool]:
    """Colour of every corpus row (n,) and whether it is categorical."""
    if name == "none":
        return None, False
    if name == "norm":
        return np.linalg.norm(raw.array, axis=1), False
    if name == "token length":
        return models.token_lengths(s.model, keyed_texts(texts)), False
    if name == "text length":
        return np.array([len(t) for t in texts]), False
    col = corpus.meta[meta_cols[name]]
    num = pd.to_numeric(col, errors="coerce")
    if num.notna().all() and num.nunique() > MAX_CATEGORIES:
        return num.to_numpy(np.float64), False
    return col.fillna("(missing)").astype(str).to_numpy(), True


def map_figure(
    coords: np.ndarray, rows: np.ndarray, title: str, colour: np.ndarray | None, categorical: bool, hits: np.ndarray
) -> go.Figure:
    """Scattergl (2-D) or Scatter3d (3-D) of ``coords`` (m, 2|3) for corpus ``rows`` (m,); row ids in customdata."""
    dims = coords.shape[1]
    trace = go.Scattergl if dims == 2 else go.Scatter3d
    size = 7 if dims == 2 else 3
    hover = np.array([ui.plot_text(texts[i]) for i in rows], dtype=object)  # (m,)

    def points(mask: np.ndarray, **kw) -> go.Scattergl | go.Scatter3d:
        xyz = {"x": coords[mask, 0], "y": coords[mask, 1]} | ({"z": coords[mask, 2]} if dims == 3 else {})
        return trace(
            **xyz, mode="markers", text=hover[mask], customdata=rows[mask].tolist(), hoverlabel={"align": "left"}, **kw
        )

    fig = go.Figure()
    everything = np.ones(len(rows), bool)
    if colour is None:
        fig.add_trace(points(everything, name="texts", hovertemplate="%{text}<extra></extra>", marker={"size": size}))
    elif categorical:
        values = colour[rows]  # (m,)
        counts = pd.Series(values).value_counts()
        keep = list(counts.index[: MAX_CATEGORIES - 1]) if len(counts) > MAX_CATEGORIES else list(counts.index)
        groups = [(c, values == c) for c in sorted(keep)]
        if len(keep) < len(counts):
            groups.append(("other", ~np.isin(values, keep)))
        for cat, mask in groups:
            name = html.escape(str(cat)[:40])
            fig.add_trace(
                points(
                    mask,
                    name=name,
                    hovertemplate="%{text}<extra>%{fullData.name}</extra>",
                    marker={"size": size, "opacity": 0.8},
                )
            )
    else:
        fig.add_trace(
            points(
                everything,
                name=html.escape(colour_by),
                hovertemplate="%{text}<br>value %{marker.color:.4g}<extra></extra>",
                marker={
                    "size": size,
                    "opacity": 0.85,
                    "color": colour[rows],
                    "colorscale": "Viridis",
                    "showscale": True,
                    "colorbar": {"title": {"text": html.escape(colour_by)}},
                },
            )
        )
    found = hits[rows]
    if found.any():
        fig.add_trace(
            points(
                found,
                name=f"matches ({int(found.sum())})",
                hovertemplate="%{text}<extra>match</extra>",
                marker={"size": 2 * size + 4, "symbol": "circle-open", "color": "#d62728", "line": {"width": 2}},
            )
        )
    fig.update_layout(
        title={"text": html.escape(title)},
        height=560,
        margin={"t": 50, "l": 10, "r": 10, "b": 10},
        legend={"itemsizing": "constant"},
    )
    if dims == 2:
        fig.update_layout(dragmode="lasso", xaxis={"showticklabels": False}, yaxis={"showticklabels": False})
    return fig


def selectable_chart(fig: go.Figure, name: str) -> set[int]:
    """Like ui.chart, with lasso/box selection: returns the corpus rows selected on the chart."""
    event = ui.chart(fig, name, selectable=True)
    selected: set[int] = set()
    for point in (event or {}).get("selection", {}).get("points", []):
        # (trace, index in trace) -> the corpus row kept in that trace's customdata
        curve, index = point.get("curve_number"), point.get("point_index", point.get("point_number"))
        if isinstance(curve, int) and isinstance(index, int) and 0 <= curve < len(fig.data):
            rows_ = fig.data[curve].customdata
            if rows_ is not None and 0 <= index < len(rows_):
                selected.add(int(np.ravel(rows_[index])[0]))
    return selected


def show_map(coords: np.ndarray, rows: np.ndarray, title: str, name: str) -> set[int]:
    fig = map_figure(coords, rows, title, colour, categorical, hits)
    if coords.shape[1] == 2:
        return selectable_chart(fig, name)
    ui.chart(fig, name)
    return set()


s = ui.settings()
st.title("Projection map")
st.caption(
    "Every sentence as a point: nearby points have similar vectors. The same corpus is drawn from the raw "
    "vectors and from the calibrated ones (fitted on the corpus, no labels). PCA keeps the global shape; "
    "UMAP and t-SNE keep local neighbourhoods (distances between far clusters mean little)."
)
corpus = ui.corpus_input("pj")
if corpus is None:
    st.stop()
texts = corpus.texts
n = len(texts)
if n < 5:
    st.info("A map needs at least 5 texts; load a larger corpus.")
    st.stop()
raw = embeddings.embed(s.model, texts, s.pooling, s.max_length)  # (n, d)

space = ui.calibrated_space("pj", raw, texts)
cal, calibrated = space.calibration, space.vectors

# ------------------------------------------------------------------ map settings
xyz = precomputed_coordinates(corpus.meta)  # (n, 2|3) or None
labels = list(METHODS) + ([PRECOMPUTED] if xyz is not None else [])
c1, c2, c3, c4 = st.columns([2, 1, 2, 1])
label = c1.selectbox("Method", labels, key="pj_projection")
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
options = [*meta_cols, *DERIVED]
d1, d2 = st.columns(2)
colour_by = d1.selectbox(
    "Colour by", options, index=options.index("topic") if "topic" in options else 0, key="pj_color"
)
search = d2.text_input("Highlight texts containing", key="pj_search", max_chars=200).strip()
colour, categorical = colour_values(colour_by)
hits = np.array([search.lower() in t.lower() for t in texts]) if search else np.zeros(n, bool)  # (n,)
if search:
    st.caption(f"{int(hits.sum()):,} text(s) contain “{ui.literal(search)}” (drawn as red rings).")

# ------------------------------------------------------------------ the maps
selected: dict[str, set[int]] = {}
if method == "precomputed":
    rows = sample_indices(n, sample, seed)
    st.caption("Precomputed coordinates from the x/y columns: one map (calibration does not apply to them).")
    selected["precomputed"] = show_map(xyz[rows, :dims], rows, "precomputed coordinates", f"projection_xy_{dims}d")
else:
    params_json = json.dumps(params, sort_keys=True)
    spaces = (("raw", f"raw ({s.pooling})", raw), ("calibrated", f"calibrated ({cal.method})", calibrated))
    for col, (space_name, title, vectors) in zip(st.columns(2), spaces, strict=True):
        with col:
            try:
                rows, coords = projection.projection(vectors, method, dims, sample, seed, params_json)
            except InputError as exc:
                ui.user_error(exc)
                continue
            selected[space_name] = show_map(
                coords, rows, f"{label} · {title}", f"projection_{space_name}_{method}_{dims}d"
            )
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
