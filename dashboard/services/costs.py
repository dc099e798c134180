"""What a long run will cost (an ``isoscope.costs.Cost``, from the cost model beside each domain: ``isoscope.encode.costs``,
``calibrate.costs``, ``neighbours.costs``, ``atlas.costs``): the rates measured once per server process, and the
estimates built from them, each knowing what the caches already hold (a cached result costs ``FREE``).

The rates (an encoder's tokens per second, a flow's seconds per step) are measured on short probes the first
time a page asks, and kept for the process; token counts are kept per text list. The estimates themselves are
not cached: they look at the disk caches every time, so a result computed a moment ago costs nothing now.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

import streamlit as st

from isoscope.atlas.costs import KnnRate
from isoscope.cache import ArrayCache
from isoscope.calibrate.costs import FlowRate, flow_cost
from isoscope.costs import FREE, Cost, total
from isoscope.dashboard.services.keyed import HASH_FUNCS, Joined, Texts, texts
from isoscope.dashboard.services.models import ModelKey, encoder, fast_encoder, fp32_encoder
from isoscope.encode.costs import Throughput, embed_texts_cost, embedding_cost
from isoscope.encode.embed import companion_poolings
from isoscope.encode.pooling import resolve_pooling
from isoscope.geometry.costs import MetricsRate
from isoscope.neighbours.costs import UmapRate

if TYPE_CHECKING:
    from isoscope.atlas.pipeline import AtlasConfig


@st.cache_resource(show_spinner="Measuring this machine's speed (once)…", max_entries=8)
def throughput(model: ModelKey, hidden: bool, max_length: int, fast: bool = True) -> Throughput:
    """The tokens per second of the engine that embeds for ``model`` (the sidebar's key; ``fast``: its fastest
    engine, else the loaded model itself), with every hidden state pooled (``hidden``: what a pass with layer
    poolings and companions computes) or the last layer only."""
    from isoscope.encode.costs import measure_throughput

    enc = fast_encoder(model) if fast else encoder(model)
    poolings = companion_poolings(enc, 1) if hidden else None  # None: the model's own pooling
    return measure_throughput(enc, poolings or None, max_length)


@st.cache_data(show_spinner=False, max_entries=64, hash_funcs=HASH_FUNCS)
def token_count(model: ModelKey, items: Texts, max_length: int) -> int:
    """``isoscope.encode.costs.token_count`` of ``items`` with ``model``'s tokenizer (a seeded sample, scaled)."""
    from isoscope.encode.costs import token_count as count

    return count(fp32_encoder(model), items.items, max_length)


@st.cache_resource(show_spinner="Measuring this machine's speed (once)…", max_entries=8)
def flow_step_seconds(dim: int, flow_json: str) -> FlowRate:
    """A flow's step and setup seconds with these settings (``isoscope.calibrate.costs.measure_flow_rate``)."""
    from isoscope.calibrate.costs import measure_flow_rate

    return measure_flow_rate(dim, _flow(flow_json))


def _flow(flow_json: str):
    """The unfitted ``Flow`` of these settings (``Flow().get_params()`` as JSON; "" for the default)."""
    from isoscope.calibrate import Flow

    return Flow(**json.loads(flow_json)) if flow_json else Flow()


def distinct(items: Texts) -> Texts:
    """``items`` without repeats (first occurrences, in order): what a pass embeds (``encode_many``)."""
    return items if len(set(items.items)) == len(items) else texts(dict.fromkeys(items.items))


def embedding(model: ModelKey, items: Texts, poolings: Sequence[str], max_length: int) -> Cost:
    """What ``services.embeddings.embed_many(model, items, poolings, max_length)`` will cost
    (``isoscope.encode.costs.embed_texts_cost``: ``FREE`` when the disk cache holds every pooling, of every part of a
    ``Joined`` list); each distinct text is embedded once."""
    if isinstance(items, Joined) and len(items.parts) > 1:
        return total([embedding(model, part, poolings, max_length) for part in items.parts])
    return embed_texts_cost(
        fast_encoder(model),
        items.items,
        poolings,
        max_length=max_length,
        rate=lambda hidden: throughput(model, hidden, max_length),
        cache=ArrayCache(),
        companions=True,
        tokens=lambda: token_count(model, distinct(items), max_length),
    )


@st.cache_resource(show_spinner="Measuring this machine's speed (once)…", max_entries=4)
def metrics_rate(dim: int) -> MetricsRate:
    """The isotropy metrics' rates for ``dim`` dimensions (``isoscope.geometry.costs.measure_metrics``)."""
    from isoscope.geometry.costs import measure_metrics

    return measure_metrics(dim)


def flow(n_rows: int, dim: int, flow_json: str = "") -> Cost:
    """Training a flow with these settings on ``n_rows`` vectors of ``dim`` dimensions (not cached). The step
    is measured once per architecture: the schedule (epochs, learning rate, seed) does not change its time."""
    flow = _flow(flow_json)
    schedule = {name: value for name, value in type(flow)().get_params().items() if name in ("epochs", "lr", "seed")}
    architecture = {**flow.get_params(), **schedule}  # the default schedule: it does not change a step's time
    step = flow_step_seconds(dim, json.dumps(architecture, sort_keys=True))
    return flow_cost(n_rows, flow, step)


