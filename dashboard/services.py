"""Every cached wrapper around ``core`` lives here: models and indexes in ``st.cache_resource``, arrays
and metrics in ``st.cache_data``. Pages call these, never heavy ``core`` functions directly.

Long work shows an ``st.progress`` bar created inside the cached function (so a cache hit replays
nothing visible), and the embedding cache on disk makes a second visit instant even after a restart.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st

from core.cache import ArrayCache, default_cache_dir, make_key, text_digest
from core.calibrate import Calibrator, Flow, FlowConfig, load_calibrator, make_calibrator
from core.data import MAX_ROWS, Corpus, Pairs, load_corpus, load_pairs
from core.embed import EmbedConfig, encode_many
from core.errors import InputError, first_line
from core.index import (
    NeighbourhoodChange,
    QueryNeighbours,
    VectorIndex,
    as_unit_float32,
    build_index,
    compare_hits,
)
from core.index import neighbourhood_change as change_of_neighbourhoods
from core.models import Encoder, load_encoder
from core.paths import DEMO_CORPUS, DEMO_PAIRS, stsb_dir


@st.cache_resource(show_spinner="Loading model…", max_entries=3)
def encoder(model: str) -> Encoder:
    """A loaded encoder; ``model`` is a path or hub id, ``""`` for the embedded default."""
    return load_encoder(model or None)


@st.cache_data(show_spinner=False, max_entries=64)
def _embed_many(
    model: str, texts_key: str, poolings: tuple[str, ...], max_length: int, _texts: tuple[str, ...]
) -> dict[str, np.ndarray]:
    enc = encoder(model)
    bar = st.progress(0.0, text=f"Embedding {len(_texts):,} texts…")

    def progress(done: int, total: int) -> None:
        bar.progress(done / max(total, 1), text=f"Embedding {done:,} / {total:,} texts")

    try:
        return encode_many(enc, _texts, poolings, EmbedConfig(max_length=max_length), progress, ArrayCache())
    finally:
        bar.empty()


def embed_many(model: str, texts: Sequence[str], poolings: Sequence[str], max_length: int) -> dict[str, np.ndarray]:
    """Pooled embeddings, one (n, d) float32 array per pooling, from one forward pass over ``texts``."""
    texts = tuple(texts)
    return _embed_many(model, text_digest(texts), tuple(poolings), max_length, texts)


def embed(model: str, texts: Sequence[str], pooling: str, max_length: int) -> np.ndarray:
    """Pooled embeddings (n, d) float32 for one pooling mode."""
    return embed_many(model, texts, [pooling], max_length)[pooling]


@st.cache_data(show_spinner=False)
def demo_pairs() -> Pairs:
    return load_pairs(DEMO_PAIRS)


@st.cache_data(show_spinner=False)
def demo_corpus() -> Corpus:
    return load_corpus(DEMO_CORPUS)


@st.cache_data(show_spinner=False, max_entries=16)
def parse_pairs(data: bytes, name: str) -> Pairs:
    """Parse an uploaded pairs file (raises InputError; errors are not cached)."""
    return load_pairs(data, name)


@st.cache_data(show_spinner=False, max_entries=16)
def parse_corpus(data: bytes, name: str) -> Corpus:
    """Parse an uploaded corpus file (raises InputError; errors are not cached)."""
    return load_corpus(data, name)


# ------------------------------------------------------------------ calibration


def fit_key(model: str, pooling: str, max_length: int, texts: Sequence[str]) -> str:
    """Identity of a set of fit vectors (for caches): model, pooling, length, texts."""
    return make_key(model, pooling, max_length, text_digest(texts))


@st.cache_resource(show_spinner=False, max_entries=32)
def fit_calibrator(method: str, flow_json: str, key: str, _fit_vectors: np.ndarray) -> Calibrator:
    """A fitted calibrator; also kept on disk (safetensors + JSON) so a restart does not retrain.

    ``flow_json`` is the FlowConfig as JSON ("" for the default); ``key`` identifies ``_fit_vectors``.
    A flow shows its bits/dim per epoch live while it trains.
    """
    folder = default_cache_dir() / "calibrators" / make_key(method, flow_json, key)
    if (folder / "calibrator.json").exists():
        try:
            return load_calibrator(folder)
        except (InputError, OSError, ValueError):
            shutil.rmtree(folder, ignore_errors=True)
    config = FlowConfig.from_dict(json.loads(flow_json)) if flow_json else None
    calibrator = make_calibrator(method, config)
    if isinstance(calibrator, Flow):
        bar = st.progress(0.0, text="Training the flow…")
        curve = st.empty()
        history: list[float] = []

        def progress(epoch: int, n_epochs: int, bits: float) -> None:
            history.append(bits)
            bar.progress(epoch / max(n_epochs, 1), text=f"Flow epoch {epoch}/{n_epochs}: {bits:.3f} bits/dim")
            curve.line_chart(pd.DataFrame({"bits/dim": history}), height=180)

        try:
            calibrator.fit(_fit_vectors, progress=progress)
        finally:
            bar.empty()
            curve.empty()
    else:
        calibrator.fit(_fit_vectors)
    try:
        calibrator.save(folder)
    except OSError:
        pass  # a read-only cache only costs a refit next time
    return calibrator


def calibrate(
    method: str, flow_json: str, key: str, fit_vectors: np.ndarray, *arrays: np.ndarray
) -> tuple[Calibrator, list[np.ndarray]]:
    """Fit (cached) on ``fit_vectors`` and map each of ``arrays`` (a transform is cheap next to a fit)."""
    calibrator = fit_calibrator(method, flow_json, key, fit_vectors)
    return calibrator, [calibrator.transform(a) for a in arrays]


def calibration_table(
    model: str,
    max_length: int,
    pairs: Pairs,
    poolings: tuple[str, ...],
    methods: tuple[str, ...],
    fit_on: Sequence[str],
    flow_json: str = "",
) -> pd.DataFrame:
    """Spearman (x100) of every pooling x calibrator on ``pairs``, each fitted on ``fit_on`` (cached pieces)."""
    from core.evaluate import correlations, cosine_pairs

    n = len(pairs)
    vecs = embed_many(model, pairs.texts, poolings, max_length)
    fits = embed_many(model, fit_on, poolings, max_length)
    rows = []
    bar = st.progress(0.0, text="Fitting calibrators…")
    total = max(len(poolings) * len(methods), 1)
    for i, p in enumerate(poolings):
        key = fit_key(model, p, max_length, fit_on)
        for j, m in enumerate(methods):
            bar.progress((i * len(methods) + j) / total, text=f"{p} + {m}")
            _, (z,) = calibrate(m, flow_json if m == "flow" else "", key, fits[p], vecs[p])
            r = correlations(cosine_pairs(z[:n], z[n:]), pairs.scores)
            rows.append({"pooling": p, "calibration": m, "spearman": round(r["spearman"], 2)})
    bar.empty()
    return pd.DataFrame(rows)


# ------------------------------------------------------------------ geometry


@st.cache_data(show_spinner="Computing isotropy metrics…", max_entries=128)
def metrics_of(vectors_key: str, _vectors: np.ndarray) -> dict[str, float]:
    """core.metrics.all_metrics, cached by a key naming the vectors."""
    from core.metrics import all_metrics

    return all_metrics(_vectors)


@st.cache_data(show_spinner=False, max_entries=128)
def singular_values_of(vectors_key: str, _vectors: np.ndarray) -> np.ndarray:
    """core.metrics.singular_values of the centred vectors, cached by a key naming them."""
    from core.metrics import singular_values

    return singular_values(_vectors)


def vectors_key(model: str, pooling: str, max_length: int, texts: Sequence[str], calibration: str = "none") -> str:
    """Key naming a set of (possibly calibrated) vectors, for caches."""
    return make_key(fit_key(model, pooling, max_length, texts), calibration)


@st.cache_data(show_spinner=False, max_entries=16)
def layer_metrics(model: str, texts_key: str, max_length: int, _texts: tuple[str, ...]) -> pd.DataFrame:
    """all_metrics of mean pooling at every layer: one row per layer."""
    from core.metrics import all_metrics

    enc = encoder(model)
    layers = [f"layer:{k}" for k in range(enc.num_layers + 1)]
    vecs = embed_many(model, _texts, layers, max_length)
    bar = st.progress(0.0, text="Metrics per layer…")
    rows = []
    for i, name in enumerate(layers):
        rows.append({"layer": i, **all_metrics(vecs[name])})
        bar.progress((i + 1) / len(layers), text=f"Metrics per layer: {name}")
    bar.empty()
    return pd.DataFrame(rows).set_index("layer")


# ------------------------------------------------------------------ frequency and lexical overlap


@st.cache_data(show_spinner=False, max_entries=8)
def frequency_result(
    model: str, texts_key: str, max_length: int, calibration: str, spaces: tuple[str, ...], _texts: tuple[str, ...]
):
    """core.frequency.frequency_analysis (token norms and kNN distances by frequency bucket), raw and calibrated."""
    from core.frequency import frequency_analysis

    bar = st.progress(0.0, text="Token vectors…")
    try:
        return frequency_analysis(
            encoder(model),
            list(_texts),
            spaces,
            calibrator=None if calibration == "none" else calibration,
            embed_config=EmbedConfig(max_length=max_length),
            progress=lambda d, t: bar.progress(d / max(t, 1), text=f"Token vectors: {d:,} / {t:,} texts"),
        )
    finally:
        bar.empty()


@st.cache_data(show_spinner="Edit distances…", max_entries=16)
def overlap(sentence1: tuple[str, ...], sentence2: tuple[str, ...], similarities: dict[str, np.ndarray | None]):
    """core.overlap.overlap_analysis: Spearman of each similarity with the word edit distance."""
    from core.overlap import overlap_analysis

    return overlap_analysis(sentence1, sentence2, similarities)


# ------------------------------------------------------------------ model anatomy


def pairs_key(pairs: Pairs) -> str:
    """Key naming a pairs set (texts and scores), for caches."""
    scores = "" if pairs.scores is None else np.asarray(pairs.scores, np.float64).tobytes().hex()
    return make_key(text_digest(pairs.texts), scores)


@st.cache_data(show_spinner=False, max_entries=16)
def pooling_report(model: str, key: str, calibrations: tuple[str, ...], max_length: int, _pairs: Pairs):
    """core.pooling_explorer.explore_poolings: every pooling and layer, raw and calibrated, one forward pass."""
    from core.pooling_explorer import RAW, explore_poolings, pooling_modes_for

    enc = encoder(model)
    n_fits = len(pooling_modes_for(enc)) * len([c for c in calibrations if c.strip().lower() != RAW])
    bar = st.progress(0.0, text="Embedding with every pooling…")
    fitted = [-1]  # -1 until the embedding pass is over (the explorer checks each method once before it)

    def embedding(done: int, total: int) -> None:
        bar.progress(done / max(total, 1), text=f"Embedding {done:,} / {total:,} sentences")
        if done >= total:
            fitted[0] = 0

    def calibrator(method: str) -> Calibrator:
        if fitted[0] >= 0:
            fitted[0] += 1
            bar.progress(min(fitted[0] / max(n_fits, 1), 1.0), text=f"Fitting {method}: {fitted[0]} / {n_fits}")
        return make_calibrator(method)

    try:
        return explore_poolings(
            enc, _pairs, calibrations, EmbedConfig(max_length=max_length), embedding, ArrayCache(), calibrator
        )
    finally:
        bar.empty()


@st.cache_resource(show_spinner="Loading a private copy of the model…", max_entries=1)
def private_encoder(model: str) -> Encoder:
    """A second copy of the model whose weights may be swapped temporarily (rank-k shrink), so the shared
    cached encoder that other pages use is never touched."""
    return load_encoder(model or None)


@st.cache_data(show_spinner="Singular values of the input embedding table…", max_entries=8)
def input_spectrum(model: str):
    """Singular values and effective rank of the model's input embedding table."""
    from core.embedding_anatomy import embedding_spectrum, input_embedding_weight

    return embedding_spectrum(input_embedding_weight(encoder(model).model))


