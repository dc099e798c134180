"""A *space* applied to one list of texts: a model's (model, init, pooling), a vectors file's rows, or an
embeddings endpoint's answers, then a calibration fitted on the space's own vectors.

What a space comes from is a ``SpaceSpec`` (``isoscope.sources.spec``). ``build_spaces`` turns specs into
``SpaceVectors``: one forward pass per distinct encoder (``isoscope.sources.checkpoints`` for landscape
checkpoints and random inits), one read per vectors file (``SourceReaders.tables``, default
``load_vector_file``), one batched, cached run per endpoint (``isoscope.encode.remote``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from isoscope.cache import ArrayCache, make_key
from isoscope.encode.models import Encoder
from isoscope.encode.pooling import PoolingSpec, layer_names, layer_pooling, resolve_pooling
from isoscope.errors import InputError, first_line
from isoscope.sources.checkpoints import Loader, load_space_encoder
from isoscope.sources.spec import SpaceSpec

if TYPE_CHECKING:
    from isoscope.data.vectors import VectorOrigin, VectorTable
    from isoscope.encode.endpoints import Endpoint
    from isoscope.encode.remote import EndpointCache

log = logging.getLogger(__name__)

ProgressFn = Callable[[int, int], None]


@dataclass
class SpaceVectors:
    """One space's vectors of the texts, and what they came from (``fingerprint`` goes into cache keys)."""

    spec: SpaceSpec
    model_name: str  # the encoder's name, the vectors file's FILE:COLUMN, or the endpoint's openai:NAME
    raw: np.ndarray  # (n, d) pooled (or as read), before calibration
    vectors: np.ndarray  # (n, d') after calibration (``raw`` itself for none)
    layers: list[np.ndarray] | None = None  # (n, d) mean-pooled layer:0..L of the same encoder, raw
    warnings: list[str] = field(default_factory=list)
    fingerprint: str = ""  # of the raw vectors: encoder + pooling + max length, the file's origin, the endpoint
    origin: VectorOrigin | None = None  # a vectors file's provenance (file, column, dtype, digest)
    recipe: str = ""  # a model's run in words (``describe_run``; ``space_vectors``), "" for given vectors

    @property
    def layer_names(self) -> list[str]:
        return layer_names(len(self.layers or []) - 1)


@dataclass
class SourceReaders:
    """Where ``build_spaces`` gets the spaces that are not models.

    ``tables(spec)``: the VectorTable of a ``vectors=`` spec (default: ``load_vector_file`` of its file, column
    and text column; the dashboard passes its upload); each is read once per SourceReaders. ``endpoints(spec)``:
    the Endpoint of a ``model=openai:NAME`` spec (default: its base_url, or OpenAI's). ``endpoint_cache``: where
    endpoint vectors are kept (default: next to the embedding cache, when there is one).
    """

    tables: Callable[[SpaceSpec], VectorTable] | None = None
    endpoints: Callable[[SpaceSpec], Endpoint] | None = None
    endpoint_cache: EndpointCache | None = None
    _read: dict[tuple, VectorTable] = field(default_factory=dict, repr=False)
    _encoders: dict[tuple, Encoder] = field(default_factory=dict, repr=False)

    def encoder(self, spec: SpaceSpec, loader: Loader | None) -> Encoder:
        """The encoder of a model spec (``load_space_encoder`` with ``loader``), loaded on first use."""
        if spec.encoder_key not in self._encoders:
            self._encoders[spec.encoder_key] = load_space_encoder(spec, loader)
        return self._encoders[spec.encoder_key]

    def table(self, spec: SpaceSpec) -> VectorTable:
        """The table of a vectors spec, read on first use."""
        if spec.encoder_key not in self._read:
            if self.tables is not None:
                self._read[spec.encoder_key] = self.tables(spec)
            else:
                from isoscope.data.vectors import load_vector_file

                self._read[spec.encoder_key] = load_vector_file(spec.vectors, spec.column, text_column=spec.text_column)
        return self._read[spec.encoder_key]

    def rows_of(self, spec: SpaceSpec) -> VectorTable | None:
        """The rows a space holds of its own: a vectors file's table (read once); None for a space that embeds the
        texts it is given (a model, an endpoint)."""
        return self.table(spec) if spec.kind == "vectors" else None

    def endpoint(self, spec: SpaceSpec) -> Endpoint:
        if self.endpoints is not None:
            return self.endpoints(spec)
        from isoscope.encode.endpoints import endpoint_for

        return endpoint_for(spec.model, base_url=spec.base_url or None)


