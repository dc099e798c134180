"""Compare spaces: how two spaces of the same texts differ (model, layer, pooling, fine-tuning, calibration).

A space is (model, init, pooling, calibration) applied to the corpus. Headline numbers (CKA, overlap@k,
Procrustes disparity, hubness), the layer x layer CKA heatmap, the overlap histogram and the texts whose
neighbours changed most (pick one: both neighbour lists), two aligned maps side by side, the hubness table.
"""

from __future__ import annotations

import streamlit as st

from isoscope.comparison.cka import CKA_DESCRIPTIONS, CKA_KINDS
from isoscope.dashboard import ui
from isoscope.dashboard.figures import compare as figures
from isoscope.dashboard.services import compare as services
from isoscope.dashboard.services import report as reports
from isoscope.dashboard.services.keyed import texts as keyed_texts
from isoscope.dashboard.services.models import ModelKey
from isoscope.encode.pooling import canonical_pooling, layer_names, parse_pooling
from isoscope.errors import InputError
from isoscope.neighbours.projection import PROJECTION_DESCRIPTIONS
from isoscope.sources.checkpoints import landscape_checkpoints
from isoscope.sources.spec import SpaceSpec

# its place in the navigation and its line on the Home page (dashboard/navigation.py)
PAGE = {
    "section": "Neighbours",
    "title": "Compare spaces",
    "icon": ":material/difference:",
    "order": 40,
    "teaches": "Two models, layers, poolings or calibrations on the same texts: CKA, neighbours kept, hubs, aligned maps.",
}

SIDEBAR, CHECKPOINT, FILE = "Sidebar model", "Loss-surface checkpoint", "Vectors file (the session's space)"
TRAINED, RANDOM = "trained", "random (seed 0)"
CUSTOM = "Choose A and B yourself"
# preset -> per side: (source, weights, pooling, calibration method, K)
PRESETS: dict[str, dict[str, tuple[str, str, str, str, int]]] = {
    "CLS vs mean": {"a": (SIDEBAR, TRAINED, "cls", "none", 64), "b": (SIDEBAR, TRAINED, "mean", "none", 64)},
    "What calibration changed": {
        "a": (SIDEBAR, TRAINED, "mean", "none", 64),
        "b": (SIDEBAR, TRAINED, "mean", "whitening:K", 64),
    },
    "Trained vs untrained": {"a": (SIDEBAR, TRAINED, "mean", "none", 64), "b": (SIDEBAR, RANDOM, "mean", "none", 64)},
    "What fine-tuning changed": {
        "a": (SIDEBAR, TRAINED, "mean", "none", 64),
        "b": (CHECKPOINT, TRAINED, "mean", "none", 64),
    },
    "Vectors file vs the model": {
        "a": (FILE, TRAINED, "mean", "none", 64),
        "b": (SIDEBAR, TRAINED, "mean", "none", 64),
    },
}
FILE_PRESET = "Vectors file vs the model"  # offered (and the default) when the session's space is a vectors file
MAP_METHODS = {"PCA": "pca", "UMAP": "umap"}
MAP_HELP = ui.glossary(MAP_METHODS, lambda label: PROJECTION_DESCRIPTIONS[MAP_METHODS[label]], "B is aligned to A.")
MOVED = 20  # texts listed as most changed
OWN_AXES_NOTE = (
    "; B's map shrank under the least-squares scale, which a poor fit makes small, so it is drawn on its own axes"
)
MAX_CATEGORIES = 12


def apply_preset() -> None:
    """Set both pickers from the chosen preset (a widget callback: runs before the page)."""
    preset = PRESETS.get(st.session_state.get("cmp_preset", CUSTOM))
    if preset is None:
        return
    encdec = ui.settings().is_encoder_decoder
    for side, (source, weights, pooling, method, k) in preset.items():
        st.session_state[f"cmp_{side}_source"] = source
        st.session_state[f"cmp_{side}_init"] = weights
        st.session_state[f"cmp_{side}_pooling"] = canonical_pooling(pooling, encdec)
        st.session_state[f"cmp_{side}_cal_method"] = method
        st.session_state[f"cmp_{side}_cal_k"] = k
        st.session_state.pop(f"cmp_{side}_epoch", None)  # back to the last epoch


