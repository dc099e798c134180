"""Atlas: every text of a corpus (up to a million) on one map, raw and calibrated, with density contours,
cluster labels, search, colouring and a selection that flows back into Isoscope."""

from __future__ import annotations

import os

import numpy as np
import streamlit as st

from isoscope.atlas.folder import finished_atlas
from isoscope.atlas.layout import LAYOUT_METHODS
from isoscope.atlas.pipeline import AtlasConfig, duplicate_warning
from isoscope.dashboard import classroom, tiles, ui
from isoscope.dashboard.figures import atlas as figures
from isoscope.dashboard.services import atlas as svc
from isoscope.dashboard.services import data as data_service
from isoscope.data import CORPUS_FORMATS
from isoscope.errors import InputError
from isoscope.neighbours.projection import PROJECTION_DESCRIPTIONS

# its place in the navigation and its line on the Home page (dashboard/navigation.py)
PAGE = {
    "section": "Neighbours",
    "title": "Atlas",
    "icon": ":material/travel_explore:",
    "order": 30,
    "teaches": "Every text of a corpus on one map, with clusters, labels and search; open a text in Neighbours.",
}

PRELOADED = ui.PRELOADED  # "File given to isoscope app"
FOLDER = "Atlas folder"
SPACE = "The session's vectors file"  # the space is a vectors file: its rows, its vectors
CALIBRATIONS = ("whitening", "sn", "abtt:3", "none")
TABLE_ROWS = 1_000
NEIGHBOURS_PAGE = "views/neighbours.py"
SELECTION = "atlas_map_selection"  # {"at": (folder, space), "rows": [...], "how": "..."}: what the map selected

s = ui.settings()
st.title("Atlas")
st.caption(
    f"Every text of a corpus (up to {svc.max_rows():,}) on one map: nothing is sampled away. The map is built "
    "once (embeddings, a nearest-neighbour graph, a 2-D layout, density and clusters) and cached on disk, for "
    "the raw space and a calibrated one."
)


def _source_options() -> list[str]:
    """The launched file, the launched atlas folder, the demo corpus, an upload; then a folder to type (never in
    classroom mode, whose students may not name server paths)."""
    extra = [PRELOADED] if data_service.preloaded_file() else []
    extra += [FOLDER] if svc.atlas_dir_env() else []
    typed = [FOLDER] if not svc.atlas_dir_env() and not classroom.enabled() else []
    return [*extra, *ui.CORPUS_SOURCES, *typed]


def _folder() -> str | None:
    """The atlas folder given to ``isoscope app`` (ISOSCOPE_ATLAS_DIR), or, outside classroom mode, the one typed
    in the folder box (checked: a finished atlas)."""
    given = svc.atlas_dir_env()
    if classroom.enabled():
        try:
            return svc.launched_atlas()
        except InputError as exc:
            ui.user_error(exc)
            return None
    typed = st.text_input(
        "Atlas folder",
        value=given or "",
        key="atlas_folder",
        max_chars=1000,
        placeholder="my-atlas/",
        help="A folder built with `isoscope atlas --input corpus.txt --out my-atlas/` (a path on the machine running "
        "the app, relative to the folder it was started in); `isoscope app my-atlas/` opens it directly.",
    ).strip()
    if not typed:
        st.info("Type the folder of an atlas built with `isoscope atlas --input corpus.txt --out my-atlas/`.")
        return None
    try:
        return str(finished_atlas(typed))
    except InputError as exc:
        ui.user_error(exc)
        return None


