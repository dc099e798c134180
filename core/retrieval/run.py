"""A retrieval run: every fix fitted without labels, every query searched, scored and compared with raw.

result = retrieval_report(encoder, load_beir("scifact"), config=RetrievalConfig(variants=("raw", "whitening:64")))
result.table()             # one row per variant: the metrics, nDCG@10's change vs raw with its interval and test
result.to_dict()           # what `isoscope retrieval --json` prints
evaluate_retrieval(Q, D, task)   # the same from vectors (q, d) and (n, d) already computed

Orchestration only: embedding is ``embedding.embed_side``, fixes ``variants.fit_variant``, search
``search.search``, metrics ``metrics.per_query`` (pytrec_eval), tests ``stats.paired_test``, geometry
``isoscope.geometry.metrics`` and ``search.document_hubness``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from isoscope.data.limits import check_count
from isoscope.errors import InputError
from isoscope.retrieval.fixes import FittedVariant, fit_variant
from isoscope.retrieval.metrics import per_query
from isoscope.retrieval.options import DEPTH, HEADLINE, METRICS
from isoscope.retrieval.search import Ranking, document_hubness, search
from isoscope.retrieval.stats import RESAMPLES, PairedTest, paired_test
from isoscope.retrieval.variants import default_variants, parse_variants

if TYPE_CHECKING:
    from isoscope.cache import ArrayCache
    from isoscope.calibrate import Calibrator
    from isoscope.encode.embed import EmbedConfig
    from isoscope.encode.models import Encoder
    from isoscope.encode.pooling import Pooling
    from isoscope.retrieval.task import RetrievalTask

# stage -> progress callback: "embed queries" / "embed documents" (done, total texts), "fit" (epoch, epochs,
# bits/dim of a flow), "variants" (done, total variants)
StageProgress = Callable[[str], Callable[..., None] | None]
GEOMETRY = ("avg_cosine", "isoscore", "hubness_skew")


@dataclass(frozen=True)
class RetrievalConfig:
    """What a run compares: ``variants`` (``isoscope.retrieval.variants``; None: ``default_variants``), the search
    depth, the metrics tested against raw, the resamples and seed of the tests and intervals, and whether each
    variant's geometry (average cosine, IsoScore, hubness skew of the documents) is measured."""

    variants: tuple[str, ...] | None = None
    depth: int = DEPTH
    tested: tuple[str, ...] = (HEADLINE,)
    resamples: int = RESAMPLES
    seed: int = 0
    geometry: bool = True

    def __post_init__(self) -> None:
        check_count("resamples", self.resamples, "resamples")
        if self.depth < 10:
            raise InputError(f"the search depth must be at least 10 (nDCG@10 reads ten documents); got {self.depth}")
        unknown = [m for m in self.tested if m not in METRICS]
        if unknown:
            raise InputError(f"unknown metric '{unknown[0]}'; choose from {', '.join(METRICS)}")


@dataclass
class VariantResult:
    """One variant: per-query scores, its ranking, the geometry of its documents, its tests against raw."""

    variant: str
    fit_on: str | None  # "documents", "queries", or None (raw, csls)
    n_fit: int
    fit_seconds: float
    search_seconds: float
    scores: pd.DataFrame  # (q, METRICS), index: query id
    ranking: Ranking = field(repr=False)
    geometry: dict[str, float] = field(default_factory=dict)
    tests: dict[str, PairedTest] = field(default_factory=dict)  # metric -> the test against raw
    warnings: list[str] = field(default_factory=list)

    def means(self) -> dict[str, float]:
        return {m: float(self.scores[m].mean()) for m in METRICS}

    def to_dict(self) -> dict[str, Any]:
        return {
            "variant": self.variant,
            "fit_on": self.fit_on,
            "n_fit": self.n_fit,
            "fit_seconds": self.fit_seconds,
            "search_seconds": self.search_seconds,
            **self.means(),
            **self.geometry,
            "vs_raw": {m: t.to_dict() for m, t in self.tests.items()},
            "warnings": list(self.warnings),
        }


