"""What a long run will cost before it starts: time and disk, from quantities measured on this machine.

Nothing here is a constant that only holds on one computer. Every estimate is a count of work, taken from
the run's own settings and data, times a rate measured here:

- embedding: tokens (the tokenizer on a seeded sample of the texts, scaled to all of them) / the encoder's
  own throughput, measured once on a short probe (``measure_throughput``: two length-sorted batches of
  ``PROBE_TEXTS``, after one warm-up pass, on the engine that will run);
- a flow: optimiser steps (epochs x batches) x seconds per step, measured by training the same
  architecture for two short epochs on random vectors of the same dimension (``measure_flow_step``);
- a landscape live run: evaluation points (every point, training step and Hessian-vector product the
  recipe makes, in units of one point) x the seconds of one point, timed on the run's own classifier and
  evaluation set (``isoscope.landscape.live.seconds_per_point``); a training step costs ``STEP_FACTOR``
  forwards (the backward multiplies by each weight matrix twice: for the input and for the gradient), a
  Hessian-vector product ``HVP_FACTOR`` steps (a double backward, on the unfused attention kernel);
- UMAP: point-epochs (points x the epochs umap-learn runs) x the seconds per point-epoch of the layouts already
  timed in this process (``record_umap``), or of a 1,000-point probe (``measure_umap``) when numba's disk
  cache holds the kernels (``isoscope.neighbours.umap_jit.layout_kernels_ready``); before the first layout on
  a machine there is no rate: the probe would pay the one-time compile (a minute) itself;
- an atlas kNN graph: n^2 d (exact, up to ``isoscope.atlas.graph.EXACT_MAX_ROWS`` rows) or n log2 n
  (NN-descent) x the seconds of a graph of ``KNN_PROBE_ROWS`` low-rank probe vectors built both ways
  (``measure_knn``);
- an int8 model: the seconds of building (exporting and quantising) one- and two-layer copies of the model
  with random weights, extrapolated to its layers (``measure_int8_build``).

``Cost(seconds, disk_bytes)`` adds up and says itself in words: ``Cost(130, 40e6).describe()`` is
"about 2 min, 40 MB on disk". A result that is cached costs ``FREE``; ``Cost.long`` says whether it is worth
telling the user before the run (``SHOW_SECONDS``). Light to import: numpy, torch and umap are imported
inside the functions that measure.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from isoscope.encode.pooling import parse_pooling

if TYPE_CHECKING:
    from isoscope.cache import ArrayCache
    from isoscope.calibrate.flow import Flow
    from isoscope.encode.models import Encoder
    from isoscope.landscape.live import LiveRun

SHOW_SECONDS = 20.0  # a run this long or longer is announced before it starts
TOKEN_SAMPLE = 2_048  # texts tokenized to estimate the tokens of a corpus
PROBE_TEXTS: tuple[str, ...] = (  # lengths from a few words to two sentences, as a corpus mixes them
    "A man is playing a guitar on a small stage in front of a quiet audience, while the rain falls outside.",
    "Stock markets fell sharply after the announcement.",
    "The cat sat on the mat while the dog slept by the fire.",
    "Where is the nearest train station?",
    "Researchers found that the new vaccine reduced infections by half in a trial of ten thousand adults.",
    "I loved it.",
    "The committee will meet again next week to discuss the budget for the coming year.",
    "Two children are running through a field of yellow flowers.",
)
PROBE_BATCHES = 2  # length-sorted batches of the probe, each about EmbedConfig.batch_tokens tokens
STEP_FACTOR = 3.0  # a training step / a forward pass: the backward multiplies by each weight twice
HVP_FACTOR = 4.0  # a Hessian-vector product (double backward, attention on the unfused kernel) / a training step
UMAP_PROBE_ROWS = 1_000
KNN_PROBE_ROWS = 4_000
KNN_PROBE_RANK = 32


# ------------------------------------------------------------------ the value


@dataclass(frozen=True)
class Cost:
    """What a run will take: wall-clock seconds on this machine and bytes it leaves on disk."""

    seconds: float = 0.0
    disk_bytes: int = 0

    def __add__(self, other: Cost) -> Cost:
        return Cost(self.seconds + other.seconds, self.disk_bytes + other.disk_bytes)

    @property
    def long(self) -> bool:
        """Worth saying before the run starts (``SHOW_SECONDS`` or more)."""
        return self.seconds >= SHOW_SECONDS

    def describe(self) -> str:
        """``about 2 min, 40 MB on disk`` (the disk part only when the run writes something worth naming)."""
        text = f"about {duration_text(self.seconds)}"
        if self.disk_bytes >= 2**20:
            text += f", {size_text(self.disk_bytes)} on disk"
        return text


FREE = Cost()


def total(costs: Sequence[Cost]) -> Cost:
    """The sum of ``costs`` (``FREE`` for none)."""
    out = FREE
    for c in costs:
        out = out + c
    return out


def duration_text(seconds: float) -> str:
    """``5 s``, ``40 s``, ``2 min``, ``1 h 10 min``: rounded to what an estimate can promise."""
    s = max(0.0, float(seconds))
    if s < 10:
        return f"{max(1, round(s))} s"
    if s < 90:
        return f"{5 * round(s / 5)} s"
    if s < 3600:
        return f"{round(s / 60)} min"
    h, m = divmod(round(s / 60), 60)
    return f"{h} h" + (f" {m} min" if m else "")


def size_text(n_bytes: float) -> str:
    """``800 KB``, ``40 MB``, ``1.1 GB`` (binary units, as the disk usage tools show them)."""
    b = max(0.0, float(n_bytes))
    if b < 2**20:
        return f"{max(1, round(b / 2**10))} KB"
    if b < 2**30:
        mb = b / 2**20
        return f"{mb:.1f} MB" if mb < 10 else f"{round(mb):,} MB"
    return f"{b / 2**30:.1f} GB"


# ------------------------------------------------------------------ embedding


@dataclass(frozen=True)
class Throughput:
    """An encoder's measured speed on this machine: real (non-padding) tokens per second."""

    tokens_per_second: float
    probe_tokens: int  # tokens of the probe it was measured on
    probe_seconds: float