def _atlas_path(source: str, config: AtlasConfig) -> str | None:
    """The folder of the atlas to show, building it when the cache has none."""
    if source == FOLDER:
        return _folder()
    request = None
    if source == SPACE:
        corpus = ui.space().corpus()
    elif source == PRELOADED and data_service.launched().kind == "pairs":  # a pairs file: its sentences
        try:
            corpus = data_service.preloaded_corpus()
        except (InputError, OSError) as exc:
            ui.user_error(exc)
            return None
    elif source == PRELOADED:
        path, column = data_service.preloaded_file()
        request = (path, column, os.stat(path).st_mtime if os.path.exists(path) else 0, s.model, repr(config))
        done = st.session_state.setdefault("atlas_built", {})
        if request in done:  # this session already resolved it: skip re-reading a million rows
            return done[request]
        try:
            corpus = svc.read_corpus(path, column, request[2], svc.max_rows())
        except (InputError, OSError) as exc:
            ui.user_error(exc)
            return None
        ui.show_warnings(corpus.warnings)
    elif source == ui.CORPUS_SOURCES[0]:
        corpus = data_service.demo_corpus()
    else:  # the upload shows its own warnings
        limit = svc.max_rows()
        label = f"Corpus: one text per line (.txt) or a table with a 'text' column, up to {limit:,} rows"
        corpus = ui.uploaded("atlas", label, CORPUS_FORMATS, lambda data, name: svc.parse_upload(data, name, limit))
        if corpus is None:
            return None
    if (w := duplicate_warning(corpus.texts)) is not None:
        st.caption(w)
    if len(corpus) < 4:
        st.info("An atlas needs at least 4 texts; load a larger corpus.")
        return None
    if source == SPACE:
        folder = svc.ensure_vectors_atlas(ui.space(), corpus, config)
    else:
        folder = svc.ensure_atlas(s.model, corpus, config)
    if request is not None:
        st.session_state["atlas_built"][request] = folder
    return folder


own_space = not ui.space().is_model
if own_space:
    source = SPACE
    st.caption(f"The session's space: {ui.literal(ui.space().label)}, {len(ui.space().table):,} vectors.")
else:
    source = st.radio("Corpus", _source_options(), horizontal=True, key="atlas_source")
with st.expander("Build settings (a change builds a new atlas)"):
    b1, b2 = st.columns(2)
    layout_help = ui.glossary(LAYOUT_METHODS, PROJECTION_DESCRIPTIONS.get, "PCA is instant.")
    layout = b1.radio("Layout", LAYOUT_METHODS, horizontal=True, key="atlas_layout", help=layout_help)
    calibrate = b2.selectbox(
        "Calibration of the second map", CALIBRATIONS, key="atlas_calibrate", help=ui.calibration_help(CALIBRATIONS)
    )
pooling = s.spec if not own_space else None  # a vectors file is pooled already
config = AtlasConfig(pooling=pooling, max_length=s.max_length, layout=layout, calibrate=calibrate)
path = _atlas_path(source, config)
if path is None:
    st.stop()
try:
    atlas = svc.open_atlas(path)
except InputError as exc:
    ui.user_error(exc)
    st.stop()
n = atlas.n

# ------------------------------------------------------------------ controls
c1, c2, c3 = st.columns([2, 2, 3])
spaces = list(atlas.spaces)
space = c1.radio(
    "Space", spaces, format_func=figures.SPACE_NAMES.get, horizontal=True, key="atlas_space", disabled=len(spaces) < 2
)
colour_by = c2.selectbox(
    "Colour by", figures.colour_options(atlas), key="atlas_colour", format_func=lambda c: figures.NUMERIC.get(c, c)
)
query = c3.text_input("Search the texts", key="atlas_search", max_chars=200, placeholder="a word or phrase").strip()
sp = atlas.spaces[space]
names = sp.cluster_names()
f1, f2, f3 = st.columns([4, 1, 1])
by_name = {name: c for c, name in names.items()}
picked_clusters = [by_name[x] for x in f1.multiselect("Clusters", list(by_name), key="atlas_clusters") if x in by_name]
show_contours = f2.checkbox("Density contours", value=True, key="atlas_contours")
show_labels = f3.checkbox("Cluster labels", value=True, key="atlas_labels")

# ------------------------------------------------------------------ filters -> lit-up rows
hits = svc.search(path, query) if query else None
in_clusters = svc.cluster_rows(path, space, tuple(sorted(picked_clusters))) if picked_clusters else None
if hits is not None and in_clusters is not None:
    filtered = np.intersect1d(hits, in_clusters, assume_unique=True)
else:
    filtered = next((r for r in (hits, in_clusters) if r is not None), np.zeros(0, np.int64))

# ------------------------------------------------------------------ the map
here = (path, space)
MAP_KEY = f"atlas_map_{space}"


HANDLED = "_atlas_map_event_handled"


def _select(event: tuple[str, object]) -> None:
    """Keep the rows a click or a box on the map selected."""
    kind, value = event
    before = st.session_state.get(SELECTION, {})
    rows = before.get("rows", []) if before.get("at") == here else []
    if kind == "click":
        rows = sorted({*rows, value["row"]}) if value["add"] else [value["row"]]
        how = "clicked on the map"
    else:
        rows = svc.rows_in_box(path, space, value).tolist()
        how = "in the box drawn on the map"
    st.session_state[SELECTION] = {"at": here, "rows": rows, "how": how}


