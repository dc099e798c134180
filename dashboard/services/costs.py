"""What a long run will cost (``isoscope.costs``): the rates measured once per server process, and the estimates
built from them, each knowing what the caches already hold (a cached result costs ``FREE``).

The rates (an encoder's tokens per second, a flow's seconds per step) are measured on short probes the first
time a page asks, and kept for the process; token counts are kept per text list. The estimates themselves are
not cached: they look at the disk caches every time, so a result computed a moment ago costs nothing now.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import streamlit as st

from isoscope.cache import ArrayCache
from isoscope.costs import FREE, Cost, Throughput, embed_texts_cost, flow_cost, total
from isoscope.dashboard.services.keyed import HASH_FUNCS, Joined, Texts
from isoscope.dashboard.services.models import encoder, fast_encoder, fp32_encoder
from isoscope.encode.embed import companion_poolings
from isoscope.encode.pooling import parse_pooling


@st.cache_resource(show_spinner="Measuring this machine's speed (once)…", max_entries=8)
def throughput(model: str, hidden: bool, max_length: int, fast: bool = True) -> Throughput:
    """The tokens per second of the engine that embeds for ``model`` (a ``model_key``; ``fast``: its fastest
    engine, else the loaded model itself), with every hidden state pooled (``hidden``: what a pass with layer
    poolings and companions computes) or the last layer only."""
    from isoscope.costs import measure_throughput

    enc = fast_encoder(model) if fast else encoder(model)
    poolings = [p.name for p in companion_poolings(enc, 1)] if hidden else ["mean"]
    return measure_throughput(enc, poolings or ["mean"], max_length)


@st.cache_data(show_spinner=False, max_entries=64, hash_funcs=HASH_FUNCS)
def token_count(model: str, items: Texts, max_length: int) -> int:
    """``isoscope.costs.token_count`` of ``items`` with ``model``'s tokenizer (a seeded sample, scaled)."""
    from isoscope.costs import token_count as count

    return count(fp32_encoder(model), items.items, max_length)


@st.cache_resource(show_spinner="Measuring this machine's speed (once)…", max_entries=8)
def flow_step_seconds(dim: int, flow_json: str) -> float:
    """Seconds per optimiser step of a flow with these settings (``isoscope.costs.measure_flow_step``)."""
    from isoscope.costs import measure_flow_step

    return measure_flow_step(dim, _flow_config(flow_json))


def _flow_config(flow_json: str):
    from isoscope.calibrate import FlowConfig

    return FlowConfig.from_dict(json.loads(flow_json)) if flow_json else FlowConfig()


def embedding(model: str, items: Texts, poolings: Sequence[str], max_length: int) -> Cost:
    """What ``services.embeddings.embed_many(model, items, poolings, max_length)`` will cost
    (``isoscope.costs.embed_texts_cost``: ``FREE`` when the disk cache holds every pooling, of every part of a
    ``Joined`` list)."""
    if isinstance(items, Joined) and len(items.parts) > 1:
        return total([embedding(model, part, poolings, max_length) for part in items.parts])
    return embed_texts_cost(
        fast_encoder(model),
        items.items,
        poolings,
        max_length,
        lambda hidden: throughput(model, hidden, max_length),
        ArrayCache(),
        companions=True,
        tokens=lambda: token_count(model, items, max_length),
    )


def flow(n_rows: int, dim: int, flow_json: str = "") -> Cost:
    """Training a flow with these settings on ``n_rows`` vectors of ``dim`` dimensions (not cached). The step
    is measured once per architecture: the schedule (epochs, learning rate, seed) does not change its time."""
    from dataclasses import asdict, replace

    config = _flow_config(flow_json)
    base = type(config)()
    architecture = replace(config, epochs=base.epochs, lr=base.lr, seed=base.seed)
    step = flow_step_seconds(dim, json.dumps(asdict(architecture), sort_keys=True))
    return flow_cost(n_rows, config, step)


def fits(methods: Sequence[str], n_rows: int, dim: int, flow_json: str = "", cached: bool = False) -> Cost:
    """Fitting ``methods`` on ``n_rows`` vectors: the flows' training (the linear methods take well under a
    second); ``FREE`` when ``cached``."""
    if cached or n_rows < 2:
        return FREE
    return total([flow(n_rows, dim, flow_json) for m in methods if m.strip() == "flow"])


def atlas(model: str | None, items: Texts, pooling: str, max_length: int, layouts: int, umap: bool) -> Cost:
    """Building an atlas of ``items``: their embedding (none for a vectors file: ``model`` None) and ``layouts``
    2-D layouts (UMAP at the rate of this process's earlier layouts; before any, the embedding alone)."""
    from isoscope.costs import embedding_cost, seen_umap_rate, umap_cost

    cost = FREE
    if model is not None and len(items) > 1:
        hidden = parse_pooling(pooling).needs_hidden_states
        rate = throughput(model, hidden, max_length)
        cost += embedding_cost(rate, token_count(model, items, max_length))
    seen = seen_umap_rate() if umap else None
    if seen is not None:
        cost += Cost(layouts * umap_cost(len(items), seen).seconds)
    return cost
