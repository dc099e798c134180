"""STS with a calibrator: fit it without labels, score the pairs before and after (like sentence-transformers'
``EmbeddingSimilarityEvaluator``, with the calibration step made explicit).

result = calibrated_sts(emb1, emb2, gold, make_calibrator("whitening"))  # CalibratedSTS: Spearman x100 raw, calibrated
report = sts_report(encoder, load_pairs("stsb-en-test.csv"), make_calibrator("flow"))  # STSReport; .to_dict(): `sts`
report = sts_report(space_vectors(spec, pairs.texts), pairs, make_calibrator("whitening"))  # any space's vectors
saved = fit_and_save(encoder, load_corpus("corpus.txt"), make_calibrator("flow"), "calibrators/flow")  # FitReport
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from isoscope.calibrate import Calibrator, EpochProgressFn, check_array
from isoscope.calibrate.fitting import fit_size_warning, fit_timed
from isoscope.errors import InputError
from isoscope.evaluate.similarity import sts_scores

if TYPE_CHECKING:
    from isoscope.cache import ArrayCache
    from isoscope.data import Corpus, Pairs, TextInput
    from isoscope.encode.embed import EmbedConfig
    from isoscope.encode.models import Encoder
    from isoscope.encode.pooling import Pooling
    from isoscope.sources import SpaceVectors

MIN_FIT_TEXTS = 2
# stage -> progress callback: "embed" and "embed corpus" get (done, total) texts, "fit" (epoch, epochs, bits/dim)
StageProgress = Callable[[str], Callable[..., None] | None]


def avg_cosine_or_nan(X: np.ndarray, n_pairs: int = 10_000, seed: int = 0) -> float:
    """Mean cosine of random pairs (isoscope.geometry.metrics.avg_cosine); NaN when undefined (e.g. an all-zero row)."""
    from isoscope.geometry.metrics import avg_cosine

    try:
        return avg_cosine(X, n_pairs=n_pairs, seed=seed)
    except InputError:
        return float("nan")


@dataclass
class CalibratedSTS:
    """What ``calibrated_sts`` measured: STS of the pairs before and after a calibrator fitted without labels.

    Correlations are x100; ``bits_per_dim`` is None except for a flow; the average cosines are over random pairs
    of the evaluated sentences (seeded), before and after calibration."""

    method: str
    spearman: float  # calibrated
    pearson: float
    fit_seconds: float
    bits_per_dim: float | None
    avg_cosine_before: float
    avg_cosine_after: float
    n_fit: int  # vectors the calibrator was fitted on
    diverged: bool  # a flow that stopped at its last good epoch
    raw_spearman: float
    raw_pearson: float
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def calibrated_sts(
    emb1: np.ndarray,
    emb2: np.ndarray,
    gold: np.ndarray,
    calibrator: Calibrator,
    *,
    fit_vectors: np.ndarray | None = None,
    progress: EpochProgressFn | None = None,
    seed: int = 0,
) -> CalibratedSTS:
    """Fit ``calibrator`` (on ``fit_vectors``, default all sentences of the pairs) and score the pairs."""
    emb1, emb2 = check_array(emb1, "emb1"), check_array(emb2, "emb2")
    if emb1.shape != emb2.shape:
        raise InputError(f"emb1 and emb2 must have the same shape; got {emb1.shape} and {emb2.shape}")
    both = np.concatenate([emb1, emb2])  # (2n, d)
    fit_on = both if fit_vectors is None else check_array(fit_vectors, "fit_vectors", min_rows=2)
    fit_seconds = fit_timed(calibrator, fit_on, progress)
    n = len(emb1)
    out = calibrator.transform(both)  # (2n, k)
    raw = sts_scores(emb1, emb2, gold)
    cal = sts_scores(out[:n], out[n:], gold)
    return CalibratedSTS(
        method=calibrator.method,
        spearman=cal["spearman"],
        pearson=cal["pearson"],
        fit_seconds=fit_seconds,
        bits_per_dim=getattr(calibrator, "bits_per_dim_", None),
        avg_cosine_before=avg_cosine_or_nan(both, seed=seed),
        avg_cosine_after=avg_cosine_or_nan(out, seed=seed),
        n_fit=len(fit_on),
        diverged=bool(getattr(calibrator, "diverged_", False)),
        raw_spearman=raw["spearman"],
        raw_pearson=raw["pearson"],
        warnings=[w for w in [fit_size_warning(calibrator, len(fit_on), both.shape[1])] if w],
    )


def check_scored_pairs(pairs: Pairs) -> None:
    """InputError unless the pairs have gold scores and a correlation with them is defined (3 pairs, 2 scores)."""
    if pairs.scores is None:
        raise InputError(f"{pairs.name}: no score column; sts needs gold scores (third column or 'score')")
    if len(pairs) < 3 or np.ptp(pairs.scores) == 0:  # a correlation would be undefined (null)
        raise InputError(f"{pairs.name}: a correlation needs at least 3 pairs whose scores differ, got {len(pairs)}")


def check_fit_corpus(corpus: Corpus) -> None:
    """InputError unless the corpus has enough texts to fit a calibrator on."""
    if len(corpus) < MIN_FIT_TEXTS:
        raise InputError(f"{corpus.name}: need at least {MIN_FIT_TEXTS} texts to fit a calibrator")


@dataclass
class STSReport:
    """STS of scored pairs, raw and calibrated (``sts_report``); ``to_dict()`` is the JSON of
    ``isoscope sts``."""

    n_pairs: int
    model: str  # the encoder's name, or the vectors' (FILE:COLUMN, openai:NAME)
    pooling: str | None  # None for vectors computed elsewhere
    calibrated: CalibratedSTS  # its raw_spearman / raw_pearson are the uncalibrated scores
    fit_on: str  # "target" (the pairs' sentences) or the fit corpus's name
    warnings: list[str] = field(default_factory=list)  # the pairs', the fit corpus's and the fit's

    @property
    def spearman(self) -> float:
        """Spearman x100 of the raw cosines."""
        return self.calibrated.raw_spearman

    @property
    def pearson(self) -> float:
        """Pearson x100 of the raw cosines."""
        return self.calibrated.raw_pearson

    def to_dict(self) -> dict[str, Any]:
        cal = self.calibrated
        return {
            "spearman": self.spearman,
            "pearson": self.pearson,
            "n_pairs": self.n_pairs,
            "model": self.model,
            "pooling": self.pooling,
            "calibrated": {
                "method": cal.method,
                "spearman": cal.spearman,
                "pearson": cal.pearson,
                "fit_seconds": cal.fit_seconds,
                "bits_per_dim": cal.bits_per_dim,
                "avg_cosine_before": cal.avg_cosine_before,
                "avg_cosine_after": cal.avg_cosine_after,
                "fit_on": self.fit_on,
                "n_fit": cal.n_fit,
                "diverged": cal.diverged,
            },
            "warnings": list(self.warnings),
        }


def sts_report(
    source: Encoder | SpaceVectors | np.ndarray,
    pairs: Pairs,
    calibrator: Calibrator,
    *,
    fit_corpus: Corpus | None = None,
    fit_vectors: np.ndarray | None = None,
    fit_on: tuple[str, list[str]] | None = None,
    pooling: Pooling = None,
    embed_config: EmbedConfig | None = None,
    cache: ArrayCache | None = None,
    progress: StageProgress | None = None,
    seed: int = 0,
    model: str = "vectors",
) -> STSReport:
    """Score ``pairs`` in a space before and after ``calibrator``, fitted without labels on the pairs' sentences
    ("target") or on a corpus (``STSReport``: ``to_dict()`` is what ``isoscope sts`` prints).

    ``source`` is the space: an ``Encoder`` embeds the pairs and ``fit_corpus`` (with ``pooling``,
    ``embed_config``, ``cache``); or the pairs' vectors computed elsewhere, sentence1's rows then sentence2's
    (``Pairs.texts`` order): ``SpaceVectors`` of ``pairs.texts`` (``isoscope.sources.space_vectors``, which names
    the model and pooling) or a (2n, d) array named ``model``; then ``fit_vectors`` (m, d) are what to fit on
    (default: the pairs' sentences) and ``fit_on`` their (name, warnings)."""
    check_scored_pairs(pairs)
    if fit_corpus is not None:
        check_fit_corpus(fit_corpus)
    stage = progress or (lambda _: None)
    pooling_name: str | None = None
    if isinstance(source, np.ndarray):
        vectors = source  # (2n, d)
    elif hasattr(source, "raw"):  # SpaceVectors
        vectors, model = source.raw, source.model_name
        pooling_name = source.spec.pooling.name if source.spec.pooling is not None else None
    else:
        from isoscope.encode.embed import encode
        from isoscope.encode.pooling import resolve_pooling

        spec = resolve_pooling(pooling, source)
        vectors = encode(source, pairs.texts, spec, config=embed_config, progress=stage("embed"), cache=cache)
        if fit_corpus is not None:
            fit_vectors = encode(
                source, fit_corpus.texts, spec, config=embed_config, progress=stage("embed corpus"), cache=cache
            )
        model, pooling_name = source.name, spec.name
    if fit_corpus is not None:
        fit_on = (fit_corpus.name, fit_corpus.warnings)
    n = len(pairs)
    a, b = vectors[:n], vectors[n:]
    if a.shape != b.shape or len(a) != n:
        raise InputError(
            f"{model}: the two sides of the pairs have vectors of shape {a.shape} and {b.shape} for {n} pairs; "
            "both must come from one space (the same number of dimensions)"
        )
    if fit_vectors is not None and fit_vectors.shape[1] != a.shape[1]:
        raise InputError(
            f"{model}: the fit vectors have {fit_vectors.shape[1]} dimensions and the pairs {a.shape[1]}; "
            "fit on vectors of the same space"
        )
    cal = calibrated_sts(a, b, pairs.scores, calibrator, fit_vectors=fit_vectors, progress=stage("fit"), seed=seed)
    return STSReport(
        n_pairs=n,
        model=model,
        pooling=pooling_name,
        calibrated=cal,
        fit_on="target" if fit_on is None else fit_on[0],
        warnings=[*pairs.warnings, *(fit_on[1] if fit_on is not None else []), *cal.warnings],
    )


@dataclass
class FitReport:
    """A calibrator fitted and saved (``fit_and_save``); ``to_dict()`` is the JSON of
    ``isoscope calibrate``."""

    method: str
    out: str  # the folder it was saved in
    n_texts: int  # the vectors it was fitted on
    dim: int
    fit_seconds: float
    bits_per_dim: float | None  # a flow's, else None
    diverged: bool
    avg_cosine_before: float  # over random pairs of the fit vectors (seeded)
    avg_cosine_after: float
    model: str | None
    pooling: str | None
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def fit_and_save(
    source: Encoder | np.ndarray,
    corpus: Corpus | TextInput,
    calibrator: Calibrator,
    out: str | Path,
    *,
    space: dict[str, Any] | None = None,
    pooling: Pooling = None,
    embed_config: EmbedConfig | None = None,
    cache: ArrayCache | None = None,
    progress: StageProgress | None = None,
    seed: int = 0,
) -> FitReport:
    """Fit ``calibrator`` on the vectors of ``corpus`` in a space and save it to the folder ``out`` (safetensors +
    JSON, with what the vectors came from and the corpus): ``FitReport``, whose ``to_dict()`` ``isoscope calibrate``
    prints.

    ``source`` is the space: an ``Encoder`` embeds ``corpus`` (``pooling``, ``embed_config``, ``cache``; its
    model, fingerprint, pooling and max length are saved); or the corpus's vectors computed elsewhere, an (n, d)
    array, with ``space`` what they came from (``model``, ``model_fingerprint``, ``pooling``, a vectors file's
    provenance), saved as it is (the corpus is named by ``space["model"]`` when it has no name)."""
    stage = progress or (lambda _: None)
    if isinstance(source, np.ndarray):
        if space is None:
            raise ValueError("vectors computed elsewhere need space= (what they came from)")
        vectors, name = source, corpus.name or space["model"]
    else:
        from isoscope.encode.embed import EmbedConfig, encode
        from isoscope.encode.pooling import resolve_pooling

        check_fit_corpus(corpus)
        spec = resolve_pooling(pooling, source)
        embed_config = embed_config or EmbedConfig()
        vectors = encode(
            source, corpus.texts, spec, config=embed_config, progress=stage("embed"), cache=cache
        )  # (n, d)
        space = {"model": source.name, "model_fingerprint": source.fingerprint, "pooling": spec.name}
        space["max_length"] = embed_config.max_length
        name = corpus.name
    warnings = corpus.warnings
    if len(vectors) < MIN_FIT_TEXTS:
        raise InputError(f"{name}: need at least {MIN_FIT_TEXTS} texts to fit a calibrator")
    out = Path(out)
    fit_seconds = fit_timed(calibrator, vectors, stage("fit"))
    metadata = {**space, "fit_on": name, "n_fit": len(vectors), "fit_seconds": fit_seconds}
    warnings = [*warnings, *[w for w in [fit_size_warning(calibrator, len(vectors), vectors.shape[1])] if w]]
    from isoscope.data.outputs import CALIBRATOR_FOLDER, atomic_folder

    with atomic_folder(out, kind=CALIBRATOR_FOLDER) as new:  # both files, then one rename: never a torn pair
        calibrator.save(new, metadata)
    after = calibrator.transform(vectors)  # (n, k)
    return FitReport(
        method=calibrator.method,
        out=str(out),
        n_texts=len(vectors),
        dim=int(vectors.shape[1]),
        fit_seconds=fit_seconds,
        bits_per_dim=getattr(calibrator, "bits_per_dim_", None),
        diverged=bool(getattr(calibrator, "diverged_", False)),
        avg_cosine_before=avg_cosine_or_nan(vectors, seed=seed),
        avg_cosine_after=avg_cosine_or_nan(after, seed=seed),
        model=space.get("model"),
        pooling=space.get("pooling"),
        warnings=warnings,
    )