def probe_texts(batch_tokens: int) -> list[str]:
    """``PROBE_TEXTS`` repeated to fill about ``PROBE_BATCHES`` batches of ``batch_tokens`` tokens."""
    words = sum(len(t.split()) for t in PROBE_TEXTS)  # ~1.3 tokens per word: enough repeats either way
    repeats = max(1, math.ceil(PROBE_BATCHES * max(batch_tokens, 64) / words))
    return list(PROBE_TEXTS) * repeats


def measure_throughput(encoder: Encoder, poolings: Sequence[str] = ("mean",), max_length: int = 128) -> Throughput:
    """Tokens per second of ``encoder`` (on the engine it runs on) for a pass that pools ``poolings``: one
    warm-up pass over the probe, then one timed pass (uncached), the way ``encode_many`` batches a corpus."""
    from isoscope.encode.embed import EmbedConfig, encode_many

    config = EmbedConfig(max_length=max_length)
    texts = probe_texts(config.batch_tokens)
    n_tokens = token_count(encoder, texts, max_length, sample=None)
    encode_many(encoder, texts[: len(PROBE_TEXTS)], poolings, config)  # warm-up: allocations, lazy kernels
    start = time.perf_counter()
    encode_many(encoder, texts, poolings, config)
    seconds = max(time.perf_counter() - start, 1e-6)
    return Throughput(n_tokens / seconds, n_tokens, seconds)


def token_count(encoder: Encoder, texts: Sequence[str], max_length: int, sample: int | None = TOKEN_SAMPLE) -> int:
    """Tokens ``encode_many`` feeds the model for ``texts`` (special tokens included, truncated at
    ``max_length`` and the model's limit): counted on a seeded sample of ``sample`` texts (None: all), scaled."""
    import numpy as np

    from isoscope.encode.embed import model_max_tokens
    from isoscope.sampling import sample_indices

    n = len(texts)
    if n == 0:
        return 0
    limit = model_max_tokens(encoder)
    length = min(max_length, limit) if limit is not None else max_length
    rows = sample_indices(n, sample, seed=0)  # (m,)
    ids = encoder.tokenizer([texts[i] for i in rows], truncation=True, max_length=length)["input_ids"]
    lengths = np.fromiter((len(x) for x in ids), np.int64, len(ids))
    return round(float(lengths.mean()) * n)


def embedding_cost(throughput: Throughput, n_tokens: int, n_arrays: int = 0, n_rows: int = 0, dim: int = 0) -> Cost:
    """One forward pass over ``n_tokens`` tokens, writing ``n_arrays`` float32 (``n_rows``, ``dim``) arrays."""
    return Cost(n_tokens / max(throughput.tokens_per_second, 1e-9), n_arrays * n_rows * dim * 4)


