"""A fix made ready for a search: ``fit_variant`` is the only place a fix meets data. It is given the queries' and
the documents' vectors, never the task, so no relevance judgement can reach a fit."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from isoscope.errors import InputError
from isoscope.retrieval.variants import VariantSpec

if TYPE_CHECKING:
    from isoscope.calibrate import Calibrator, EpochProgressFn


@dataclass
class FittedVariant:
    """A variant made ready: the transformed queries and documents, the calibrator, the CSLS penalty."""

    spec: VariantSpec
    queries: np.ndarray  # (q, k)
    documents: np.ndarray  # (n, k)
    calibrator: Calibrator | None = None
    penalty: np.ndarray | None = None  # (n,) CSLS
    n_fit: int = 0
    fit_seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)


def fit_variant(
    spec: VariantSpec,
    queries: np.ndarray,
    documents: np.ndarray,
    *,
    flow: Calibrator | None = None,
    progress: EpochProgressFn | None = None,
) -> FittedVariant:
    """Fit ``spec`` without labels on the documents (or the queries, ``@queries``) and apply it to both; compute a
    CSLS penalty from the documents. ``flow``: the unfitted flow every ``flow`` step copies."""
    if spec.csls_k is not None:
        from isoscope.retrieval.search import csls_penalty

        start = time.perf_counter()
        if spec.csls_k > len(documents) - 1:
            raise InputError(f"csls:{spec.csls_k} needs more than {spec.csls_k} documents; got {len(documents)}")
        penalty = csls_penalty(documents, spec.csls_k)
        return FittedVariant(spec, queries, documents, penalty=penalty, fit_seconds=time.perf_counter() - start)
    if spec.method is None:
        return FittedVariant(spec, queries, documents)
    from isoscope.calibrate import make_calibrator  # the flow's torch: imported only when a method is fitted
    from isoscope.calibrate.fitting import fit_size_warning, fit_timed

    fit = documents if spec.fit_on == "documents" else queries
    calibrator = make_calibrator(spec.method, flow=flow)  # type: ignore[arg-type]
    seconds = fit_timed(calibrator, fit, progress)
    warning = fit_size_warning(calibrator, len(fit), fit.shape[1])
    if warning and spec.fit_on == "queries":
        warning = f"{spec}: {warning}"
    return FittedVariant(
        spec,
        np.asarray(calibrator.transform(queries), np.float32),
        np.asarray(calibrator.transform(documents), np.float32),
        calibrator=calibrator,
        n_fit=len(fit),
        fit_seconds=seconds,
        warnings=[warning] if warning else [],
    )
