"""Retrieval: would a fix help search? Every fix on a retrieval task, tested against raw; and clustering.

nDCG@10 (and Recall, MRR, MAP) of the demo task or an uploaded BEIR zip, raw and after each fix fitted without
labels on the documents; each fix's change with its 95% interval and a paired test over queries, which alone
calls it better or worse. Then V-measure of k-means on a corpus's labels, raw and per fix (isoscope.retrieval).
"""

from __future__ import annotations

import streamlit as st

from isoscope.calibrate.fitting import safe_components, safe_method
from isoscope.dashboard import ui
from isoscope.dashboard.figures.retrieval import clustering_figure, moved_queries, per_query_scatter, variant_table
from isoscope.dashboard.services import costs
from isoscope.dashboard.services import retrieval as service
from isoscope.dashboard.services.keyed import texts as keyed_texts
from isoscope.errors import InputError
from isoscope.retrieval.options import HEADLINE, METRICS, describe_metric, metric_label
from isoscope.retrieval.variants import QUERY_SIDE, describe_variant, parse_variant

# its place in the navigation and its line on the Home page (dashboard/navigation.py)
PAGE = {
    "section": "Similarity",
    "title": "Retrieval",
    "icon": ":material/search:",
    "order": 30,
    "teaches": "Would a fix help search? nDCG@10 per fix with a significance test, and clustering V-measure.",
}

DEMO, UPLOAD = "Demo task", "Upload a BEIR zip"
CLUSTER_FIXES = ("centre", "whitening:64", "sn", "abtt")
SCORED = ", ".join(  # the metrics in the caption: the headline first
    [f"{metric_label(HEADLINE)}, as model cards report", *(metric_label(m) for m in METRICS if m != HEADLINE)]
)


def fix_options(n_queries: int, n_documents: int, dims: int) -> tuple[list[str], list[str]]:
    """The fixes offered and those selected at first: each one whose fit set is large enough for it."""
    options = ["centre", "whitening", "whitening:64", "sn", "abtt", "flow",
               f"whitening:{safe_components(n_queries, dims)}{QUERY_SIDE}", "csls"]  # fmt: skip
    default = []
    for option in options:
        spec = parse_variant(option)
        n_fit = n_queries if spec.fit_on == "queries" else n_documents
        if spec.method is None or safe_method(spec.method, n_fit, dims) == spec.method:
            default.append(option)
    return options, default


def pick_task():
    source = st.radio("Task", [DEMO, UPLOAD], horizontal=True, key="ret_source")
    if source == DEMO:
        return service.demo_task()
    split = st.text_input("Split (qrels/<split>.tsv)", "test", key="ret_split").strip() or "test"
    up = st.file_uploader("A BEIR folder, zipped", type=["zip"], key="ret_upload")
    if up is not None and st.session_state.get("ret_upload_request") != (up.file_id, split):
        try:  # a bad file says why in one line and keeps the task loaded before
            st.session_state["ret_loaded"] = service.parse_zip(up.getvalue(), up.name, split)
            st.session_state["ret_upload_request"] = (up.file_id, split)
        except InputError as exc:
            ui.user_error(exc)
    loaded = st.session_state.get("ret_loaded")
    if loaded is None:
        st.info("Upload a zip of a BEIR folder: corpus.jsonl, queries.jsonl and qrels/<split>.tsv.")
    return loaded


s = ui.settings()
space = ui.space()
st.title("Retrieval")
st.caption(
    "Would a fix help search? Each query's documents are found by exact cosine search (depth 100) and scored by "
    f"pytrec_eval ({SCORED}). Every fix is fitted without labels on the documents (METHOD@queries: on the "
    "queries); CSLS changes the search, not the vectors. A fix is called better or worse only when a paired "
    "randomisation test over the queries says so (p < 0.05)."
)
task = pick_task()
if task is None:
    st.stop()
ui.show_warnings(task.warnings)
st.caption(f"{ui.literal(task.name)}: {task.n_queries:,} queries, {task.n_documents:,} documents, "
           f"{task.n_judgements:,} judgements.")  # fmt: skip
dims = s.hidden_size if space.is_model else space.dims
options, default = fix_options(task.n_queries, task.n_documents, dims)
fixes = st.multiselect("Fixes", options, default=default, key="ret_fixes",
                       help=ui.glossary(options, describe_variant, "Each compared with raw:"))  # fmt: skip
