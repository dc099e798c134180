"""Migration: can I switch from model A to model B without re-embedding the corpus, what would I keep, where would
I lose it (isoscope.migrate, issue 53).

A is the session's space (the sidebar's model, or a vectors file looked up by text); B is a model (a path or hub
id; in classroom mode the teacher's allowlist). Adapters are fitted both ways on a seeded sample of the task's
documents (or on generic texts embedded by both), scored against A and against re-embedding with B; the verdict,
the curve of kept against fit pairs, the label-free and labelled measures side by side, the losing queries, the
per-cluster error and the adapter's download. The last result stays in the session: the Projection map colours by
its per-text error.
"""

from __future__ import annotations

import logging

import streamlit as st

from isoscope.dashboard import classroom, ui
from isoscope.dashboard.services import costs, models
from isoscope.dashboard.services import migration as service
from isoscope.dashboard.services import retrieval as tasks
from isoscope.dashboard.services.embeddings import embed
from isoscope.dashboard.services.keyed import texts as keyed_texts
from isoscope.encode.pooling import default_pooling, parse_pooling, pooling_choices
from isoscope.errors import InputError
from isoscope.migrate.options import DEFAULT_THRESHOLD, NEW_TO_LEGACY

PAGE = {
    "section": "Neighbours",
    "title": "Migration",
    "icon": ":material/swap_horiz:",
    "order": 50,
    "teaches": "Switch model A to model B without re-embedding the corpus: adapters fitted both ways, what you keep.",
}

DEMO, UPLOAD = "Demo task", "Upload a BEIR zip"
SAMPLE, GENERIC = "A share of the task's documents", "Generic texts (a corpus), embedded by both"
METHODS = ("procrustes", "ridge", "ridge:procrustes", "lowrank:64", "mlp", "local:4")
LINEAR = ("procrustes", "ridge")
CURVE = (0.05, 0.10, 0.25, 0.5)
log = logging.getLogger(__name__)
RESULT_KEY = "migration_result"  # the last run, read by the Projection map's "adapter cosine" colour


def pick_task():
    """The demo retrieval task or an uploaded BEIR zip (as the Retrieval page: an upload, never a server path)."""
    source = st.radio("Task", [DEMO, UPLOAD], horizontal=True, key="mig_source")
    if source == DEMO:
        return tasks.demo_task()
    split = st.text_input("Split (qrels/<split>.tsv)", "test", key="mig_split").strip() or "test"
    up = st.file_uploader("A BEIR folder, zipped", type=["zip"], key="mig_upload")
    if up is None:
        st.info("Upload a zip of a BEIR folder: corpus.jsonl, queries.jsonl and qrels/<split>.tsv.")
        return None
    try:
        return tasks.parse_zip(up.getvalue(), up.name, split)
    except InputError as exc:
        ui.user_error(exc)
        return None


def pick_new() -> tuple[models.ModelKey, str, str, int]:
    """Model B: (its key, its pooling, its label, its dimensions); a typed path or hub id, or (classroom) the
    allowlist."""
    if classroom.enabled():
        options = {"all-MiniLM-L6-v2 (embedded)": "", **dict(classroom.allowed_models())}
        label = st.selectbox("Model B", list(options), key="mig_new_choice")
        name = options[label]
    else:
        name = st.text_input(
            "Model B (a folder or a Hugging Face id)",
            key="mig_new",
            placeholder="empty = embedded all-MiniLM-L6-v2",
            help="The model to switch to. A hub id needs a network unless it is cached.",
        ).strip()
        label = name or "all-MiniLM-L6-v2 (embedded)"
    try:
        enc = models.encoder(models.ModelKey(name))
    except Exception as exc:  # as the sidebar: in classroom mode the label only (a loader's message names files)
        if classroom.enabled():
            log.error("could not load the allowed model %s: %s", name, exc)
            st.error(f"Could not load {ui.literal(label)}.", icon=":material/error:")
            st.stop()
        if not isinstance(exc, InputError):
            raise
        ui.user_error(exc)
        st.stop()
    modes = pooling_choices(enc.num_layers, enc.is_encoder_decoder, enc.has_recipe)
    if st.session_state.get("mig_new_pooling") not in modes:
        st.session_state["mig_new_pooling"] = default_pooling(enc).name
    pooling = st.selectbox("Pooling of B", modes, key="mig_new_pooling", help=ui.pooling_help(modes))
    return models.ModelKey(name), pooling, label, enc.output_dim(parse_pooling(pooling))