@st.cache_data(show_spinner=False, max_entries=8)
def shrink_curve(model: str, key: str, ranks: tuple[int, ...], pooling: str, max_length: int, _pairs: Pairs):
    """STS and neighbour overlap with the input embedding shrunk to each rank (SVD)."""
    from core.embedding_anatomy import shrink_curve as curve

    bar = st.progress(0.0, text="Re-encoding at each rank…")
    try:
        return curve(
            private_encoder(model),
            _pairs,
            list(ranks),
            pooling,
            EmbedConfig(max_length=max_length),
            lambda d, t: bar.progress(d / max(t, 1), text=f"Re-encoding: {d:,} / {t:,} sentences"),
            ArrayCache(),
        )
    finally:
        bar.empty()


# ------------------------------------------------------------------ neighbours and projection


NPY_MAGIC = b"\x93NUMPY"


def _check_npy_header(data: bytes, name: str, hint: str) -> None:
    """Refuse a .npy whose header claims more rows than MAX_ROWS or more bytes than the file holds.

    Read before ``np.load``, which would otherwise try to allocate whatever the header claims (a 130-byte
    file can claim exabytes). Malformed headers raise ValueError, which the caller reports.
    """
    stream = io.BytesIO(data)
    version = np.lib.format.read_magic(stream)
    read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
    shape, _, dtype = read_header(stream, max_header_size=10_000)
    if dtype.hasobject:
        return  # np.load refuses it with allow_pickle=False
    if shape and shape[0] > MAX_ROWS:
        raise InputError(f"{name}: {shape[0]:,} rows is over the limit of {MAX_ROWS:,}; sample the vectors first")
    claimed = math.prod(shape) * dtype.itemsize
    if claimed > len(data) - stream.tell():
        raise InputError(f"{name}: unreadable .npy (its header claims {claimed:,} bytes, the file is shorter); {hint}")