def _on_map_event() -> None:
    """A click or a box on the map (a callback: it runs before the rerun, so the map shows the new selection)."""
    event = figures.selection_event(st.session_state.get(MAP_KEY))
    if event is not None:
        _select(event)
        st.session_state[HANDLED] = True


chosen = st.session_state.get(SELECTION, {})
map_rows = np.asarray(chosen.get("rows", []), np.int64) if chosen.get("at") == here else np.zeros(0, np.int64)
legend = svc.legend(path, space, colour_by)
tmap = svc.tile_map(path, space)
urls = tiles.publish(path, space, colour_by, show_contours, filtered)
labels = figures.map_labels(sp) if show_labels else None
data = figures.map_data(MAP_KEY, tmap.grid.to_dict(), sp.bounds, urls, labels, sp.xy[map_rows], fit=sp.view)
result = ui.atlas_map(data, key=MAP_KEY, on_change=_on_map_event)
if not st.session_state.pop(HANDLED, False) and (event := figures.selection_event(result)) is not None:
    _select(event)  # the trigger reached this run but not the callback's view of the state: apply it, redraw
    st.rerun()

deepest = tmap.grid.max_level
found = ""
if hits is not None or picked_clusters:
    found = f" · {len(filtered):,} match the search and cluster filter (lit up in yellow)"
st.caption(
    f"{n:,} points, every one drawn at every zoom ({deepest + 1} tile levels, up to {2**deepest:,}x the whole map "
    f"on one tile){found}. Wheel to zoom, drag to pan; hover a point for its text, click to select it "
    "(shift-click adds), shift-drag to select a box."
)
if (explained := figures.colour_caption(colour_by, legend)) is not None:
    st.caption(explained)

# ------------------------------------------------------------------ the selection
st.subheader("Selection")
if len(map_rows):
    selected, how = map_rows, chosen["how"]
    if st.button("Clear the map selection", key="atlas_clear"):
        st.session_state.pop(SELECTION, None)
        st.rerun()
else:
    selected, how = filtered, "matching the search and cluster filter"
if len(selected) == 0:
    st.info("Search, pick clusters, click points on the map (shift-click adds) or shift-drag a box to select texts.")
    st.stop()
st.caption(f"{len(selected):,} text(s) {how}.")
shown = selected[:TABLE_ROWS]
table = svc.selection_table(path, space, tuple(shown.tolist()))
st.dataframe(table, width="stretch", hide_index=True)
if len(selected) > TABLE_ROWS:
    st.caption(f"Showing the first {TABLE_ROWS:,} of {len(selected):,}.")
ui.download_table(table, "atlas_selection")

st.markdown(f"**Anisotropy of the selection vs the whole corpus** ({figures.SPACE_NAMES[space]} space)")
metrics = svc.metrics(path, space, tuple(int(r) for r in selected))
st.dataframe(metrics, width="stretch", hide_index=True)
st.caption("Each side a seeded sample of at most 20,000 rows; a selection of one text has no spread to measure.")
ui.download_table(metrics, "atlas_selection_metrics")

o1, o2 = st.columns([4, 1])
texts = dict(zip(shown.tolist(), table["text"], strict=True))  # the rows shown, read with the table
row = o1.selectbox(
    "Open one in the Neighbours page",
    shown.tolist(),
    format_func=lambda r: f"#{r}: " + (texts[r] if len(texts[r]) <= 100 else texts[r][:99] + "…"),
    key="atlas_open_pick",
)
if o2.button("Open in Neighbours", key="atlas_open", type="primary"):
    st.session_state["atlas_open_row"] = {"row": int(row), "text": str(texts[row]), "atlas": path}
    if source in (SPACE, PRELOADED, *ui.CORPUS_SOURCES):  # the same rows there: pick the row in the same space
        if source != SPACE:
            st.session_state["nb_source"] = source
        if source == ui.CORPUS_SOURCES[1]:
            st.session_state["nb_loaded"] = st.session_state.get("atlas_loaded")
        st.session_state["nb_pick"] = int(row)
        st.session_state["nb_query"] = ""
    else:  # an atlas folder: the Neighbours page searches its texts, with its vectors
        st.session_state["nb_atlas"] = path
        st.session_state["nb_source"] = ui.ATLAS_OPENED
        st.session_state["nb_pick"] = int(row)
        st.session_state["nb_query"] = ""
    st.switch_page(NEIGHBOURS_PAGE)