s = ui.settings()
space = ui.space()
st.title("Migration")
st.caption(
    "Can I switch from model A to model B without re-embedding the corpus? A small map (an adapter) is fitted on "
    "texts embedded by both, in two directions: new→legacy maps B's queries into A's index (the index stays), "
    "old→new maps every stored A vector into B's space once. Each is scored on a retrieval task against A and "
    "against re-embedding everything with B (nDCG@10 by pytrec_eval, paired tests over queries). The "
    "recommendation is chosen without the labels (the share of B's own top 10 an adapter returns, the papers' "
    "ratio), so the labelled numbers test it."
)
task = pick_task()
if task is None:
    st.stop()
ui.show_warnings(task.warnings)
st.caption(f"{ui.literal(task.name)}: {task.n_queries:,} queries, {task.n_documents:,} documents.")
a_name = s.model_label if space.is_model else space.label
st.markdown(f"**A (the index's model)**: {ui.literal(a_name)}" + (f", {s.pooling} pooling" if space.is_model else ""))
new_key, new_pooling, new_label, new_dims = pick_new()

c1, c2 = st.columns(2)
fit_source = c1.radio("Fit pairs", [SAMPLE, GENERIC], key="mig_fit_source")
fit_texts = None
if fit_source == SAMPLE:
    fraction = c2.slider("Share of the documents", 0.01, 0.5, 0.25, 0.01, key="mig_fraction",
                         help="a seeded sample; their A and B vectors are the fit pairs")  # fmt: skip
else:
    fraction = 0.0
    with c2:
        fit_corpus = ui.corpus_input("mig_fit")
    if fit_corpus is None:
        st.stop()
    fit_texts = list(dict.fromkeys(fit_corpus.texts))
methods = st.multiselect("Adapters", METHODS, default=list(LINEAR), key="mig_methods",
                         help="mlp trains a network (seconds to minutes); local:C fits a map per cluster")  # fmt: skip
d1, d2 = st.columns(2)
threshold = d1.slider("Threshold (kept share)", 0.5, 1.0, DEFAULT_THRESHOLD, 0.01, key="mig_threshold",
                      help="re-embed when the kept share's 95% lower bound is below it")  # fmt: skip
curve = d2.toggle("Curve of kept against fit pairs", value=True, key="mig_curve")
if not methods:
    st.info("Choose at least one adapter.")
    st.stop()
try:
    settings = service.config(tuple(methods), fraction, CURVE if curve else (), threshold)
except InputError as exc:
    ui.user_error(exc)
    st.stop()

queries, documents = keyed_texts(task.queries), keyed_texts(task.documents)
fit_items = keyed_texts(fit_texts) if fit_texts else None
n_pairs = len(fit_texts) if fit_texts else round(fraction * task.n_documents)
estimate = costs.embedding(new_key, queries, [new_pooling], s.max_length)
estimate = estimate + costs.embedding(new_key, documents, [new_pooling], s.max_length)
if fit_items is not None:
    estimate = estimate + costs.embedding(new_key, fit_items, [new_pooling], s.max_length)
if space.is_model:
    for items in (queries, documents, *([fit_items] if fit_items is not None else [])):
        estimate = estimate + costs.embedding(s.model, items, [s.pooling], s.max_length)
a_dims = s.hidden_size if space.is_model else space.dims
estimate = estimate + service.mlp_cost(settings, n_pairs, (a_dims, new_dims))
ui.estimate(estimate)
request = (task.fingerprint, s.model if space.is_model else space.key, s.pooling, s.max_length, new_key, new_pooling,
           fit_items.key if fit_items is not None else fraction, tuple(methods), threshold, curve)  # fmt: skip
