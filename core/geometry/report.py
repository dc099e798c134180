"""The geometry report of a corpus or a pairs file: what ``isoscope geometry`` prints, as one library call.

report = analyse_geometry(encoder, load_input("pairs.csv"), GeometryConfig(calibrate="whitening", layers=True))
report.to_dict()  # the keys of ``isoscope geometry --json``
report = analyse_geometry(table.vectors, texts, GeometryConfig(calibrate="whitening", frequency="none"), name=table.name)

- ``raw`` / ``calibrated``: avg cosine, IsoScore, partition isotropy, effective rank, ... of the sentence
  vectors (``isoscope.geometry.metrics.all_metrics``); the calibrator is fitted on those sentence vectors;
- ``layers`` (``layers=True``): the raw metrics of mean-pooled ``layer:0..L`` (``per_layer_metrics``);
- ``frequency``: BERT-flow Table 1 (norm and kNN distance of token vectors by frequency-rank bucket,
  ``isoscope.geometry.frequency``), raw and with a calibrator of the same method fitted on the token vectors;
- ``overlap`` and ``sts`` (pairs only): Spearman of gold, raw cosine and calibrated cosine with the edit
  distance (``isoscope.geometry.lexical``), and of the cosines with the gold scores when there are scores.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from isoscope.errors import InputError
from isoscope.geometry.frequency import (
    DEFAULT_EDGES,
    FrequencyConfig,
    FrequencyResult,
    bucket_labels,
    is_calibrated,
    parse_edges,
)
from isoscope.geometry.options import (
    CONTEXTUAL_MODES,
    EDIT_LEVELS,
    FREQUENCY_CHOICES,
    SPACES,
    ContextualMode,
    EditLevel,
    FrequencyChoice,
)

if TYPE_CHECKING:
    from isoscope.cache import ArrayCache
    from isoscope.data import Pairs, TextInput
    from isoscope.encode.embed import EmbedConfig
    from isoscope.encode.models import Encoder
    from isoscope.encode.pooling import PoolingSpec
    from isoscope.sources import SpaceVectors

log = logging.getLogger(__name__)

__all__ = [
    "FREQUENCY_CHOICES",
    "MIN_TEXTS",
    "GeometryConfig",
    "GeometryReport",
    "StageProgress",
    "analyse_geometry",
    "check_input",
]

MIN_TEXTS = 3
# stage -> progress callback: "embed" and "tokens" get (done, total) texts, "fit METHOD" (epoch, epochs, bits/dim)
StageProgress = Callable[[str], Callable[..., None]]


@dataclass
class GeometryConfig:
    """What to measure; ``validate()`` checks it and returns it with ``rank_edges`` parsed."""

    pooling: PoolingSpec | None = None  # None: the model's default (isoscope.encode.pooling.default_pooling)
    calibrate: str = "none"  # a method string (isoscope.calibrate.methods), or none
    layers: bool = False  # also the raw metrics of mean-pooled layer:0..L
    frequency: FrequencyChoice = "both"  # token spaces of the frequency table, or none
    knn_k: int = 3  # neighbours for the kNN distance of token vectors
    rank_edges: str | Sequence[int] = DEFAULT_EDGES  # frequency-rank bucket edges, e.g. "0,100,500,5000"
    token_layer: int = -1  # hidden state of the contextual token vectors
    token_mode: ContextualMode = "occurrence"  # contextual points: sampled occurrences, or one mean per token id
    per_token: int = 5  # occurrence mode: occurrences sampled per token
    token_fit_max: int = 10_000  # the token-level calibrator is fitted on at most this many points
    edit_level: EditLevel = "word"  # edit distance over words or characters
    seed: int = 0  # seed of sampled pairs, occurrences and fit subsets

    @property
    def calibrated(self) -> bool:
        return is_calibrated(self.calibrate)

    def validate(self, name: Callable[[str], str] = str) -> GeometryConfig:
        """InputError that says what to fix (before any model is loaded); the config with parsed edges.

        ``name(field)`` is how messages name a field (the command line passes its option, ``--knn-k``).
        """
        if self.calibrated:
            from isoscope.calibrate import make_calibrator

            make_calibrator(self.calibrate)  # InputError listing the valid methods
        for field_name, least in (("knn_k", 1), ("per_token", 1), ("token_fit_max", 2)):
            if (value := getattr(self, field_name)) < least:
                raise InputError(f"{name(field_name)} must be >= {least}; got {value}")
        for field_name, value, choices in (
            ("frequency", self.frequency, FREQUENCY_CHOICES),
            ("token_mode", self.token_mode, CONTEXTUAL_MODES),
            ("edit_level", self.edit_level, EDIT_LEVELS),
        ):
            if value not in choices:
                raise InputError(f"unknown {name(field_name)} '{value}'; choose one of {', '.join(choices)}")
        return dataclasses.replace(self, rank_edges=parse_edges(self.rank_edges))

    @property
    def spaces(self) -> tuple[str, ...]:
        """Token spaces of the frequency table (none when ``frequency`` is none)."""
        return () if self.frequency == "none" else SPACES if self.frequency == "both" else (self.frequency,)

    def frequency_config(self) -> FrequencyConfig:
        return FrequencyConfig(
            k=self.knn_k,
            edges=tuple(parse_edges(self.rank_edges)),
            layer=self.token_layer,
            mode=self.token_mode,
            per_token=self.per_token,
            fit_max=self.token_fit_max,
            seed=self.seed,
        )


@dataclass
class GeometryReport:
    """Everything ``analyse_geometry`` measured; ``to_dict()`` is the JSON of ``isoscope geometry``."""

    input: str  # the file's name
    kind: Literal["pairs", "corpus"]
    n_texts: int
    model: str  # the encoder's name, or the vectors' (FILE:COLUMN, openai:NAME)
    pooling: str | None  # None for vectors computed elsewhere
    calibrate: str | None  # the method, or None when uncalibrated
    raw: dict[str, float]
    calibrated: dict[str, float] | None = None  # the metrics after calibration, and fit_seconds
    layers: list[dict[str, float]] | None = None  # metrics of layer:0..L, in order
    frequency: FrequencyResult | None = None
    frequency_texts: int = 0  # texts the token counts and contextual vectors came from
    overlap: dict[str, Any] | None = None  # pairs only: isoscope.geometry.lexical.overlap_analysis's summary
    sts: dict[str, float] | None = None  # pairs only: Spearman x100 of each cosine with the gold (empty: no gold)
    warnings: list[str] = field(default_factory=list)
    vectors: dict[str, Any] | None = None  # a vectors file's provenance (VectorOrigin.to_dict())

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "input": self.input,
            "kind": self.kind,
            "n_texts": self.n_texts,
            "model": self.model,
            "pooling": self.pooling,
            "calibrate": self.calibrate,
            "raw": self.raw,
        }
        if self.vectors is not None:
            out["vectors"] = self.vectors
        if self.calibrated is not None:
            out["calibrated"] = self.calibrated
        if self.layers is not None:
            out["layers"] = [{"layer": k, **m} for k, m in enumerate(self.layers)]
        if self.frequency is not None:
            out["frequency"] = _frequency_dict(self.frequency, self.frequency_texts)
        if self.overlap is not None:
            out["overlap"], out["sts"] = self.overlap, self.sts or {}
        out["warnings"] = list(self.warnings)
        return out


def check_input(texts: TextInput) -> None:
    """InputError unless there are at least ``MIN_TEXTS`` texts (metrics need them)."""
    if len(texts) < MIN_TEXTS:
        raise InputError(f"{texts.name}: {len(texts)} text(s); geometry needs at least {MIN_TEXTS}")


def analyse_geometry(
    source: Encoder | SpaceVectors | np.ndarray,
    texts: TextInput,
    config: GeometryConfig | None = None,
    *,
    embed_config: EmbedConfig | None = None,
    cache: ArrayCache | None = None,
    progress: StageProgress | None = None,
    frequency_texts: TextInput | None = None,
    name: str = "vectors",
    origin: dict[str, Any] | None = None,
) -> GeometryReport:
    """The geometry of ``texts`` (``isoscope.data.load_input``) in a space (module docs).

    ``source`` is the space: an ``Encoder`` embeds the texts (``embed_config``, ``cache``: the embedding cache;
    ``frequency_texts`` give the token counts and contextual vectors, default ``texts``); or their vectors
    computed elsewhere, one row per text: ``SpaceVectors`` (``isoscope.sources.space_vectors``: a vectors file,
    an endpoint) or an (n, d) array that ``name`` stands for, ``origin`` (e.g. ``VectorOrigin.to_dict()``) reported
    as ``vectors``. Vectors give the same report without what needs a model's layers or token vectors (``layers``
    and ``frequency`` must be off: InputError otherwise). ``progress(stage)`` returns the callback of one stage
    (``StageProgress``).
    """
    if isinstance(source, np.ndarray) or hasattr(source, "raw"):
        return _of_vectors(source, texts, config, name=name, progress=progress, origin=origin)
    from isoscope.encode.embed import encode_many
    from isoscope.encode.pooling import layer_pooling, resolve_pooling
    from isoscope.geometry.metrics import per_layer_metrics

    encoder = source
    config = (config or GeometryConfig()).validate()
    check_input(texts)
    stage = progress or (lambda _: None)  # type: ignore[return-value]
    pooling = resolve_pooling(config.pooling, encoder)
    layers = [layer_pooling(k) for k in range(encoder.num_layers + 1)] if config.layers else []
    poolings = [pooling, *(layer for layer in layers if layer != pooling)]
    vectors = encode_many(encoder, texts.texts, poolings, config=embed_config, progress=stage("embed"), cache=cache)
    X = vectors[pooling.name]  # (n, d)
    report = _measure(X, texts, config, stage, encoder.name, pooling.name)
    if config.layers:
        report.layers = per_layer_metrics([vectors[layer.name] for layer in layers], seed=config.seed)
    if config.spaces:
        freq = frequency_texts if frequency_texts is not None else texts
        if frequency_texts is not None:
            report.warnings += frequency_texts.warnings
        report.frequency = _frequency(encoder, freq.texts, config, embed_config, stage("tokens"))
        report.frequency_texts = len(freq)
    return report


def _of_vectors(
    source: SpaceVectors | np.ndarray,
    texts: TextInput,
    config: GeometryConfig | None,
    *,
    name: str,
    progress: StageProgress | None,
    origin: dict[str, Any] | None,
) -> GeometryReport:
    """``analyse_geometry`` of vectors computed elsewhere."""
    pooling = None
    if not isinstance(source, np.ndarray):  # SpaceVectors: its name, pooling and file say what it is
        name, vectors = source.model_name, source.raw
        pooling = source.spec.pooling.name if source.spec.pooling is not None else None
        origin = source.origin.to_dict() if source.origin is not None else origin
    else:
        vectors = source
    config = (config or GeometryConfig()).validate()
    if config.layers:
        raise InputError(f"{name}: the per-layer metrics need a model's layers; a vectors space has none")
    if config.spaces:
        raise InputError(f"{name}: the frequency table needs a model's token vectors; set the frequency to none")
    if len(vectors) != len(texts):
        raise ValueError(f"{len(vectors)} vectors for {len(texts)} texts")
    if len(vectors) < MIN_TEXTS:
        raise InputError(f"{texts.name or name}: {len(vectors)} vector(s); geometry needs at least {MIN_TEXTS}")
    report = _measure(np.asarray(vectors), texts, config, progress or (lambda _: None), name, pooling)  # type: ignore[arg-type]
    report.vectors = origin
    return report


def _measure(
    X: np.ndarray, texts: TextInput, config: GeometryConfig, stage: StageProgress, model: str, pooling: str | None
) -> GeometryReport:
    """The sentence-level parts of the report: raw and calibrated metrics, and for pairs the overlap and STS."""
    from isoscope.geometry.metrics import all_metrics

    X = X.astype(np.float64)  # (n, d)
    report = GeometryReport(
        input=texts.name,
        kind=texts.kind,
        n_texts=len(X),
        model=model,
        pooling=pooling,
        calibrate=config.calibrate if config.calibrated else None,
        raw=all_metrics(X, seed=config.seed),
    )
    Z = None
    if config.calibrated:
        Z, seconds = _fit_transform(config.calibrate, X, stage(f"fit {config.calibrate}"))  # (n, k)
        report.calibrated = {**all_metrics(Z, seed=config.seed), "fit_seconds": seconds}
    if texts.pairs is not None:
        report.overlap, report.sts = _overlap(texts.pairs, X, Z, config.edit_level)
    report.warnings = list(texts.warnings)
    return report


def _fit_transform(method: str, X: np.ndarray, progress: Any = None) -> tuple[np.ndarray, float]:
    """Fit a fresh calibrator of ``method`` on ``X`` and transform ``X``; returns (Z, fit seconds)."""
    from isoscope.calibrate import make_calibrator
    from isoscope.calibrate.fitting import fit_timed

    cal = make_calibrator(method)
    seconds = fit_timed(cal, X, progress)
    return np.asarray(cal.transform(X), np.float64), seconds


def _frequency(
    encoder: Encoder, texts: list[str], config: GeometryConfig, embed_config: Any, progress: Any
) -> FrequencyResult:
    from isoscope.geometry.frequency import frequency_analysis

    calibrator = config.calibrate if config.calibrated else None
    fcfg = config.frequency_config()
    return frequency_analysis(
        encoder,
        texts,
        spaces=config.spaces,
        calibrator=calibrator,
        config=fcfg,
        embed_config=embed_config,
        progress=progress,
    )


def _frequency_dict(res: FrequencyResult, n_texts: int) -> dict[str, Any]:
    fcfg = res.config
    return {
        "n_texts": n_texts,
        "n_distinct_tokens": len(res.counts),
        "n_token_occurrences": int(res.counts["count"].sum()),
        "k": fcfg.k,
        "edges": list(fcfg.edges),
        "labels": bucket_labels(fcfg.edges),
        "token_layer": fcfg.layer,
        "token_mode": fcfg.mode,
        "per_token": fcfg.per_token,
        "token_fit_max": fcfg.fit_max,
        "buckets": res.buckets.to_dict("records"),
        "correlations": res.correlations.to_dict("records"),
    }


def _overlap(pairs: Pairs, X: np.ndarray, Z: np.ndarray | None, level: EditLevel) -> tuple[dict, dict]:
    """(the edit-distance summary, Spearman x100 of each cosine with the gold scores; {} without scores)."""
    from isoscope.geometry.lexical import overlap_analysis
    from isoscope.geometry.pairs import correlations, cosine_pairs

    n = len(pairs)
    sims: dict[str, np.ndarray | None] = {"gold": pairs.scores, "raw": cosine_pairs(X[:n], X[n:])}
    if Z is not None:
        sims["calibrated"] = cosine_pairs(Z[:n], Z[n:])
    summary, _ = overlap_analysis(pairs.sentence1, pairs.sentence2, sims, level=level)
    sts: dict[str, float] = {}
    if pairs.scores is not None:
        sts = {name: correlations(v, pairs.scores)["spearman"] for name, v in sims.items() if name != "gold"}
    return summary, sts