def load_vectors(data: bytes, name: str) -> np.ndarray:
    """Precomputed vectors from an uploaded .npy file: (n, d) float32, validated; never unpickled.

    Raises InputError (one line, says what to fix) for anything but a finite, real, 2-D array.
    """
    hint = "save a 2-D float array with numpy.save(path, vectors, allow_pickle=False)"
    if not data.startswith(NPY_MAGIC):
        raise InputError(f"{name}: not a NumPy .npy file (pickles, .npz and text are refused); {hint}")
    try:
        _check_npy_header(data, name, hint)
        arr = np.load(io.BytesIO(data), allow_pickle=False)
    except (ValueError, EOFError, OSError) as exc:
        raise InputError(f"{name}: unreadable .npy ({first_line(exc, 80)}); {hint}") from None
    if not isinstance(arr, np.ndarray) or arr.dtype.kind not in "fiu":
        raise InputError(f"{name}: holds {getattr(arr, 'dtype', type(arr).__name__)} values, not numbers; {hint}")
    if arr.ndim != 2:
        raise InputError(f"{name}: vectors must be a 2-D array (rows, dimensions), got shape {arr.shape}")
    n, d = arr.shape
    if n < 3 or d < 2:
        raise InputError(f"{name}: need at least 3 rows and 2 dimensions, got {n} x {d}")
    if n > MAX_ROWS:
        raise InputError(f"{name}: {n:,} rows is over the limit of {MAX_ROWS:,}; sample the vectors first")
    out = np.ascontiguousarray(arr, dtype=np.float32)  # (n, d)
    bad = ~np.isfinite(out).all(axis=1)  # (n,)
    if bad.any():
        raise InputError(f"{name}: {int(bad.sum())} row(s) contain NaN or infinite values (in float32); fix them first")
    return out