def space_picker(side: str, runs: list[dict]) -> services.Side | None:
    """Model (sidebar model or a loss-surface checkpoint), weights, pooling and calibration of one side."""
    st.markdown(f"**Space {side.upper()}**")
    sources = (SIDEBAR, CHECKPOINT) if ui.space().is_model else (FILE, SIDEBAR, CHECKPOINT)
    if st.session_state.get(f"cmp_{side}_source") not in sources:  # the session's space changed
        st.session_state[f"cmp_{side}_source"] = SIDEBAR
    source = st.selectbox("Model", sources, key=f"cmp_{side}_source")
    if source == FILE:
        st.caption(f"{ui.literal(ui.space().label)}: pooled already, no layers.")
        cal = ui.calibration_controls(f"cmp_{side}_cal", default="none", include_none=True, dim=ui.space().dims)
        return services.Side(SpaceSpec(vectors=services.VECTORS_FILE, calibrate=cal.method), cal.flow_json)
    init, model = "pretrained", s.model
    if source == CHECKPOINT:
        if not runs:
            st.info(
                "No finished loss-surface experiment yet: run one on the Loss surfaces page or with `python -m isoscope landscape`."
            )
            return None
        ui.clamp(f"cmp_{side}_run", 0, len(runs) - 1)
        run = runs[
            st.selectbox("Experiment", range(len(runs)), format_func=lambda i: runs[i]["label"], key=f"cmp_{side}_run")
        ]
        which = st.selectbox(
            "Run",
            list(run["epochs"]),
            key=f"cmp_{side}_ckinit",
            help="pretrained: fine-tuned from the model's weights; scratch: trained from a random init",
        )
        epochs = run["epochs"][which]
        if st.session_state.get(f"cmp_{side}_epoch") not in epochs:
            st.session_state[f"cmp_{side}_epoch"] = epochs[-1]
        epoch = st.select_slider("Epoch (0 = before training)", epochs, key=f"cmp_{side}_epoch")
        model = ModelKey(f"landscape:{run['out_dir']}:{which}:{epoch}")
    else:
        weights = st.radio(
            "Weights",
            (TRAINED, RANDOM),
            horizontal=True,
            key=f"cmp_{side}_init",
            help="random: the same architecture with seeded random weights, the untrained baseline",
        )
        init = "random" if weights == RANDOM else "pretrained"
    pooling = st.selectbox("Pooling", s.pooling_modes, key=f"cmp_{side}_pooling", help=ui.pooling_help(s.pooling_modes))
    cal = ui.calibration_controls(f"cmp_{side}_cal", default="none", include_none=True, dim=s.hidden_size)
    return services.Side.of_model(model, init, parse_pooling(pooling), cal.method, cal.flow_json)


s = ui.settings()
st.title("Compare spaces")
st.caption(
    "Two spaces of the same texts: a space is a model (or a loss-surface checkpoint, or the same architecture "
    "with random weights), a pooling and a calibration. CKA (centred kernel alignment, Kornblith et al. 2019) "
    "measures how similar the two representations are as a whole (1 = the same up to rotation and scale); "
    "overlap@k how many of each text's k nearest neighbours survive; hubness (Radovanovic et al. 2010) whether "
    "a few texts are everyone's neighbour. The two maps are aligned by orthogonal Procrustes, point by point."
)
presets = [p for p in PRESETS if p != FILE_PRESET]
presets = [*presets, CUSTOM] if ui.space().is_model else [FILE_PRESET, *presets, CUSTOM]
if st.session_state.get("cmp_preset") not in presets:  # first visit, or the session's space changed
    st.session_state["cmp_preset"] = presets[0]
    apply_preset()
if "cmp_a_source" not in st.session_state:
    apply_preset()
st.selectbox(
    "Preset",
    presets,
    key="cmp_preset",
    on_change=apply_preset,
    help="Sets A and B; change either afterwards.",
)

corpus = ui.space_corpus("cmp")
if corpus is None:
    st.stop()
keep = figures.distinct(corpus.texts)  # (n,) corpus rows of the distinct texts
texts = [corpus.texts[i] for i in keep]
if len(keep) < len(corpus.texts):
    st.caption(f"{len(corpus.texts) - len(keep):,} repeated texts are compared once.")
n = len(texts)
if n < 5:
    st.info("Comparing neighbourhoods needs at least 5 distinct texts; load a larger corpus.")
    st.stop()