def fits(methods: Sequence[str], n_rows: int, dim: int, flow_json: str = "", cached: bool = False) -> Cost:
    """Fitting ``methods`` on ``n_rows`` vectors: the flows' training (the linear methods take well under a
    second); ``FREE`` when ``cached``."""
    if cached or n_rows < 2:
        return FREE
    return total([flow(n_rows, dim, flow_json) for m in methods if m.strip() == "flow"])


@st.cache_resource(show_spinner="Measuring this machine's speed (once)…", max_entries=1)
def _umap_probe() -> UmapRate:
    from isoscope.neighbours.costs import measure_umap

    return measure_umap(repeat=False, setup=True)  # and a quarter-size layout: the cost of any layout


def umap_rate() -> UmapRate | None:
    """UMAP's rate here: the layouts timed in this process (``isoscope.neighbours.costs.seen_umap_rate``), else a 1,000-point
    probe (a second or two) when numba's disk cache holds the kernels; None before the first layout on this
    machine (the probe would pay the one-time compile itself)."""
    from isoscope.neighbours.costs import seen_umap_rate
    from isoscope.neighbours.umap_jit import layout_kernels_ready

    seen = seen_umap_rate()
    if seen is not None:
        return seen
    return _umap_probe() if layout_kernels_ready() else None


@st.cache_resource(show_spinner="Measuring this machine's speed (once)…", max_entries=4)
def knn_rate(dim: int) -> KnnRate:
    """The atlas kNN graph's rates for ``dim``-dimensional vectors (``isoscope.atlas.costs.measure_knn``)."""
    from isoscope.atlas.costs import measure_knn

    return measure_knn(dim)


@st.cache_resource(show_spinner="Measuring this machine's speed (once)…", max_entries=2)
def int8_build_seconds(model: ModelKey) -> float:
    """Seconds to build ``model``'s int8 copy here (``isoscope.encode.costs.measure_int8_build``)."""
    from isoscope.encode.costs import measure_int8_build

    return measure_int8_build(fp32_encoder(model))


def int8_build(model: ModelKey) -> Cost:
    """Building ``model``'s int8 copy (``services.models``'s int8 encoder): ``FREE`` when the int8 cache holds it."""
    from isoscope.encode.quantize import int8_built

    base = model.at("fp32")
    if int8_built(fp32_encoder(base)):
        return FREE
    return Cost(int8_build_seconds(base))


def sweep(model: ModelKey, items: Texts, pooling: str, max_length: int) -> Cost:
    """The Precision & size sweep of ``items`` (``services.sweep.sweep``): the int8 copy when not built yet, and
    both embeddings; before the int8 copy exists its pass is counted at the fp32 engine's rate (int8 runs faster:
    an upper bound)."""
    base = model.at("fp32")
    build = int8_build(base)
    cost = build + embedding(base, items, [pooling], max_length)
    if build == FREE:
        return cost + embedding(base.at("int8"), items, [pooling], max_length)
    n_tokens = token_count(base, items, max_length)
    rate = throughput(base, resolve_pooling(pooling, encoder(base)).needs_hidden_states, max_length)
    return cost + embedding_cost(rate, n_tokens)


def atlas(model: ModelKey | None, items: Texts, config: AtlasConfig, dim: int) -> Cost:
    """Building an atlas of ``items`` with ``config``: their embedding (none for a vectors file: ``model`` None),
    each space's kNN graph (when the build needs one) and 2-D layout (UMAP at ``umap_rate``; without a rate
    yet, the layouts are left out)."""
    from isoscope.atlas.costs import graph_layout_cost
    from isoscope.atlas.folder import needs_graph

    n = len(items)
    cost = FREE
    if n < 2:
        return cost
    if model is not None:  # each distinct text is embedded once (atlas.pipeline.distinct_rows)
        pooling = resolve_pooling(config.pooling, encoder(model))
        rate = throughput(model, pooling.needs_hidden_states, config.max_length)
        n_tokens = token_count(model, distinct(items), config.max_length)
        cost += embedding_cost(rate, n_tokens, n_arrays=1, n_rows=n, dim=dim)
    spaces = 1 if config.calibrate == "none" else 2
    graph = needs_graph(config.to_dict())  # the kNN probe only when a graph or a layout needs it
    umap = umap_rate() if config.layout == "umap" else None
    knn = knn_rate(dim) if graph or umap is not None else None
    args = {"k": config.k + 1, "spaces": spaces, "landmarks": config.landmarks, "graph": graph}
    cost += graph_layout_cost(n, dim, **args, knn=knn, umap=umap)
    return cost


def retrieval(
    model: ModelKey, sides: Sequence[Texts], pooling: str, max_length: int, methods: Sequence[str], dim: int
) -> Cost:
    """A retrieval run (``services.retrieval.run_model``): each side's prompted texts embedded with one pooling
    (``FREE`` when the disk cache holds them), and the flows among ``methods`` fitted on the documents."""
    cost = total(
        [
            embed_texts_cost(
                fast_encoder(model),
                side.items,
                [pooling],
                max_length=max_length,
                rate=lambda hidden: throughput(model, hidden, max_length),
                cache=ArrayCache(),
                tokens=lambda side=side: token_count(model, side, max_length),
            )
            for side in sides
        ]
    )
    return cost + fits(methods, len(sides[-1]), dim)