def array_key(vectors: np.ndarray, *parts: object) -> str:
    """Key naming an array by its content (for caches), optionally with more ``parts``."""
    arr = np.ascontiguousarray(vectors)
    return make_key("array", arr.shape, arr.dtype.str, hashlib.sha256(arr.tobytes()).hexdigest(), *parts)


def calibrated_key(vectors_key: str, method: str, flow_json: str, fit_key: str) -> str:
    """Key naming vectors mapped by a calibrator fitted on the vectors named ``fit_key``."""
    return make_key(vectors_key, method, flow_json, fit_key)


@st.cache_data(show_spinner=False, max_entries=16)
def calibrated_vectors(
    method: str, flow_json: str, fit_key: str, vectors_key: str, _fit_vectors: np.ndarray, _vectors: np.ndarray
) -> np.ndarray:
    """``_vectors`` (n, d) mapped by the calibrator fitted (cached) on ``_fit_vectors``: (n, d') float32."""
    calibrator = fit_calibrator(method, flow_json, fit_key, _fit_vectors)
    return np.asarray(calibrator.transform(_vectors), dtype=np.float32)


@dataclass(frozen=True)
class SpaceIndex:
    """A FAISS index over one space and the unit rows it holds (for exact ranks)."""

    index: VectorIndex
    unit: np.ndarray  # (n, d) L2-normalised float32, read-only


