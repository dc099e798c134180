"""Neighbours: which sentences are near each other, before and after calibration.

The k nearest neighbours of a query (a corpus sentence or a typed one) in the raw and the calibrated
space side by side, their overlap@k, and corpus-wide: whose neighbourhood changed most, per calibrator.
"""

from __future__ import annotations

import streamlit as st

from isoscope.cache import text_digest
from isoscope.calibrate.methods import describe_method
from isoscope.dashboard import ui
from isoscope.dashboard.figures.neighbours import changed_table, neighbour_table, overlap_bars, styled
from isoscope.dashboard.services import atlas as atlas_service
from isoscope.dashboard.services import calibration, data, embeddings, neighbours
from isoscope.dashboard.services.keyed import Vectors, vectors_of
from isoscope.data import CORPUS_FORMATS, Corpus
from isoscope.errors import InputError

# its place in the navigation and its line on the Home page (dashboard/navigation.py)
PAGE = {
    "section": "Neighbours",
    "title": "Neighbours",
    "icon": ":material/hub:",
    "order": 10,
    "teaches": "Who is whose nearest neighbour, before and after calibration.",
}

VECTORS_SOURCE = "Upload vectors (.npy)"  # next to ui.CORPUS_SOURCES
COMPARED_METHODS = ("whitening", "sn+abtt:3", "abtt:3")
META_COLUMNS = 3  # metadata columns shown next to each neighbour


def precomputed_input() -> tuple[Corpus, Vectors] | None:
    """Uploaded vectors (.npy) with a metadata table; a failed upload keeps the previous pair."""
    st.caption(
        "Vectors: a 2-D float .npy (one row per text, saved with allow_pickle=False). Table: one row per vector, "
        "in the same order, with a 'text' column; other columns become metadata."
    )
    c1, c2 = st.columns(2)
    up_vec = c1.file_uploader("Vectors (.npy)", type=["npy"], key="nb_vec_upload")
    up_meta = c2.file_uploader("Texts and metadata", type=[*CORPUS_FORMATS, "json", "tab"], key="nb_meta_upload")
    loaded = st.session_state.get("nb_vec_loaded")
    if up_vec is not None and up_meta is not None:
        ids = (up_vec.file_id, up_meta.file_id)
        if st.session_state.get("nb_vec_file_ids") != ids:
            try:
                vectors = data.parse_vectors(up_vec.getvalue(), up_vec.name)
                corpus = data.parse_corpus(up_meta.getvalue(), up_meta.name)
                if len(corpus) != len(vectors):
                    raise InputError(
                        f"{up_vec.name} has {len(vectors):,} rows but {up_meta.name} has {len(corpus):,} texts "
                        "(rows with empty text are dropped); they must match row for row"
                    )
                keyed = vectors_of(vectors, text_digest(corpus.texts))
                loaded = st.session_state["nb_vec_loaded"] = (corpus, keyed, up_vec.name)
                st.session_state["nb_vec_file_ids"] = ids
            except InputError as exc:
                ui.user_error(exc)
                if loaded is not None:
                    st.caption(
                        f"Still using the previous files, {ui.literal(loaded[2])} and {ui.literal(loaded[0].name)}."
                    )
    if loaded is None:
        st.info("Upload a .npy of vectors and the table of their texts to begin.")
        return None
    corpus, vectors, vec_name = loaded
    ui.show_warnings(corpus.warnings)
    st.caption(
        f"Loaded {ui.literal(vec_name)}: {vectors.shape[0]:,} vectors of dimension {vectors.shape[1]}, "
        f"texts from {ui.literal(corpus.name)}."
    )
    return corpus, vectors


s = ui.settings()
st.title("Neighbours")
st.caption(
    "The nearest sentences by cosine similarity, in the raw space and after calibration. Calibration spreads "
    "the vectors out of their narrow cone; this page shows whose neighbours change and how much "
    "(overlap@k: the Jaccard index of the two top-k sets, 1 = the same neighbours)."
)

own_space = not ui.space().is_model  # the session's space is a vectors file: its rows are the corpus
embedded = False
if own_space:
    corpus = ui.space_corpus("nb")
    loaded = None if corpus is None else (corpus, ui.space().vectors())
else:
    opened = st.session_state.get("nb_atlas")  # "Open in Neighbours" on an atlas folder: its texts and vectors
    source = ui.corpus_source("nb", (VECTORS_SOURCE, *([ui.ATLAS_OPENED] if opened else [])))
    embedded = source not in (VECTORS_SOURCE, ui.ATLAS_OPENED)
    if source == ui.ATLAS_OPENED:
        try:
            loaded = atlas_service.atlas_corpus(opened)
        except InputError as exc:  # the folder changed or was damaged since the Atlas page opened it
            ui.user_error(exc)
            st.stop()
        corpus = loaded[0]
        st.caption(
            f"The atlas {ui.literal(corpus.name)}: {len(corpus):,} texts with the vectors it was built from "
            f"(d = {loaded[1].shape[1]})."
        )
    elif embedded:
        corpus = ui.corpus_from(source, "nb")
    else:
        loaded = precomputed_input()
        corpus = None if loaded is None else loaded[0]
if corpus is None:
    st.stop()
vectors_name = "the atlas's vectors" if not own_space and source == ui.ATLAS_OPENED else "uploaded vectors"
texts = corpus.texts
n = len(texts)
if n < 3:
    st.info("Neighbours need at least 3 texts; load a larger corpus.")
    st.stop()
meta_cols = ui.meta_columns(corpus)[:META_COLUMNS]

if embedded:
    raw = embeddings.embed(s.model, texts, s.pooling, s.max_length)  # (n, d)