runs = landscape_checkpoints()
left, right = st.columns(2)
with left:
    choice_a = space_picker("a", runs)
with right:
    choice_b = space_picker("b", runs)
if choice_a is None or choice_b is None:
    st.stop()

ui.clamp("cmp_k", 1, min(50, n - 1))
c1, c2, c3 = st.columns(3)
k = int(c1.slider("k (neighbours per text)", 1, min(50, n - 1), min(10, n - 1), key="cmp_k"))
method = MAP_METHODS[c2.radio("Maps", list(MAP_METHODS), horizontal=True, key="cmp_map", help=MAP_HELP)]
points = int(c3.number_input("Texts on the maps (seeded sample)", 10, 20_000, min(n, 5000), step=500, key="cmp_points"))

items = keyed_texts(texts)
try:
    space_a, space_b = (
        services.file_side_vectors(ui.space(), choice, items)
        if choice.is_file
        else services.side_vectors(choice, items, s.max_length)
        for choice in (choice_a, choice_b)
    )
except InputError as exc:
    ui.user_error(exc)
    st.stop()
report = services.comparison(space_a.vectors, space_b.vectors, k, method, points)
label_a, label_b = (
    figures.describe(space.name, choice.spec) for space, choice in ((space_a, choice_a), (space_b, choice_b))
)
st.markdown(f"**A:** {ui.literal(label_a)}  \n**B:** {ui.literal(label_b)}")
st.info(figures.plain_summary(report), icon=":material/lightbulb:")

m = st.columns(5)
m[0].metric(
    "CKA (linear)",
    f"{report.cka_linear:.3f}",
    help="Linear CKA of the two spaces: 1 = the same up to rotation, reflection and scale.",
)
m[1].metric(
    "CKA (debiased)",
    f"{report.cka_debiased:.3f}",
    help="With the unbiased HSIC estimator: ~0 for unrelated spaces even when the texts are few.",
)
m[2].metric(
    f"overlap@{report.overlap.k}",
    f"{report.overlap_at_k:.3f}",
    help="Mean Jaccard of each text's k nearest neighbours in A and in B (1 = the same neighbours).",
)
m[3].metric(
    "Procrustes disparity",
    f"{report.maps.disparity:.3f}",
    help="Residual of the best rotation/reflection/scale of B's map onto A's (0 = the same map).",
)
m[4].metric(
    "hubness skew A → B",
    f"{report.hubness_a.skewness:.2f} → {report.hubness_b.skewness:.2f}",
    help="Skewness of the k-occurrence counts: large = a few texts are everyone's neighbour.",
)

# ------------------------------------------------------------------ layer by layer
st.subheader("Layer by layer")
if not (space_a.layers and space_b.layers):
    st.info("Layer by layer compares a model's layers: a vectors file has none (choose a model on both sides).")
else:
    kind = st.radio(
        "CKA", CKA_KINDS, horizontal=True, key="cmp_cka_kind", help=ui.glossary(CKA_KINDS, CKA_DESCRIPTIONS.get)
    )
    layers = services.layer_cka(space_a.layers, space_b.layers)
    matrix = layers.linear if kind == "linear" else layers.debiased
    rows_l, cols_l = layer_names(len(space_a.layers) - 1), layer_names(len(space_b.layers) - 1)
    title = f"{kind} CKA: layers of A × layers of B (layer:0 = embeddings)"
    ui.chart(figures.heatmap(matrix, rows_l, cols_l, title), "compare_layers")
    ui.download_table(figures.matrix_table(matrix, rows_l, cols_l), "compare_layers")
    st.caption(
        "Mean-pooled hidden states of each layer of A's and B's models, before any calibration. A model against itself has a unit diagonal; fine-tuning usually changes the top layers most."
    )

# ------------------------------------------------------------------ neighbourhoods
st.subheader("Neighbourhoods")
ui.chart(figures.overlap_histogram(report), "compare_overlap_histogram")
moved = report.overlap.most_changed(min(MOVED, n))
st.markdown("**Texts whose neighbours changed most**")
st.dataframe(figures.most_changed_table(report, texts, keep, moved), width="stretch", hide_index=True)
ui.download_table(figures.per_text_table(report, texts, keep), "compare_per_text")
pick = st.selectbox(
    "Both neighbour lists of",
    range(len(moved)),
    format_func=lambda j: f"{report.overlap.overlap[moved[j]]:.2f} · {texts[moved[j]][:110]}",
    key="cmp_pick",
)
row = int(moved[pick])
st.markdown(f"**Text:** {ui.literal(texts[row])}")
la, lb = st.columns(2)
na, nb = report.overlap.neighbours_a[row], report.overlap.neighbours_b[row]
with la:
    st.markdown("**In A**")
    st.dataframe(figures.neighbour_list(texts, na, report.overlap.scores_a[row], nb), width="stretch", hide_index=True)