@st.cache_resource(show_spinner="Building the neighbour index…", max_entries=8)
def space_index(vectors_key: str, _vectors: np.ndarray) -> SpaceIndex:
    """core.index.build_index over ``_vectors`` (kind by size), cached by the key naming them."""
    index = build_index(_vectors)
    unit = index.stored_vectors() if index.kind == "flat" else as_unit_float32(_vectors)
    unit.flags.writeable = False
    return SpaceIndex(index, unit)


def query_neighbours(
    raw_key: str,
    cal_key: str,
    raw: np.ndarray,
    calibrated: np.ndarray,
    raw_query: np.ndarray,
    cal_query: np.ndarray,
    k: int,
) -> QueryNeighbours:
    """Top-``k`` of one query vector in the raw and the calibrated space, searched with the cached FAISS
    indexes, with each hit's exact rank in the other space, places gained and overlap@k (Jaccard).

    ``raw_query`` (1, d) / ``cal_query`` (1, d'); a corpus row used as the query is its own first hit.
    """
    raw_ix, cal_ix = space_index(raw_key, raw), space_index(cal_key, calibrated)
    q_raw = as_unit_float32(raw_query, "query", raw_ix.index.dim)[0]  # (d,)
    q_cal = as_unit_float32(cal_query, "calibrated query", cal_ix.index.dim)[0]  # (d',)
    hits = []
    for ix, q in ((raw_ix, q_raw), (cal_ix, q_cal)):
        scores, ids = ix.index.search(q[None], k)  # (1, k) each
        found = ids[0] >= 0
        hits.append((ids[0][found], scores[0][found]))  # (k,), (k,)
    return compare_hits(None, hits[0], hits[1], raw_ix.unit @ q_raw, cal_ix.unit @ q_cal)


@st.cache_data(show_spinner="Comparing every neighbourhood…", max_entries=32)
def neighbourhood_change(
    raw_key: str, cal_key: str, k: int, sample: int, _raw: np.ndarray, _calibrated: np.ndarray
) -> NeighbourhoodChange:
    """core.index.neighbourhood_change (each sentence's own top-``k`` excludes itself) on a seeded sample."""
    return change_of_neighbourhoods(_raw, _calibrated, k=k, sample=sample, seed=0)


@st.cache_data(show_spinner=False, max_entries=16)
def overlap_by_calibrator(
    raw_key: str,
    fit_key: str,
    methods: tuple[str, ...],
    flow_json: str,
    k: int,
    sample: int,
    _raw: np.ndarray,
    _fit_vectors: np.ndarray,
) -> pd.DataFrame:
    """Mean overlap@k between raw and calibrated neighbourhoods for each calibrator (fitted on ``_fit_vectors``).

    A method that cannot be fitted on these vectors (e.g. ``abtt:3`` on 3-dimensional ones) is left out.
    """
    bar = st.progress(0.0, text="Neighbourhoods under each calibrator…")
    rows = []
    try:
        for i, m in enumerate(methods):
            bar.progress(i / max(len(methods), 1), text=f"Neighbourhoods under {m}…")
            fj = flow_json if m == "flow" else ""
            try:
                z = calibrated_vectors(m, fj, fit_key, raw_key, _fit_vectors, _raw)
            except (InputError, ValueError):
                continue
            change = neighbourhood_change(raw_key, calibrated_key(raw_key, m, fj, fit_key), k, sample, _raw, z)
            rows.append({"calibration": m, "mean_overlap": change.mean_overlap, "k": change.k})
    finally:
        bar.empty()
    return pd.DataFrame(rows)


