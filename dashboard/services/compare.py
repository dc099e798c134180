"""Two spaces of the same texts: their encoders, vectors (layers included), CKA, neighbour overlap, hubness and maps.

A space's encoder is the sidebar's model (its ``ModelKey``), a loss-surface checkpoint
(``landscape:FOLDER:INIT:EPOCH``, its base model fp32 on the CPU) or a seeded random init of the model
(``isoscope.sources``). Every vector travels with its key
(``keyed.Vectors``); each long step shows an ``st.progress`` bar and is cached.
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from isoscope.cache import ArrayCache, make_key
from isoscope.comparison import CKAMatrix, ComparisonMetrics, cka_matrix, compare_spaces
from isoscope.dashboard.services.calibration import calibrated
from isoscope.dashboard.services.keyed import HASH_FUNCS, Texts, Vectors
from isoscope.dashboard.services.models import ModelKey
from isoscope.dashboard.services.models import encoder as base_encoder
from isoscope.dashboard.services.space import SessionSpace, vectors_for
from isoscope.dashboard.text import literal
from isoscope.encode.costs import Throughput, embed_texts_cost, measure_throughput
from isoscope.encode.embed import EmbedConfig, companion_poolings, encode_many
from isoscope.encode.models import Encoder
from isoscope.encode.pooling import PoolingSpec, layer_names
from isoscope.sources import SpaceSpec, load_space_encoder

VECTORS_FILE = "session vectors file"  # SpaceSpec.vectors of a side that is the session's vectors file


@dataclass(frozen=True)
class Side:
    """What the page picked for one side: where its space comes from (``SpaceSpec``: the sidebar's model or a
    landscape checkpoint, its init, pooling and calibration, or the session's vectors file), when it is
    calibrated with a flow, the flow's settings, and the key of its model (None for the file)."""

    spec: SpaceSpec
    flow_json: str = ""
    model: ModelKey | None = None  # spec.model's key: the sidebar's, or a checkpoint's name

    @classmethod
    def of_model(
        cls, model: ModelKey, init: str, pooling: PoolingSpec | None, calibrate: str, flow_json: str = ""
    ) -> Side:
        """A side of ``model`` (the sidebar's key, or ``ModelKey("landscape:...")``): its spec names the model."""
        return cls(SpaceSpec(model.name, init, 0, pooling, calibrate), flow_json, model)

    @property
    def is_file(self) -> bool:
        return self.spec.kind == "vectors"


@dataclass(frozen=True)
class SideVectors:
    """One side's vectors: the compared space and the raw mean-pooled layers of its encoder."""

    name: str  # encoder name
    num_layers: int
    vectors: Vectors  # (n, d') pooled and calibrated
    layers: tuple[Vectors, ...]  # (n, d) each: layer:0..L


@st.cache_resource(show_spinner="Loading the model…", max_entries=4)
def space_encoder(model: ModelKey, init: str, seed: int) -> Encoder:
    """The encoder of a space (InputError for a model, checkpoint or init that cannot be loaded)."""

    def loader(name: str) -> Encoder:  # the key's own model, or a checkpoint's base model (fp32 on the CPU)
        return base_encoder(model if name == model.name else ModelKey(name))

    return load_space_encoder(SpaceSpec(model.name, init, seed), loader=loader)


@st.cache_resource(show_spinner="Measuring this machine's speed (once)…", max_entries=8)
def _throughput(model: ModelKey, init: str, seed: int, hidden: bool, max_length: int) -> Throughput:
    """``isoscope.encode.costs.measure_throughput`` of a space's encoder (every hidden state pooled, or the last layer)."""
    enc = space_encoder(model, init, seed)
    return measure_throughput(enc, companion_poolings(enc, 1) if hidden else None, max_length)


@st.cache_data(show_spinner=False, max_entries=16, hash_funcs=HASH_FUNCS)
def _embed(model: ModelKey, init: str, seed: int, items: Texts, poolings: tuple[str, ...], max_length: int) -> dict:
    enc = space_encoder(model, init, seed)
    rate = lambda hidden: _throughput(model, init, seed, hidden, max_length)  # noqa: E731
    cost = embed_texts_cost(
        enc, items.items, poolings, max_length=max_length, rate=rate, cache=ArrayCache(), companions=True
    )
    note = f" · {cost.describe()} in all" if cost.long else ""  # said before the pass starts
    name = literal(enc.name)  # a model folder's name: the progress text is Markdown
    bar = st.progress(0.0, text=f"Embedding {len(items):,} texts with {name}{note}…")

    def progress(done: int, total: int) -> None:
        bar.progress(done / max(total, 1), text=f"Embedding {done:,} / {total:,} texts with {name}{note}")

    try:
        return encode_many(
            enc,
            items.items,
            poolings,
            config=EmbedConfig(max_length=max_length),
            progress=progress,
            cache=ArrayCache(),
            companions=True,
        )
    finally:
        bar.empty()


def _calibrated(side: Side, raw: Vectors) -> Vectors:
    """The side's calibration fitted on its own vectors (no labels), or ``raw``."""
    method = side.spec.calibrate
    return raw if method == "none" else calibrated(method, side.flow_json, raw, raw)


def side_vectors(side: Side, items: Texts, max_length: int) -> SideVectors:
    """A model side applied to ``items``: one forward pass gives its pooling and every layer; the calibrator is
    fitted on the space's own vectors (no labels). InputError for a pooling the model lacks, or a bad fit."""
    from isoscope.sources import check_pooling

    spec, model = side.spec, side.model
    assert model is not None, "a vectors file's side has no model: file_side_vectors"
    enc = space_encoder(model, spec.init, spec.seed)
    pooling = check_pooling(spec, enc).name
    layers = layer_names(enc.num_layers)
    poolings = tuple(dict.fromkeys((pooling, *layers)))
    arrays = _embed(model, spec.init, spec.seed, items, poolings, max_length)
    keyed = {p: Vectors(make_key("cmp-emb", enc.fingerprint, p, max_length, items.key), arrays[p]) for p in poolings}
    return SideVectors(enc.name, enc.num_layers, _calibrated(side, keyed[pooling]), tuple(keyed[p] for p in layers))


def file_side_vectors(space: SessionSpace, side: Side, items: Texts) -> SideVectors:
    """The session's vectors file as one side: the vectors of ``items`` looked up in it (InputError for a text it
    lacks), calibrated on themselves as a model's side is; no layers."""
    return SideVectors(space.label, 0, _calibrated(side, vectors_for(space, items)), ())


@st.cache_data(show_spinner=False, max_entries=16, hash_funcs=HASH_FUNCS)
def comparison(a: Vectors, b: Vectors, k: int, map_method: str, map_points: int) -> ComparisonMetrics:
    """isoscope.comparison.compare_spaces: CKA, exact neighbour overlap, hubness and the Procrustes-aligned maps."""
    bar = st.progress(0.0, text="Comparing the spaces…")

    def stage(name: str):
        bar.progress(0.0, text=f"Comparing the spaces: {name}…")

        def progress(done: int, total: int) -> None:
            bar.progress(done / max(total, 1), text=f"Comparing the spaces: {name} ({done:,} / {total:,})")

        return progress

    try:
        same = a.key == b.key
        return compare_spaces(
            a.array,
            a.array if same else b.array,
            k,
            maps=True,
            map_method=map_method,
            map_points=map_points,
            seed=0,
            progress=stage,
        )
    finally:
        bar.empty()


@st.cache_data(show_spinner="CKA between every pair of layers…", max_entries=16, hash_funcs=HASH_FUNCS)
def layer_cka(layers_a: tuple[Vectors, ...], layers_b: tuple[Vectors, ...]) -> CKAMatrix:
    """Linear and debiased CKA of every layer of A against every layer of B (one list when they are the same)."""
    same = [v.key for v in layers_a] == [v.key for v in layers_b]
    return cka_matrix([v.array for v in layers_a], None if same else [v.array for v in layers_b])