@dataclass
class RetrievalResult:
    """Every variant of one task (raw first); ``to_dict()`` is ``isoscope retrieval --json``."""

    task: RetrievalTask = field(repr=False)
    rows: list[VariantResult]
    model: str = ""
    pooling: str | None = None
    prompts: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    @property
    def raw(self) -> VariantResult:
        return self.rows[0]

    def row(self, variant: str) -> VariantResult:
        for r in self.rows:
            if r.variant == variant:
                return r
        raise KeyError(variant)

    def table(self, metric: str = HEADLINE) -> pd.DataFrame:
        """One row per variant: every metric's mean, ``metric``'s change vs raw (interval, p, verdict), geometry."""
        rows = []
        for r in self.rows:
            test = r.tests.get(metric)
            rows.append(
                {
                    "variant": r.variant,
                    **r.means(),
                    f"Δ {metric}": 0.0 if test is None else test.mean_difference,
                    "ci_low": np.nan if test is None else test.ci_low,
                    "ci_high": np.nan if test is None else test.ci_high,
                    "p_value": np.nan if test is None else test.p_value,
                    "verdict": "baseline" if r is self.raw else (test.verdict if test else ""),
                    **r.geometry,
                }
            )
        return pd.DataFrame(rows)

    def per_query_frame(self) -> pd.DataFrame:
        """Long table: one row per (variant, query) with every metric (``--per-query-out``)."""
        parts = []
        for r in self.rows:
            part = r.scores.reset_index()
            part.insert(0, "variant", r.variant)
            part.insert(2, "query", [self.task.queries[i] for i in range(self.task.n_queries)])
            parts.append(part)
        return pd.concat(parts, ignore_index=True)

    def changes(self, variant: str, metric: str = HEADLINE) -> pd.DataFrame:
        """Each query's ``metric`` under raw and under ``variant`` and the change, largest gain first (a gain: a
        change in the metric's direction, ``METRICS``)."""
        raw, fixed = self.raw.scores[metric], self.row(variant).scores[metric]
        frame = pd.DataFrame(
            {
                "query_id": self.task.query_ids,
                "query": self.task.queries,
                "raw": raw.to_numpy(),
                "fixed": fixed.to_numpy(),
            }
        )
        frame["change"] = frame["fixed"] - frame["raw"]
        sign = METRICS[metric].sign
        by_gain = lambda column: column * sign if column.name == "change" else column  # noqa: E731
        frame = frame.sort_values(["change", "query_id"], ascending=[False, True], key=by_gain, kind="stable")
        return frame.reset_index(drop=True)

    def top_documents(self, variant: str, query_id: str, k: int = 5) -> pd.DataFrame:
        """A query's first ``k`` documents under ``variant``: rank, id, score, grade (0: not judged relevant), text."""
        r = self.row(variant)
        q = self.task.query_ids.index(query_id)
        rows = r.ranking.ids[q, :k]
        grades = self.task.qrels.get(query_id, {})
        ids = [self.task.doc_ids[i] for i in rows]
        return pd.DataFrame(
            {
                "rank": np.arange(1, len(rows) + 1),
                "document_id": ids,
                "score": r.ranking.scores[q, :k],
                "grade": [grades.get(i, 0) for i in ids],
                "text": [self.task.documents[i] for i in rows],
            }
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "task": self.task.summary(),
            "model": self.model,
            "pooling": self.pooling,
            "prompts": dict(self.prompts),
            "metrics": list(METRICS),
            "depth": self.raw.ranking.depth,
            "variants": [r.to_dict() for r in self.rows],
            "warnings": list(self.warnings),
        }


def _geometry(fitted: FittedVariant, seed: int) -> dict[str, float]:
    """Average cosine and IsoScore of the documents in this variant's space, and the skew of their hubness."""
    from isoscope.geometry.metrics import avg_cosine, isoscore

    out = {}
    for name, measure in (("avg_cosine", lambda X: avg_cosine(X, seed=seed)), ("isoscore", isoscore)):
        try:
            out[name] = float(measure(fitted.documents))
        except InputError:  # undefined here (a zero row, no variance)
            out[name] = float("nan")
    out["hubness_skew"] = document_hubness(fitted.documents, penalty=fitted.penalty, seed=seed)
    return out