else:
    _, raw = loaded
    st.caption(
        "The vectors are used as loaded: the sidebar's model and pooling apply only to typed queries; "
        "the calibrator is fitted on the loaded vectors."
    )

# ------------------------------------------------------------------ calibration
space = ui.calibrated_space("nb_cal", raw, texts if embedded else None)
cal, calibrated = space.calibration, space.vectors

# ------------------------------------------------------------------ one query
st.subheader("Neighbours of one sentence")
ui.clamp("nb_pick", 0, n - 1)
ui.clamp("nb_k", 1, min(50, n - 1))
ui.clamp("nb_sample", 2, n)
c1, c2, c3 = st.columns([3, 3, 1])
pick = c1.selectbox(
    "Pick a corpus sentence",
    range(n),
    format_func=lambda i: texts[i] if len(texts[i]) <= 120 else texts[i][:117] + "…",
    key="nb_pick",
)
typed = c2.text_input(
    "…or type a sentence", key="nb_query", max_chars=2000, placeholder="empty = use the picked sentence"
).strip()
k = int(c3.slider("k", 1, min(50, n - 1), min(10, n - 1), key="nb_k"))

query_text, query_row = texts[pick], pick
q_raw, q_cal = raw.array[pick : pick + 1], calibrated.array[pick : pick + 1]  # (1, d), (1, d')
if typed:
    if not embedded and raw.shape[1] != s.hidden_size:
        st.info(
            f"A typed sentence is embedded with the sidebar model (d = {s.hidden_size}), which does not match the "
            f"loaded vectors (d = {raw.shape[1]}); showing the picked sentence instead."
        )
    else:
        if not embedded:
            st.caption(
                "Typed queries are embedded with the sidebar model and pooling: they only make sense if "
                "the loaded vectors came from the same model."
            )
        query_text, query_row = typed, None
        q_raw = embeddings.embed(s.model, [typed], s.pooling, s.max_length).array  # (1, d)
        q_cal = calibration.fit_calibrator(cal.method, cal.flow_json, space.fit).transform(q_raw)
st.markdown(f"**Query:** {ui.literal(query_text)}")

result = neighbours.query_neighbours(raw, calibrated, q_raw, q_cal, k, query_row)
k_shown = len(result.before_ids)
new = int((result.after_rank_before > k_shown).sum())
m1, m2, m3 = st.columns(3)
m1.metric(
    f"overlap@{k_shown} (Jaccard)",
    f"{result.overlap:.2f}",
    help="|raw top-k ∩ calibrated top-k| / |raw top-k ∪ calibrated top-k|: 1 = the same neighbours.",
)
m2.metric("new in the calibrated top-k", f"{new}")
m3.metric("largest move up", f"{max(int(result.rank_shift.max()), 0):+d}" if k_shown else "0")

raw_table = neighbour_table(
    corpus, meta_cols, result.before_ids, result.before_scores, result.before_rank_after, k_shown, "raw"
)
cal_table = neighbour_table(
    corpus, meta_cols, result.after_ids, result.after_scores, result.after_rank_before, k_shown, "calibrated"
)
left, right = st.columns(2)
with left:
    st.markdown(f"**Raw** ({ui.literal(s.pooling if embedded else ui.space().label if own_space else vectors_name)})")
    st.dataframe(styled(raw_table), width="stretch", hide_index=True)
    ui.download_table(raw_table, "neighbours_raw")
with right:
    st.markdown(f"**Calibrated** ({ui.literal(cal.method)})", help=describe_method(cal.method))
    st.dataframe(styled(cal_table), width="stretch", hide_index=True)
    ui.download_table(cal_table, "neighbours_calibrated")
st.caption(
    "Ranks count every other corpus row (a picked sentence is never its own neighbour). shift: places gained under "
    "calibration (+ moved up); 'new' entered the calibrated top-k, 'dropped' left it."
)

# ------------------------------------------------------------------ the whole corpus
st.divider()
st.subheader("Across the corpus")
sample = int(
    st.number_input(
        "Sentences compared (seeded sample; neighbours are still searched among all rows)",
        min_value=2,
        max_value=n,
        value=min(n, 1000),
        step=100,
        key="nb_sample",
    )
)
change = neighbours.neighbourhood_change(raw, calibrated, k, sample)
st.metric(
    f"mean overlap@{change.k} under {cal.method}",
    f"{change.mean_overlap:.3f}",
    help="Each sentence's own top-k (itself excluded), raw vs calibrated, averaged over the compared sentences.",
)
most = change.to_frame().head(20)
changed = changed_table(corpus, meta_cols, most["id"].to_numpy(), most["overlap"].to_numpy(), change.k)
st.markdown("**Sentences whose neighbourhoods changed most**")
st.dataframe(changed, width="stretch", hide_index=True)
ui.download_table(change.to_frame().assign(text=lambda d: [texts[i] for i in d["id"]]), "neighbourhood_change")

methods = tuple(dict.fromkeys([*COMPARED_METHODS, cal.method]))
by_method = neighbours.overlap_by_calibrator(raw, space.fit, methods, cal.flow_json, k, sample)
skipped = [m for m in methods if m not in set(by_method["calibration"])]
if skipped:
    st.caption(f"Left out (cannot be fitted on {raw.shape[1]}-dimensional vectors): {', '.join(skipped)}.")
st.markdown("**Mean overlap per calibrator** (lower = calibration rearranges neighbourhoods more)")
ui.chart(overlap_bars(by_method, cal.method, change.k), "overlap_by_calibrator")
ui.download_table(by_method, "overlap_by_calibrator")