def embed_texts_cost(
    encoder: Encoder,
    texts: Sequence[str],
    poolings: Sequence[str],
    max_length: int,
    rate: Callable[[bool], Throughput],
    cache: ArrayCache | None = None,
    companions: bool = False,
    tokens: Callable[[], int] | None = None,
) -> Cost:
    """What ``encode_many(encoder, texts, poolings, ..., cache, companions)`` will cost: ``FREE`` when the cache
    holds every pooling asked for, or when the job is no bigger than a throughput probe; else one pass over the
    texts' tokens at ``rate(hidden)`` (``hidden``: the pass pools hidden states) and the arrays it writes.
    ``tokens``: the texts' token count when the caller keeps it (default: ``token_count``)."""
    from isoscope.encode.embed import EmbedConfig, companion_poolings, uncached_poolings

    config = EmbedConfig(max_length=max_length)
    if len(texts) < len(probe_texts(config.batch_tokens)):
        return FREE
    missing = list(poolings) if cache is None else uncached_poolings(encoder, texts, poolings, config, cache)
    if not missing:
        return FREE
    extra = [c.name for c in companion_poolings(encoder, len(texts))] if companions and cache is not None else []
    names = list(dict.fromkeys([*missing, *extra]))
    specs = [parse_pooling(p, encoder.num_layers, encoder.is_encoder_decoder) for p in names]
    n_tokens = tokens() if tokens is not None else token_count(encoder, texts, max_length)
    written = len(names) if cache is not None else 0
    hidden = any(s.needs_hidden_states for s in specs)
    return embedding_cost(rate(hidden), n_tokens, written, len(texts), encoder.hidden_size)


# ------------------------------------------------------------------ flows


def measure_flow_step(dim: int, flow: Flow | None = None) -> float:
    """Seconds per optimiser step of ``flow`` (an unfitted ``Flow``; default ``Flow()``) on ``dim``-dimensional
    vectors: two epochs of one batch on seeded random vectors, the second timed (the flow's own ``history_``
    seconds: the first step pays the optimiser's lazy set-up)."""
    import numpy as np
    from sklearn.base import clone

    from isoscope.calibrate.flow import Flow

    probe = clone(flow if flow is not None else Flow()).set_params(epochs=2)
    x = np.random.default_rng(0).standard_normal((max(probe.batch_size, 2), dim)).astype(np.float32)  # (b, d)
    probe.fit(x)
    return max(float(probe.history_[-1]["seconds"]) if probe.history_ else 0.0, 1e-6)


def flow_cost(n_rows: int, flow: Flow, step_seconds: float) -> Cost:
    """Training a flow on ``n_rows`` vectors: every epoch passes each row once, at ``step_seconds`` per full
    batch (a smaller last batch, or a fit set smaller than one batch, costs its share; its saved parameters
    are a few MB, not worth naming)."""
    return Cost(flow.epochs * max(n_rows, 1) / flow.batch_size * step_seconds)


# ------------------------------------------------------------------ UMAP


@dataclass(frozen=True)
class UmapRate:
    """UMAP's measured cost here: seconds per point and epoch once compiled, and what the first call took on top."""

    seconds_per_point_epoch: float
    compile_seconds: float


def umap_epochs(n_points: int) -> int:
    """The epochs umap-learn runs by default: 500 up to 10,000 points, 200 above."""
    return 500 if n_points <= 10_000 else 200


_UMAP_SEEN: dict[str, tuple[int, float]] = {}  # "first" and "latest" (point-epochs, seconds) of layouts timed here


def record_umap(n_points: int, seconds: float, epochs: int | None = None) -> None:
    """Remember a UMAP layout of ``n_points`` points (``epochs``: default ``umap_epochs``) timed in this process."""
    work = n_points * (epochs or umap_epochs(n_points))
    _UMAP_SEEN.setdefault("first", (work, seconds))
    _UMAP_SEEN["latest"] = (work, seconds)


def seen_umap_rate() -> UmapRate | None:
    """The rate of the layouts timed in this process (``record_umap``): seconds per point-epoch of the latest one
    after the first (the first alone: its rate, any compile included, an upper bound); None before any."""
    if "first" not in _UMAP_SEEN:
        return None
    (w1, s1), (w2, s2) = _UMAP_SEEN["first"], _UMAP_SEEN["latest"]
    if len(_UMAP_SEEN) == 2 and (w1, s1) == (w2, s2):
        return UmapRate(s1 / max(w1, 1), 0.0)
    rate = s2 / max(w2, 1)
    return UmapRate(rate, max(s1 - w1 * rate, 0.0))