if not ui.run_button("Run migration", "mig_run", request, type="primary"):
    st.info("Press **Run migration**: it embeds the task with both models (cached), fits each adapter both ways and "
            "scores it.")  # fmt: skip
    st.stop()
try:
    old = (ui.space_vectors(queries), ui.space_vectors(documents), ui.space_vectors(fit_items) if fit_items else None)
    new = tuple(embed(new_key, items, new_pooling, s.max_length) if items is not None else None
                for items in (queries, documents, fit_items))  # fmt: skip
    result = service.run(old, new, task, (a_name, "model" if space.is_model else "vectors", new_label), settings)
except InputError as exc:
    ui.user_error(exc)
    st.stop()
st.session_state[RESULT_KEY] = result
ui.show_warnings(result.warnings)

rec = result.recommendation
box = {"stay": st.info, "re-embed": st.warning, "migrate": st.success}[rec.verdict]
box(f"**{rec.verdict}**: {ui.literal(rec.words)}")
st.caption(ui.literal(f"Chosen by {rec.chosen_by}."))
for note in result.notes:
    st.caption(ui.literal(note))

st.subheader("Every system")
h = result.config.headline
table = result.table()
shown = ["system", h, f"agreement@{result.config.k}", "c/b", "c/b low", "c/b high", "recovered", "p_value", "pairs",
         "fit_seconds", "bytes", "added_us_per_query", "heldout_cosine", "heldout_shared"]  # fmt: skip
st.dataframe(table[shown].round(4), width="stretch", hide_index=True)
ui.download_table(table, "migration")
st.caption(
    f"{h} (labelled) beside agreement@{result.config.k} (label-free: the share of B's own top "
    f"{result.config.k} returned). c/b: kept of re-embedding's {h}, with its 95% paired bootstrap interval over "
    "queries; recovered: (c − a)/(b − a), only where B's gain over A is real. Held-out: documents not fitted on, "
    "the cosine of mapped and true vectors and the shared top 10."
)

if result.curve_points:
    st.subheader("Kept against fit pairs")
    ui.chart(result.plot(), "migration_curve")

st.subheader("Queries that lose most")
losers = result.losers(10)
st.dataframe(losers.round(4), width="stretch", hide_index=True)
st.caption(f"With {ui.literal(rec.method)} ({rec.direction}) against re-embedding: change = c − b on {h}.")

st.subheader("Where the map fails")
runs = [f"{a.method} ({a.direction})" for a in result.adapters]
picked = st.selectbox("Adapter", runs, index=runs.index(f"{rec.method} ({rec.direction})"), key="mig_adapter")
run = result.adapters[runs.index(picked)]
try:
    labels = service.clusters(old[1])
    from isoscope.migrate.where import error_by_cluster

    by_cluster = error_by_cluster(result, labels, method=run.method, direction=run.direction)
except InputError as exc:
    ui.user_error(exc)
else:
    st.dataframe(by_cluster.round(4), width="stretch", hide_index=True)
    ui.download_table(by_cluster, "migration_clusters")
    st.caption(
        f"KMeans ({service.CLUSTERS} clusters) of A's document vectors; per cluster, its held-out documents' "
        "mapped-vs-true cosine (mean and 10th percentile) and shared top 10, the worst cluster first. The "
        "Projection map colours each text by this cosine (Colour by: adapter cosine)."
    )
st.download_button(
    "Download the adapter (zip)",
    service.adapter_zip(result, run.method, run.direction),
    file_name=f"adapter-{run.method.replace(':', '-')}-{'new-legacy' if run.direction == NEW_TO_LEGACY else 'old-new'}.zip",
    mime="application/zip",
    key="mig_download",
    help="adapter.json + adapter.safetensors: isoscope.migrate.adapters.Adapter.load(folder).transform(X)",
)