def evaluate_retrieval(
    queries: np.ndarray,
    documents: np.ndarray,
    task: RetrievalTask,
    *,
    config: RetrievalConfig | None = None,
    flow: Calibrator | None = None,
    progress: StageProgress | None = None,
) -> RetrievalResult:
    """Every variant of ``config`` on the queries' (q, d) and documents' (n, d) vectors (rows in the task's order):
    fitted without labels (``fit_variant`` sees vectors only), searched, scored by pytrec_eval against the task's
    qrels, tested against raw."""
    config = config or RetrievalConfig()
    if queries.shape[0] != task.n_queries or documents.shape[0] != task.n_documents:
        raise InputError(
            f"{task.name}: {task.n_queries} queries and {task.n_documents} documents, but vectors of shape "
            f"{queries.shape} and {documents.shape}"
        )
    names = config.variants or tuple(default_variants(task.n_queries, documents.shape[1]))
    specs = parse_variants(list(names))
    stage = progress or (lambda _s: None)
    step = stage("variants")
    rows: list[VariantResult] = []
    for i, spec in enumerate(specs):
        fitted = fit_variant(spec, queries, documents, flow=flow, progress=stage("fit") if spec.method else None)
        start = time.perf_counter()
        ranking = search(fitted.queries, fitted.documents, config.depth, penalty=fitted.penalty)
        seconds = time.perf_counter() - start
        scores = per_query(task, ranking)
        tests = {}
        if rows:
            raw = rows[0].scores
            tests = {
                m: paired_test(
                    scores[m],
                    raw[m],
                    metric=m,
                    resamples=config.resamples,
                    seed=config.seed,
                    higher_is_better=METRICS[m].higher_is_better,
                )
                for m in config.tested
            }
        rows.append(
            VariantResult(
                str(spec),
                spec.fit_on if spec.moves_vectors else None,
                fitted.n_fit,
                fitted.fit_seconds,
                seconds,
                scores,
                ranking,
                _geometry(fitted, config.seed) if config.geometry else {},
                tests,
                fitted.warnings,
            )
        )
        if step is not None:
            step(i + 1, len(specs))
    warnings = [*task.warnings, *(w for r in rows for w in r.warnings)]
    return RetrievalResult(task, rows, warnings=warnings)


def embed_task(
    encoder: Encoder,
    task: RetrievalTask,
    *,
    pooling: Pooling = None,
    prompts: tuple[str, str] = ("", ""),
    embed_config: EmbedConfig | None = None,
    cache: ArrayCache | None = None,
    progress: StageProgress | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The queries' (q, d) and documents' (n, d) vectors, each side with its prompt (``embedding.embed_side``)."""
    from isoscope.retrieval.embedding import embed_side

    stage = progress or (lambda _s: None)
    Q = embed_side(
        encoder, task.queries, pooling=pooling, prompt=prompts[0], config=embed_config, cache=cache,
        progress=stage("embed queries"),
    )  # fmt: skip
    D = embed_side(
        encoder, task.documents, pooling=pooling, prompt=prompts[1], config=embed_config, cache=cache,
        progress=stage("embed documents"),
    )  # fmt: skip
    return Q, D


def retrieval_report(
    encoder: Encoder,
    task: RetrievalTask,
    *,
    pooling: Pooling = None,
    prompts: tuple[str, str] = ("", ""),
    config: RetrievalConfig | None = None,
    embed_config: EmbedConfig | None = None,
    cache: ArrayCache | None = None,
    flow: Calibrator | None = None,
    progress: StageProgress | None = None,
) -> RetrievalResult:
    """Embed the task's queries and documents (each side with its prompt: ``embedding.side_prompt``) and evaluate
    every variant (``evaluate_retrieval``)."""
    from isoscope.encode.pooling import resolve_pooling

    spec = resolve_pooling(pooling, encoder)
    Q, D = embed_task(
        encoder, task, pooling=spec, prompts=prompts, embed_config=embed_config, cache=cache, progress=progress
    )
    result = evaluate_retrieval(Q, D, task, config=config, flow=flow, progress=progress)
    result.model, result.pooling = encoder.name, str(spec)
    result.prompts = {"query": prompts[0], "document": prompts[1]}
    return result