def check_pooling(spec: SpaceSpec, encoder: Encoder, which: str = "") -> PoolingSpec:
    """The space's pooling on this encoder (``resolve_pooling``: the model's default when the spec has none);
    InputError naming the space for one the encoder does not have."""
    try:
        return resolve_pooling(spec.pooling, encoder)
    except InputError as exc:
        raise InputError(f"{which}{encoder.name}: {first_line(exc)}") from None


def calibrate_space(spec: SpaceSpec, raw: np.ndarray, progress=None) -> tuple[np.ndarray, list[str]]:
    """Fit ``spec.calibrate`` on the space's own vectors and apply it. Returns (n, d') float32 and warnings."""
    from isoscope.calibrate import make_calibrator
    from isoscope.calibrate.fitting import fit_size_warning, fit_timed

    if spec.calibrate == "none":
        return raw, []
    cal = make_calibrator(spec.calibrate)
    fit_timed(cal, raw, progress)
    warning = fit_size_warning(cal, len(raw), raw.shape[1])
    return np.asarray(cal.transform(raw), np.float32), [warning] if warning else []


@dataclass
class _Given:
    """The raw vectors of a space that is not a model: a file's rows or an endpoint's answers."""

    raw: np.ndarray  # (n, d)
    name: str
    fingerprint: str
    origin: VectorOrigin | None = None
    warnings: list[str] = field(default_factory=list)


def _given(
    spec: SpaceSpec,
    texts: Sequence[str],
    sources: SourceReaders,
    cache: ArrayCache | None,
    progress: Callable[[str], ProgressFn | None] | None,
    rows: Sequence[int] | None,
    n_input: int | None,
    prompt: str = "",
) -> _Given:
    """``prompt``: put before every text sent to an endpoint (``EmbedConfig.prompt``; a file's rows have none)."""
    if spec.kind == "vectors":
        table = sources.table(spec)
        raw = table.vectors_for(texts, rows, n_input)  # (n, d)
        return _Given(raw, table.name, table.origin.fingerprint, table.origin, list(table.warnings))
    from isoscope.encode.remote import EndpointCache, embed_endpoint

    endpoint = sources.endpoint(spec)
    store = sources.endpoint_cache
    if store is None and cache is not None:
        store = EndpointCache(cache.root.parent / "endpoints.sqlite")
    bar = progress(f"embed {endpoint.name}") if progress else None
    items = [prompt + t for t in texts] if prompt else texts  # sent as the model should see them
    return _Given(embed_endpoint(endpoint, items, progress=bar, cache=store), endpoint.name, endpoint.fingerprint)


def space_vectors(
    spec: SpaceSpec,
    texts: Sequence[str],
    *,
    readers: SourceReaders | None = None,
    loader: Loader | None = None,
    config=None,
    cache: ArrayCache | None = None,
    progress: ProgressFn | None = None,
    rows: Sequence[int] | None = None,
    n_input: int | None = None,
) -> SpaceVectors:
    """The vectors of ``texts`` in the space ``spec``, whatever it comes from: a model embeds them (loaded by
    ``loader``, pooled as the spec says or by the model's default, ``config``'s length and prompt, ``cache``), a
    vectors file gives their rows (``readers.tables``; by text, or row by row as ``build_spaces`` says of ``rows``
    and ``n_input``), an endpoint is called (``readers.endpoints``, its cache); then the spec's calibration.
    ``progress(done, total)`` follows the embedding. ``readers`` keeps what it loaded (a file, an encoder): pass the
    same one for several lists of texts. The one function a command calls for a space's vectors: it
    never asks what kind of space it has."""
    from isoscope.encode.embed import EmbedConfig, describe_run, encode

    readers = readers or SourceReaders()
    if spec.has_model:
        enc = readers.encoder(spec, loader)
        pooling = resolve_pooling(spec.pooling, enc)
        spec = replace(spec, pooling=pooling)
        raw = encode(enc, texts, pooling, config=config, progress=progress, cache=cache)  # (n, d)
        max_length = (config or EmbedConfig()).max_length
        fingerprint = make_key("space", enc.fingerprint, pooling.name, max_length)
        given = _Given(raw, enc.name, fingerprint)
        recipe = describe_run(enc, pooling, config)
    else:
        prompt = (config.prompt or "") if config is not None else ""
        given = _given(spec, texts, readers, cache, lambda _stage: progress, rows, n_input, prompt)
        recipe = ""
    calibrated, cal_warnings = calibrate_space(spec, given.raw)
    warnings = [*given.warnings, *cal_warnings]
    return SpaceVectors(
        spec, given.name, given.raw, calibrated, None, warnings, given.fingerprint, given.origin, recipe
    )