def measure_umap(dim: int = 32, repeat: bool = True) -> UmapRate:
    """Time UMAP (``isoscope.neighbours.projection.project``) on ``UMAP_PROBE_ROWS`` seeded random points: the
    first call includes numba's compile when its disk cache lacks the kernels, the second (``repeat``) is the
    rate; ``repeat=False`` times one call and counts it all as the rate (for kernels known to be cached)."""
    import numpy as np

    from isoscope.neighbours.projection import project

    x = np.random.default_rng(0).standard_normal((UMAP_PROBE_ROWS, dim)).astype(np.float32)
    work = UMAP_PROBE_ROWS * umap_epochs(UMAP_PROBE_ROWS)
    start = time.perf_counter()
    project(x, "umap", 2, seed=0)
    first = time.perf_counter() - start
    if not repeat:
        return UmapRate(max(first, 1e-6) / work, 0.0)
    start = time.perf_counter()
    project(x, "umap", 2, seed=0)
    second = max(time.perf_counter() - start, 1e-6)
    return UmapRate(second / work, max(first - second, 0.0))


def umap_cost(n_points: int, rate: UmapRate, compiled: bool = True, epochs: int | None = None) -> Cost:
    """A UMAP layout of ``n_points`` points for ``epochs`` (default ``umap_epochs``): the measured rate times the
    point-epochs, plus the compile when not done yet."""
    work = n_points * (epochs or umap_epochs(n_points))
    return Cost(work * rate.seconds_per_point_epoch + (0.0 if compiled else rate.compile_seconds))


# ------------------------------------------------------------------ kNN graphs


@dataclass(frozen=True)
class KnnRate:
    """The atlas kNN graph's measured cost here (``isoscope.atlas.graph``): seconds per row pair and dimension
    of an exact (flat) graph, and seconds per row and log2(rows) of an NN-descent graph."""

    exact: float
    approx: float


def knn_probe_vectors(n_rows: int, dim: int):
    """Seeded (n_rows, dim) float32 vectors near a ``KNN_PROBE_RANK``-dimensional subspace, as sentence
    embeddings are (an approximate graph of full-rank noise is slower to build than of any real space)."""
    import numpy as np

    rng = np.random.default_rng(0)
    rank = min(KNN_PROBE_RANK, dim)
    low = rng.standard_normal((n_rows, rank)) @ rng.standard_normal((rank, dim))  # (n, d) of rank r
    return (low + 0.1 * rng.standard_normal((n_rows, dim))).astype(np.float32)


def measure_knn(dim: int, k: int = 16) -> KnnRate:
    """Time the graph of ``KNN_PROBE_ROWS`` probe vectors (``knn_probe_vectors``) of ``dim`` dimensions, once
    exact and once through NN-descent (``knn_graph_chunked``, the atlas's own builder; its kernels loaded on a
    small graph first, so the probe times the graph, not numba's cache)."""
    from isoscope.atlas.graph import knn_graph_chunked

    n = KNN_PROBE_ROWS
    x = knn_probe_vectors(n, dim)  # (n, d)
    start = time.perf_counter()
    knn_graph_chunked(x, k, exact_max_rows=n)
    exact = time.perf_counter() - start
    knn_graph_chunked(x[:200], k, exact_max_rows=0)
    start = time.perf_counter()
    knn_graph_chunked(x, k, exact_max_rows=0)
    approx = time.perf_counter() - start
    return KnnRate(max(exact, 1e-6) / (n * n * dim), max(approx, 1e-6) / (n * math.log2(n)))


def knn_cost(n_rows: int, dim: int, k: int, rate: KnnRate) -> Cost:
    """The kNN graph of ``n_rows`` rows (``k`` neighbours, itself included) as the atlas builds it: exact up to
    ``isoscope.atlas.graph.EXACT_MAX_ROWS`` rows (n^2 d work), NN-descent above (n log n); it writes ids and
    distances."""
    from isoscope.atlas.graph import graph_kind

    if n_rows < 2:
        return FREE
    if graph_kind(n_rows) == "flat":
        seconds = n_rows * n_rows * dim * rate.exact
    else:
        seconds = n_rows * math.log2(n_rows) * rate.approx
    return Cost(seconds, n_rows * k * 8)  # int32 ids + float32 distances