with lb:
    st.markdown("**In B**")
    st.dataframe(figures.neighbour_list(texts, nb, report.overlap.scores_b[row], na), width="stretch", hide_index=True)

# ------------------------------------------------------------------ aligned maps
st.subheader("Aligned maps")
maps = report.maps
rows = maps.rows  # positions in `texts`
meta = [c for c in ui.meta_columns(corpus) if 1 < corpus.meta[c].iloc[keep].nunique() <= MAX_CATEGORIES]
c1, c2 = st.columns([2, 1])
colour_by = c1.radio(  # radio options are Markdown: the column names are user text
    "Colour by", [f"overlap@{k}", *meta], horizontal=True, key="cmp_colour", format_func=ui.literal
)
arrows = c2.toggle("Show each point's move A → B", key="cmp_arrows")
if colour_by in meta:
    colour, categorical = corpus.meta[colour_by].iloc[keep[rows]].fillna("(missing)").astype(str).to_numpy(), True
else:
    colour, categorical = report.overlap.overlap[rows], False
ranges_a, ranges_b, own_axes = figures.panel_ranges(maps.a, maps.b)
hover = [ui.plot_text(texts[i]) for i in rows]
ma, mb = st.columns(2)
with ma:
    fig = figures.map_figure(
        maps.a, hover, f"A ({method.upper()})", colour=colour, categorical=categorical, k=k, ranges=ranges_a
    )
    ui.chart(fig, "compare_map_a")
with mb:
    title = f"B aligned onto A ({method.upper()}{', own axes' if own_axes else ''})"
    fig = figures.map_figure(
        maps.b,
        hover,
        title,
        colour=colour,
        categorical=categorical,
        k=k,
        ranges=ranges_b,
        lines=maps.a if arrows else None,
    )
    ui.chart(fig, "compare_map_b")
q = maps.quality
st.caption(
    f"{len(rows):,} texts. B's map is rotated/reflected and scaled onto A's (Procrustes disparity {maps.disparity:.3f}"
    f"{OWN_AXES_NOTE if own_axes else ''}). "
    f"How honest each map is about its own space ({maps.quality_rows:,} texts, k={maps.quality_k}): trustworthiness "
    f"A {q['trustworthiness_a']:.3f}, B {q['trustworthiness_b']:.3f} (map neighbours that are real neighbours); "
    f"continuity A {q['continuity_a']:.3f}, B {q['continuity_b']:.3f} (real neighbours kept together on the map)."
)
ui.download_table(figures.maps_table(report, texts, keep), "compare_maps")

# ------------------------------------------------------------------ hubness
st.subheader("Hubness")
hub_table = figures.hubness_table(report, (label_a, label_b), texts)
st.dataframe(hub_table, width="stretch", hide_index=True)
ui.download_table(hub_table, "compare_hubness")
ha, hb = st.columns(2)
for col, side, h in ((ha, "A", report.hubness_a), (hb, "B", report.hubness_b)):
    with col:
        st.markdown(f"**Top hubs in {side}** (N_k: how many texts list it among their {k} nearest)")
        st.dataframe(h.top_frame(texts, 10).drop(columns="id"), width="stretch", hide_index=True)
st.caption(
    "N_k counts how often a text is among the others' k nearest neighbours; its mean is exactly k. A large positive "
    "skewness means hubs; anti-hubs are nobody's neighbour. Centring and whitening are known remedies (Suzuki et al. "
    "2013): compare the skewness with and without a calibration to see whether it is one here."
)

st.subheader("Report")
st.caption("Both spaces' metrics, CKA, neighbour overlap, hubness and the aligned maps in one HTML file to mail.")
ui.report_download(
    "compare",
    (space_a.vectors.key, space_b.vectors.key, k, method, points),
    lambda: reports.comparison_report(space_a.vectors, space_b.vectors, items, (label_a, label_b), k, method, points),
)