def build_spaces(
    specs: Sequence[SpaceSpec],
    texts: Sequence[str],
    *,
    layers: bool = False,
    loader: Loader | None = None,
    config=None,
    progress: Callable[[str], ProgressFn | None] | None = None,
    cache: ArrayCache | None = None,
    sources: SourceReaders | None = None,
    rows: Sequence[int] | None = None,
    n_input: int | None = None,
) -> list[SpaceVectors]:
    """Embed ``texts`` in every space of ``specs``: one forward pass per distinct encoder, giving every pooling
    its specs need (and with ``layers`` mean-pooled ``layer:0..L``), one read per vectors file, one run per
    endpoint; then each space's calibration.

    A vectors file gives the rows of ``texts`` by text when it has a text column, else by position: ``rows[i]``
    is the input row of ``texts[i]`` (default ``i``) of ``n_input`` rows (default ``len(texts)``).
    ``progress(stage)`` returns a ``(done, total)`` callback for that stage (or None).
    """
    from isoscope.encode.embed import EmbedConfig, encode_many

    if len(texts) < 2:
        raise InputError(f"need at least 2 texts to compare spaces, got {len(texts)}")
    if layers and (without := [s for s in specs if not s.has_model]):
        raise InputError(f"the layer CKA needs a model's layers; space {without[0].label()} has none")
    sources = sources or SourceReaders()
    given: dict[tuple, _Given] = {}
    for spec in specs:  # files first: a bad file fails before any model is loaded
        if spec.kind == "vectors" and spec.encoder_key not in given:
            given[spec.encoder_key] = _given(spec, texts, sources, cache, progress, rows, n_input)
    encoders: dict[tuple, Encoder] = {}
    for spec in specs:
        if spec.kind == "model" and spec.encoder_key not in encoders:
            encoders[spec.encoder_key] = load_space_encoder(spec, loader)
    for spec in specs:
        if spec.kind == "endpoint" and spec.encoder_key not in given:
            given[spec.encoder_key] = _given(spec, texts, sources, cache, progress, rows, n_input)
    resolved = {
        spec: replace(spec, pooling=check_pooling(spec, encoders[spec.encoder_key], f"space {spec.label()}: "))
        for spec in specs
        if spec.kind == "model"
    }  # every model space with the pooling it runs: checked before any forward pass
    pooled: dict[tuple, dict[str, np.ndarray]] = {}
    for key, enc in encoders.items():
        asked = sorted({s.pooling for s in resolved.values() if s.encoder_key == key}, key=lambda p: p.name)
        stack = [layer_pooling(k) for k in range(enc.num_layers + 1)] if layers else []
        bar = progress(f"embed {enc.name}") if progress else None
        pooled[key] = encode_many(
            enc, texts, list(dict.fromkeys([*asked, *stack])), config=config, progress=bar, cache=cache
        )
    max_length = (config or EmbedConfig()).max_length
    out = []
    for spec in specs:
        stack = None
        if spec.kind == "model":
            spec = resolved[spec]
            enc = encoders[spec.encoder_key]
            vectors = pooled[spec.encoder_key]
            raw, name, origin, warnings = vectors[spec.pooling.name], enc.name, None, []
            fingerprint = make_key("space", enc.fingerprint, spec.pooling.name, max_length)
            stack = [vectors[layer] for layer in layer_names(enc.num_layers)] if layers else None
        else:
            g = given[spec.encoder_key]
            raw, name, origin, warnings, fingerprint = g.raw, g.name, g.origin, list(g.warnings), g.fingerprint
        bar = progress(f"calibrate {spec.calibrate}") if progress and spec.calibrate == "flow" else None
        calibrated, cal_warnings = calibrate_space(spec, raw, bar)
        out.append(SpaceVectors(spec, name, raw, calibrated, stack, [*warnings, *cal_warnings], fingerprint, origin))
    return out
