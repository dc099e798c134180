"""Pooling explorer: STS Spearman of every pooling mode and every layer, raw and calibrated, from one pass.

For a model and a pairs file with gold scores, every pooling the model accepts
(``isoscope.encode.pooling.pooling_choices``: the model's own recipe, ``model``, first when it has one) and every ``layer:K`` (``K = 0..L``, mean over tokens) are computed
from ONE forward pass over the unique sentences (``isoscope.encode.embed.encode_many``). For each pooling and each
calibration (``none`` plus the requested methods, fitted on the pairs' own sentences, the "target" setting)
the table holds Spearman and Pearson (x100) of the pair cosines against the gold scores, and Wang & Isola's
alignment (over positive pairs: gold score > 4) and uniformity (over the unique sentences).

report = explore_poolings(load_encoder(), load_pairs(DEMO_PAIRS), calibrations=("whitening",))
report.table  # pooling, layer, calibration, spearman, pearson, alignment, uniformity
report.best  # the row with the highest Spearman

For encoder-decoder models ``cls`` and ``mean`` are the same vectors as ``enc_first`` and ``enc_mean``
(``isoscope.encode.pooling.pool`` treats them alike), so only the ``enc_*`` names are listed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import pandas as pd

from isoscope.cache import ArrayCache
from isoscope.calibrate import make_calibrator
from isoscope.data import Pairs
from isoscope.encode.embed import EmbedConfig, ProgressFn, encode_many
from isoscope.encode.models import Encoder
from isoscope.encode.pooling import PoolingSpec, pooling_choices, pooling_specs
from isoscope.errors import InputError
from isoscope.evaluate.similarity import sts_scores
from isoscope.geometry.metrics import alignment, uniformity

log = logging.getLogger(__name__)

__all__ = [
    "COLUMNS",
    "POSITIVE_THRESHOLD",
    "PoolingReport",
    "best_row",
    "check_calibrations",
    "check_pairs",
    "explore_poolings",
    "pooling_modes_for",
    "unique_index",
]

COLUMNS: tuple[str, ...] = ("pooling", "layer", "calibration", "spearman", "pearson", "alignment", "uniformity")
POSITIVE_THRESHOLD = 4.0  # gold score above which a pair is a positive pair (alignment)
RAW = "none"
MULTI_LAYER_POOLINGS: tuple[str, ...] = ("last2avg", "first_last_avg")


class FitTransform(Protocol):
    """What ``isoscope.calibrate.make_calibrator(method)`` returns (scikit-learn style)."""

    def fit(self, X: np.ndarray) -> FitTransform: ...

    def transform(self, X: np.ndarray) -> np.ndarray: ...


CalibratorFactory = Callable[[str], FitTransform]


@dataclass
class PoolingReport:
    """The tidy table (one row per pooling x calibration) and its best row (highest Spearman)."""

    table: pd.DataFrame
    best: dict[str, object]
    n_pairs: int
    n_positive: int
    n_sentences: int
    warnings: list[str] = field(default_factory=list)

    def records(self) -> list[dict[str, object]]:
        return _records(self.table)


def pooling_modes_for(encoder: Encoder) -> list[str]:
    """Every pooling name of this model (``isoscope.encode.pooling.pooling_choices``)."""
    return pooling_choices(encoder.num_layers, encoder.is_encoder_decoder, encoder.has_recipe)


def _layer_of(pooling: PoolingSpec, num_layers: int) -> int | None:
    """Which hidden state a pooling reads: K for layer:K, the last layer for single-layer poolings."""
    if pooling.layer is not None:
        return pooling.layer
    if pooling.kind in MULTI_LAYER_POOLINGS or pooling.needs_decoder:
        return None  # several layers, or the decoder
    return num_layers


def unique_index(texts: Sequence[str]) -> tuple[list[str], np.ndarray]:
    """Unique texts in first-seen order and, for each input text, its row among them. -> (u,), (n,)."""
    rows: dict[str, int] = {}
    index = np.fromiter((rows.setdefault(t, len(rows)) for t in texts), dtype=np.int64, count=len(texts))
    return list(rows), index


def _score_rows(X: np.ndarray, index: np.ndarray, n: int, gold: np.ndarray, positive: np.ndarray) -> dict[str, float]:
    """Spearman/Pearson of pair cosines, alignment on positive pairs, uniformity on unique sentences."""
    a, b = X[index[:n]], X[index[n:]]  # (n, d) each
    result = sts_scores(a, b, gold)
    ok = np.isfinite(X).all() and (np.linalg.norm(X, axis=1) > 0).all()
    result["alignment"] = alignment(a[positive], b[positive]) if ok and positive.any() else float("nan")
    result["uniformity"] = uniformity(X) if ok and len(X) >= 2 else float("nan")
    return result


def check_pairs(pairs: Pairs) -> None:
    """InputError unless the pairs have gold scores and at least 3 rows."""
    if pairs.scores is None:
        raise InputError(f"{pairs.name or 'pairs'}: no score column; the pooling explorer needs gold scores")
    if len(pairs) < 3:
        raise InputError(f"{pairs.name or 'pairs'}: need at least 3 scored pairs, got {len(pairs)}")


def check_calibrations(
    calibrations: str | Sequence[str] | None, calibrator_factory: CalibratorFactory | None = None
) -> tuple[list[str], CalibratorFactory | None]:
    """Method list starting with ``none`` (duplicates dropped) and the factory; ValueError for an unknown one.

    Every method is instantiated once here, so a typo fails before the (long) embedding pass.
    """
    given = [calibrations] if isinstance(calibrations, str) else list(calibrations or [])
    methods = [RAW] + [m for m in dict.fromkeys(str(g).strip() for g in given) if m and m.lower() != RAW]
    factory = calibrator_factory or (make_calibrator if len(methods) > 1 else None)
    for method in methods[1:]:
        factory(method)  # type: ignore[misc]
    return methods, factory


def fit_size_warnings(methods: Sequence[str], n_fit: int, d: int) -> list[str]:
    """``isoscope.calibrate.fitting.fit_size_warning`` of each method fitted on ``n_fit`` vectors (one per method;
    judged by the method string, whichever factory fits it)."""
    from isoscope.calibrate.fitting import fit_size_warning

    out = []
    for method in methods:
        try:
            warning = fit_size_warning(make_calibrator(method), n_fit, d)
        except InputError:  # a custom factory's own method name: no known size rule
            continue
        if warning:
            out.append(warning)
    return out


def explore_poolings(
    encoder: Encoder,
    pairs: Pairs,
    *,
    calibrations: str | Sequence[str] | None = None,
    config: EmbedConfig | None = None,
    progress: ProgressFn | None = None,
    cache: ArrayCache | None = None,
    calibrator_factory: CalibratorFactory | None = None,
) -> PoolingReport:
    """STS table of every pooling x layer x calibration; see the module docstring.

    ``calibrations``: method strings for ``isoscope.calibrate.make_calibrator`` (``none`` is always included);
    each is fitted per pooling on that pooling's vectors of the unique sentences. ``calibrator_factory``
    replaces ``make_calibrator`` (tests, custom calibrators).
    """
    check_pairs(pairs)
    methods, factory = check_calibrations(calibrations, calibrator_factory)

    n = len(pairs)
    texts, index = unique_index(pairs.texts)
    gold = np.asarray(pairs.scores, np.float64)  # (n,)
    positive = gold > POSITIVE_THRESHOLD  # (n,)
    modes = pooling_specs(encoder.num_layers, encoder.is_encoder_decoder, encoder.has_recipe)  # `model` first
    log.info("pooling explorer: %d pairs, %d unique sentences, %d poolings", n, len(texts), len(modes))
    vectors = encode_many(encoder, texts, modes, config=config, progress=progress, cache=cache)  # name -> (u, d)

    rows = []
    for mode in modes:
        X = vectors[mode.name].astype(np.float64)  # (u, d)
        for method in methods:
            Z = X if method == RAW else np.asarray(factory(method).fit(X).transform(X), np.float64)  # (u, d')
            rows.append(
                {
                    "pooling": mode.name,
                    "layer": _layer_of(mode, encoder.num_layers),
                    "calibration": method,
                    **_score_rows(Z, index, n, gold, positive),
                }
            )
    table = pd.DataFrame(rows, columns=list(COLUMNS))
    table["layer"] = table["layer"].astype("Int64")
    warnings = fit_size_warnings(methods[1:], len(texts), encoder.hidden_size)
    if not positive.any():
        warnings.append(f"no pair has a gold score above {POSITIVE_THRESHOLD:g}, so alignment is undefined")
    return PoolingReport(table, best_row(table), n, int(positive.sum()), len(texts), warnings)


def best_row(table: pd.DataFrame) -> dict[str, object]:
    """The row with the highest Spearman (first one on ties); empty dict when none is finite."""
    spearman = pd.to_numeric(table["spearman"], errors="coerce")
    if spearman.notna().sum() == 0:
        return {}
    return _records(table.loc[[spearman.idxmax()]])[0]


def _records(table: pd.DataFrame) -> list[dict[str, object]]:
    """Rows as plain dicts (None for missing values), ready for JSON."""
    out = []
    for rec in table.astype(object).to_dict(orient="records"):
        out.append(
            {
                k: (None if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)) else v)
                for k, v in rec.items()
            }
        )
    return out