prompts = ("", "")
if space.is_model:
    c1, c2 = st.columns(2)
    prompts = (
        c1.text_input("Query prompt", "", key="ret_query_prompt", help="text put before every query"),
        c2.text_input("Document prompt", "", key="ret_doc_prompt", help="text put before every document"),
    )
    sides = [keyed_texts([prompts[0] + q for q in task.queries]), keyed_texts([prompts[1] + d for d in task.documents])]
    ui.estimate(costs.retrieval(s.model, sides, s.pooling, s.max_length, fixes, dims))
request = (task.fingerprint, s.model if space.is_model else space.key, s.pooling, s.max_length, prompts, tuple(fixes))
if not ui.run_button("Run retrieval", "ret_run", request, type="primary"):
    st.info("Press **Run retrieval**: it embeds the queries and documents (cached), fits each fix and scores it.")
    st.stop()
try:
    if space.is_model:
        result = service.run_model(s.model, task, s.pooling, s.max_length, prompts, ("raw", *fixes))
    else:
        result = service.run_vectors(ui.space_vectors(task.queries), ui.space_vectors(task.documents), task,
                                     ("raw", *fixes))  # fmt: skip
except InputError as exc:
    ui.user_error(exc)
    st.stop()
ui.show_warnings(result.warnings)

metric = st.radio(
    "Metric", list(METRICS), horizontal=True, key="ret_metric", help=ui.glossary(METRICS, describe_metric)
)
table = variant_table(result, metric)
st.dataframe(table, width="stretch", hide_index=True)
ui.download_table(table, "retrieval")
st.caption(
    f"Δ {metric}: the fix's mean change over the {task.n_queries:,} queries, with its 95% bootstrap interval; p: a "
    "paired randomisation test (10,000 sign flips). Geometry of the documents in each space: average cosine, "
    "IsoScore, hubness skew (of their 10 nearest neighbours)."
)
moved = [r.variant for r in result.rows[1:]]
if not moved:
    st.stop()
variant = st.selectbox("Fix to inspect", moved, key="ret_variant")
chosen = parse_variant(variant)
if chosen.method is not None and chosen.fit_on != "queries":  # a calibrator fitted on the documents
    ui.fixed_model_download("ret", chosen.method, "", sides[1] if space.is_model else task.documents)
st.subheader(f"Per query: raw vs {variant}")
ui.chart(per_query_scatter(result, variant, metric), f"retrieval_{variant}_{metric}")
gained, lost = moved_queries(result, variant, metric)
for title, frame in (("Gained most", gained), ("Lost most", lost)):
    st.markdown(f"**{title}**")
    if not len(frame):
        st.caption("No query moved this way.")
    for row in frame.itertuples():
        with st.expander(f"{ui.literal(row.query)} — {row.raw:.3f} → {row.fixed:.3f}"):
            c1, c2 = st.columns(2)
            for col, name in ((c1, "raw"), (c2, variant)):
                col.caption(f"Top documents, {ui.literal(name)} (grade 0: not judged relevant)")
                col.dataframe(result.top_documents(name, row.query_id), hide_index=True, width="stretch")

st.header("Clustering")
st.caption(
    "V-measure of mini-batch k-means (k = the number of labels, MTEB's settings) against a label column, over "
    "five seeds (mean ± sd), raw and after each fix fitted on the vectors without the labels."
)
corpus = ui.space_corpus("ret_cluster")
columns = [] if corpus is None else list(corpus.meta.columns)
if corpus is None or not columns:
    st.info("Clustering needs a corpus with a label column (the demo corpus has topic).")
    st.stop()
label = st.selectbox("Label column", columns, index=columns.index("topic") if "topic" in columns else 0,
                     key="ret_label")  # fmt: skip
cluster_fixes = st.multiselect("Fixes", list(CLUSTER_FIXES), default=list(CLUSTER_FIXES), key="ret_cluster_fixes",
                               help=ui.glossary(CLUSTER_FIXES, describe_variant))  # fmt: skip
labels = tuple(str(v) for v in corpus.meta[label])
if not ui.run_button("Run clustering", "ret_cluster_run", (keyed_texts(corpus.texts).key, label, tuple(cluster_fixes))):
    st.stop()
try:
    clusters = service.clustering(ui.space_vectors(corpus.texts), labels, ("raw", *cluster_fixes))
except InputError as exc:
    ui.user_error(exc)
    st.stop()
ui.show_warnings(clusters.warnings)
ui.chart(clustering_figure(clusters), f"clustering_{label}")
st.dataframe(clusters.table().round(2), width="stretch", hide_index=True)
st.caption(f"{clusters.n_texts:,} texts, k = {clusters.n_labels} ({ui.literal(label)}).")