_PROJECTION_MESSAGE = {
    "pca": "PCA of {n:,} points…",
    "umap": "UMAP of {n:,} points… (the first UMAP run in a session compiles its code: allow a minute)",
    "tsne": "t-SNE of {n:,} points… (slow beyond a few thousand points: lower the sample size)",
}


@st.cache_data(show_spinner=False, max_entries=32)
def projection(
    vectors_key: str, method: str, n_components: int, sample: int, seed: int, params_json: str, _vectors: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """core.projection.project of a seeded sample of ``_vectors``: (rows (m,) int64, coordinates (m, c) float32).

    ``params_json`` holds the method's extra parameters (n_neighbors, perplexity, ...) as JSON.
    """
    from core.projection import project, sample_indices

    rows = sample_indices(len(_vectors), sample, seed)  # (m,)
    with st.spinner(_PROJECTION_MESSAGE.get(method, "Projecting {n:,} points…").format(n=len(rows)), show_time=True):
        coords = project(_vectors[rows], method, n_components, seed, **json.loads(params_json or "{}"))  # (m, c)
    return rows, coords


@st.cache_data(show_spinner="Counting tokens…", max_entries=16)
def token_lengths(model: str, texts_key: str, _texts: tuple[str, ...]) -> np.ndarray:
    """Number of tokens of each text (n,) with the model's tokenizer, special tokens included, untruncated."""
    tok = encoder(model).tokenizer
    out = np.empty(len(_texts), np.int64)
    for s in range(0, len(_texts), 1024):
        ids = tok(list(_texts[s : s + 1024]), add_special_tokens=True, truncation=False)["input_ids"]
        out[s : s + len(ids)] = [len(x) for x in ids]
    return out


COORDINATE_COLUMNS = ("x", "y", "z")  # metadata columns read as precomputed map coordinates


def precomputed_coordinates(meta: pd.DataFrame) -> np.ndarray | None:
    """Numeric x, y (and z when present) metadata columns as (n, 2|3) float32, else None."""
    cols = {str(c).strip().lower(): c for c in meta.columns}
    x, y, z = COORDINATE_COLUMNS
    if x not in cols or y not in cols or meta.empty:
        return None
    names = [x, y] + ([z] if z in cols else [])
    values = [pd.to_numeric(meta[cols[c]], errors="coerce").to_numpy(np.float64) for c in names]
    xyz = np.stack(values, axis=1)  # (n, 2|3)
    if not np.isfinite(xyz[:, :2]).all():
        return None
    if xyz.shape[1] == 3 and not np.isfinite(xyz[:, 2]).all():
        xyz = xyz[:, :2]
    return xyz.astype(np.float32)


# ------------------------------------------------------------------ loss surfaces


LANDSCAPE_N_TRAIN = (16, 32, 64, 128)
LANDSCAPE_GRIDS = (3, 5, 7, 9)
LANDSCAPE_EVAL_SIZES = (8, 16, 32, 64)
LANDSCAPE_MAX_LENGTHS = (32, 64, 128)
LANDSCAPE_LRS = (2e-5, 5e-5, 1e-4, 3e-4)


@dataclass(frozen=True)
class LandscapeView:
    """A finished landscape experiment read back, with its tables ready to show and download."""

    out_dir: str
    summary: dict
    inits: dict  # init -> core.landscape.results.InitResults
    axes: pd.DataFrame  # one row per init: axes, theta1/theta2 coordinates, flatness, metrics at theta1
    trajectory: pd.DataFrame  # one row per (init, run, epoch): signed (a, b), residual, true vs surface loss
    rollback: pd.DataFrame  # one row per (init, group rolled back to theta0)
    curves: pd.DataFrame  # long: init, alpha, metrics of the 1D curve
    surfaces: pd.DataFrame  # long: init, alpha, beta, metrics of the 2D grid
    disk_mb: float


def landscape_root() -> Path:
    """Folder of the landscape experiments (``$ISOSCOPE_CACHE/landscape``), read at every call."""
    from core.landscape.results import default_root

    return default_root()


def landscape_runs() -> list[dict]:
    """Summaries of the finished experiments under ``landscape_root()``, newest first (not cached: a finished
    run must appear at once)."""
    from core.landscape.results import list_results

    return list_results(landscape_root())


def landscape_tasks() -> tuple[str, ...]:
    """Built-in tasks runnable here: the demo tasks, and STS-B when its files are present."""
    folder = stsb_dir()
    has_stsb = (folder / "stsb-en-train.csv").exists() and (folder / "stsb-en-dev.csv").exists()
    return ("demo-topic", "demo-pairs") + (("stsb",) if has_stsb else ())


def landscape_task2(task: str) -> str:
    from core.landscape.tasks import default_task2

    return default_task2(task)


@st.cache_data(show_spinner=False, max_entries=16)
def _landscape_run(
    model: str,
    task: str,
    n_train: int,
    epochs: int,
    lr: float,
    grid: int,
    max_length: int,
    eval_size: int,
    points_1d: int,
    hessian_iters: int,
    seed: int,
    root: str,
) -> str:
    from core.landscape import LandscapeConfig, TrainConfig, load_task, run_landscape
    from core.landscape.classifier import INITS
    from core.landscape.pipeline import experiment_key

    task1, task2 = load_task(task, seed), load_task(landscape_task2(task), seed)
    config = LandscapeConfig(
        train=TrainConfig(lr=lr, epochs=epochs, batch_size=16, n_train=n_train, max_length=max_length, seed=seed),
        eval_size=eval_size,
        eval_chunk=16,  # attention blocks of 16 length-sorted examples (the packed BERT forward pads nothing else)
        grid=grid,
        points_1d=points_1d,
        hessian_iters=hessian_iters,
        hessian_size=min(16, eval_size),
    ).validate()
    enc = encoder(model)
    out = Path(root) / experiment_key(enc, task1, task2, config)
    n_stages = len(INITS) * (5 + (hessian_iters > 0))  # train x2, 1D curve, surface, rollback, Hessian
    bar = st.progress(0.0, text="Preparing the landscape run…")
    stage = [-1]

    def factory(desc: str):
        stage[0] += 1
        k = min(stage[0], n_stages - 1)

        def update(done: int, total: int) -> None:
            frac = min((k + done / max(total, 1)) / n_stages, 1.0)
            bar.progress(frac, text=f"Step {k + 1}/{n_stages} · {desc}: {done:,} / {total:,}")

        update(0, 1)
        return update

    try:
        return run_landscape(enc, task1, task2, config, out, factory)["out_dir"]
    finally:
        bar.empty()


def landscape_run(
    model: str,
    task: str,
    n_train: int,
    epochs: int,
    lr: float,
    grid: int,
    max_length: int,
    eval_size: int,
    points_1d: int = 11,
    hessian_iters: int = 5,
    seed: int = 0,
) -> str:
    """Train pre-trained and scratch on ``task`` (second axis: a different demo task) with a small, fixed
    recipe and measure the landscape; returns the result folder (cached; resumes from disk).

    Raises InputError / ValueError (bad task, a run that did not move, ...) with one line to show.
    """
    args = (model, task, n_train, epochs, lr, grid, max_length, eval_size, points_1d, hessian_iters, seed)
    out = _landscape_run(*args, str(landscape_root()))
    if not (Path(out) / "summary.json").exists():  # the folder was deleted since: run again
        _landscape_run.clear()
        out = _landscape_run(*args, str(landscape_root()))
    return out


def _num(x: object) -> float:
    return float(x) if isinstance(x, int | float) else float("nan")


def _axes_row(init: str, r: dict) -> dict:
    ax, fl = r.get("axes", {}), r.get("flatness", {})
    hess, grid = fl.get("hessian", {}), fl.get("grid_train_loss", {})
    grid_h = fl.get("grid_heldout_loss", {})
    eig = [v for v in grid.get("eigenvalues_param") or [] if v is not None]
    eig_h = [v for v in grid_h.get("eigenvalues_param") or [] if v is not None]
    t1, t2 = r.get("theta1", {}), r.get("theta2_coords", {})
    return {
        "init": init,
        "norm_delta1": _num(ax.get("norm_delta1")),
        "norm_delta2": _num(ax.get("norm_delta2")),
        "cos_delta1_delta2": _num(ax.get("cos_delta1_delta2")),
        "kept_fraction_delta2": _num(ax.get("kept_fraction")),
        "cos_e1_e2": _num(ax.get("cos_e1_e2")),
        "theta2_a": _num(t2.get("a")),
        "theta2_b": _num(t2.get("b")),
        "theta2_residual": _num(t2.get("residual")),
        "hessian_top_eigenvalue": _num(hess.get("eigenvalue")),
        "hessian_converged": hess.get("converged"),
        "hessian_iterations": hess.get("iterations"),
        "hessian_examples": hess.get("n_examples"),
        "grid_curvature_max": max(eig) if eig else float("nan"),
        "grid_curvature_min": min(eig) if eig else float("nan"),
        "grid_heldout_curvature_max": max(eig_h) if eig_h else float("nan"),
        "grid_fit_rmse": _num(grid.get("fit_rmse")),
        "theta1_train_loss": _num(t1.get("train_loss")),
        "theta1_train_acc": _num(t1.get("train_acc")),
        "theta1_heldout_loss": _num(t1.get("heldout_loss")),
        "theta1_heldout_acc": _num(t1.get("heldout_acc")),
        "n_params": r.get("n_params"),
    }


def _landscape_tables(res) -> dict[str, pd.DataFrame]:
    """Flat tables of a core.landscape.results.LandscapeResults."""
    axes, traj, roll, curves, surfaces = [], [], [], [], []
    for init, ir in res.inits.items():
        axes.append(_axes_row(init, ir.results))
        t = ir.trajectory_frame()
        if not t.empty:
            t.insert(0, "init", init)
            t["surface_minus_true_train_loss"] = t["surface_train_loss"] - t["train_loss"]
            t["surface_minus_true_heldout_loss"] = t["surface_heldout_loss"] - t["heldout_loss"]
            traj.append(t)
        rb = ir.rollback_frame()
        if not rb.empty:
            rb.insert(0, "init", init)
            rb["layers"] = rb["layers"].map(lambda v: " ".join(map(str, v)) if isinstance(v, list) else "")
            roll.append(rb)
        c = {k: np.asarray(v) for k, v in ir.curve.items() if k != "key"}
        if "alpha" in c:
            curves.append(pd.DataFrame({"init": init, **c}))
        s = {k: np.asarray(v) for k, v in ir.surface.items() if k != "key"}
        if "alpha" in s and "beta" in s:
            a, b = np.meshgrid(s.pop("alpha"), s.pop("beta"), indexing="ij")  # (n_a, n_b)
            cols = {k: v.ravel() for k, v in s.items()}
            surfaces.append(pd.DataFrame({"init": init, "alpha": a.ravel(), "beta": b.ravel(), **cols}))

    def cat(frames: list[pd.DataFrame]) -> pd.DataFrame:
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    return {
        "axes": pd.DataFrame(axes),
        "trajectory": cat(traj),
        "rollback": cat(roll),
        "curves": cat(curves),
        "surfaces": cat(surfaces),
    }


@st.cache_data(show_spinner="Reading the landscape results…", max_entries=8)
def _landscape_view(out_dir: str, mtime: float) -> LandscapeView:
    from core.landscape.results import load_results

    res = load_results(out_dir)
    if not res.inits:
        raise InputError(f"{out_dir}: the run has no finished initialisation yet; run it again to resume")
    size = sum(f.stat().st_size for f in Path(out_dir).rglob("*") if f.is_file())
    return LandscapeView(out_dir, res.summary, res.inits, disk_mb=size / 2**20, **_landscape_tables(res))


def landscape_view(out_dir: str) -> LandscapeView:
    """A result folder read back (cached until its summary.json changes); InputError when it holds none."""
    summary = Path(out_dir) / "summary.json"
    if not summary.exists():
        raise InputError(f"{out_dir}: no landscape results here; run `python -m core landscape` first")
    return _landscape_view(out_dir, summary.stat().st_mtime)


@st.cache_data(show_spinner=False, max_entries=8)
def landscape_disk_estimate(model: str, epochs: int) -> float:
    """Approximate MB of checkpoints a live run keeps: 4 runs x (epochs + 1) float32 parameter vectors."""
    n = sum(p.numel() for p in encoder(model).model.parameters())
    return 4 * (epochs + 1) * n * 4 / 2**20