def layout_cost(n_rows: int, dim: int, k: int, landmarks: int, umap: UmapRate, knn: KnnRate) -> Cost:
    """An atlas UMAP layout of ``n_rows`` rows (``isoscope.atlas.layout.layout``): full UMAP, or above
    ``landmarks`` rows the landmark layout: its sample's own kNN graph and UMAP, then ``REFINE_EPOCHS`` epochs
    over every row (placing the rest from the graph is a few passes of arithmetic: not counted)."""
    from isoscope.atlas.layout import REFINE_EPOCHS

    if 0 < landmarks < n_rows:
        sample = knn_cost(landmarks, dim, k, knn) + umap_cost(landmarks, umap)
        return Cost(sample.seconds + umap_cost(n_rows, umap, epochs=REFINE_EPOCHS).seconds, n_rows * 8)
    return Cost(umap_cost(n_rows, umap).seconds, n_rows * 8)  # (n, 2) float32


# ------------------------------------------------------------------ int8 models


def _layer_count_keys(config: object) -> list[str]:
    return [key for key in ("num_hidden_layers", "num_layers", "num_decoder_layers", "n_layer") if hasattr(config, key)]


def measure_int8_build(encoder: Encoder) -> float:
    """Seconds to build ``encoder``'s int8 model here (``isoscope.encode.quantize.build_int8_onnx``: export and
    quantise): one- and two-layer copies of its architecture with seeded random weights are built in a temporary
    folder, and the second's extra time is counted once per further layer (the embeddings and the fixed costs
    are in the first)."""
    import copy
    import tempfile
    from pathlib import Path

    import torch
    from transformers import AutoModel

    from isoscope.encode.models import encoder_from_model
    from isoscope.encode.quantize import build_int8_onnx

    seconds = []
    for layers in (1, 2):
        config = copy.deepcopy(encoder.model.config)
        for key in _layer_count_keys(config):
            setattr(config, key, layers)
        with torch.random.fork_rng():
            torch.manual_seed(0)
            model = AutoModel.from_config(config)
        probe = encoder_from_model(model, encoder.tokenizer, f"int8-probe-{layers}")
        with tempfile.TemporaryDirectory(prefix="isoscope-int8-probe-") as folder:
            start = time.perf_counter()
            build_int8_onnx(probe, cache_dir=Path(folder))
            seconds.append(time.perf_counter() - start)
    per_layer = max(seconds[1] - seconds[0], 0.0)
    return seconds[0] + per_layer * max(encoder.num_layers - 1, 0)


# ------------------------------------------------------------------ loss surfaces


def landscape_points(run: LiveRun, num_layers: int) -> dict[str, float]:
    """The work of ``run`` in evaluation points (one point: the ``2 * eval_size`` fixed examples evaluated at one
    parameter vector, what ``seconds_per_point`` times), over both initialisations: the points it evaluates, the
    learning curve's (scaled by its examples), the training steps (a forward and a backward, ``STEP_FACTOR``
    forwards) and the Hessian-vector products (``HVP_FACTOR`` steps), both scaled by their batch."""
    from isoscope.landscape.options import INITS

    per_point = 2 * run.eval_size  # the fixed training and held-out examples of every point
    trajectory = 2 * (run.epochs + 1) - 3  # both runs' checkpoints, minus theta0, theta1, theta2 (known)
    rollback = num_layers + 3  # one group per layer, the embeddings, the whole encoder, none
    filter_points = run.FILTER_DIRECTIONS * 5 + run.grid**2  # 5 points per direction curve, one surface
    points = run.points_1d + run.grid**2 + trajectory + rollback + filter_points
    learning = (run.epochs + 1) * (run.eval_size + run.LEARNING_HELDOUT) / per_point
    steps = 2 * run.epochs * math.ceil(run.n_train / run.BATCH_SIZE)  # per init: both tasks
    step = STEP_FACTOR * run.BATCH_SIZE / per_point
    hvp = HVP_FACTOR * STEP_FACTOR * min(run.HESSIAN_SIZE, run.eval_size) / per_point
    inits = len(INITS)
    return {
        "evaluate": inits * (points + learning),
        "train": inits * steps * step,
        "hessian": inits * run.hessian_iters * hvp,
    }


def landscape_cost(run: LiveRun, n_params: int, num_layers: int, point_seconds: float) -> Cost:
    """A live loss-surface run: its work in points (``landscape_points``) x the seconds of one point measured
    on this machine (``isoscope.landscape.live.seconds_per_point``); the disk is ``run.disk_mb`` (every epoch's
    parameters of every run)."""
    work = landscape_points(run, num_layers)
    return Cost(sum(work.values()) * point_seconds, int(run.disk_mb(n_params) * 2**20))
