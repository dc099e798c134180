"""What a migration run found: ``MigrationResult`` and the values it is made of.

result.table()          # one row per searched system: old, new, each adapter in each direction (and partly re-embedded)
result.recommendation   # the method and direction chosen without labels, and the verdict in words
result.curve()          # kept share against fit pairs, each linear adapter and direction
result.plot()           # that curve, a plotly figure
result.losers(10)       # the queries the chosen adapter loses most on, with their texts
result.per_text()       # each held-out text's mapped-vs-true cosine and shared top 10 (where the map fails)
result.adapter()        # the chosen adapter, fitted on every fit pair; result.export(folder) takes it home
result.to_dict()        # what `isoscope migrate --json` prints

Plain values: the arrays and frames a run measured, nothing recomputed here but the tables drawn from them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from isoscope.errors import InputError
from isoscope.migrate.options import DIRECTIONS, NEW_TO_LEGACY
from isoscope.retrieval.options import METRICS

if TYPE_CHECKING:
    from pathlib import Path

    from isoscope.migrate.adapters import Adapter
    from isoscope.migrate.config import MigrationConfig
    from isoscope.migrate.measure import Kept, Share, Timing
    from isoscope.retrieval.stats import PairedTest
    from isoscope.retrieval.task import RetrievalTask


@dataclass(frozen=True)
class SideInfo:
    """One side of the migration: its name (model, file or endpoint) and dimensions."""

    name: str
    dims: int
    kind: str = ""  # model, endpoint, vectors ("" for arrays given to evaluate_migration)
    provenance: dict[str, Any] = field(default_factory=dict)  # a model's fingerprint, pooling, prompts; a file's digest

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "dims": self.dims, "kind": self.kind, "provenance": dict(self.provenance)}


@dataclass
class System:
    """One searched system over the task's queries: ``old`` (a), ``new`` (b), ``adapted`` (c: an adapter in a
    direction, every stored vector mapped) or ``partial`` (old->new with the fit documents keeping their true new
    vectors). ``tests`` compare it with ``against`` (new with old; the others with new), per metric."""

    name: str
    role: str  # old, new, adapted, partial
    method: str | None = None
    direction: str | None = None
    scores: pd.DataFrame | None = field(default=None, repr=False)  # (q, METRICS) per query; None without qrels
    agreement: np.ndarray | None = field(default=None, repr=False)  # (q,) recall@k against the new model's top k
    tests: dict[str, PairedTest] = field(default_factory=dict)
    against: str | None = None
    kept: dict[str, Kept] = field(default_factory=dict)  # metric -> c/b and the recovered fraction
    vs_full: dict[str, PairedTest] = field(default_factory=dict)  # partial only: against fully mapped

    def mean(self, metric: str) -> float:
        return float("nan") if self.scores is None else float(self.scores[metric].mean())

    @property
    def mean_agreement(self) -> float:
        return float("nan") if self.agreement is None else float(np.mean(self.agreement))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "role": self.role, "method": self.method, "direction": self.direction}
        if self.scores is not None:
            out.update({m: self.mean(m) for m in METRICS})
        out["agreement"] = None if self.agreement is None else self.mean_agreement
        out["against"] = self.against
        out["tests"] = {m: t.to_dict() for m, t in self.tests.items()}
        out["kept"] = {m: k.to_dict() for m, k in self.kept.items()}
        if self.vs_full:
            out["vs_fully_mapped"] = {m: t.to_dict() for m, t in self.vs_full.items()}
        return out


@dataclass
class HeldOut:
    """The label-free measures on corpus texts held out of the fit: each one's mapped-vs-true cosine, and for a
    seeded sample of them (``searched``) the share of the new model's top k that the adapted search returns."""

    rows: np.ndarray  # (h,) document rows
    cosine: np.ndarray  # (h,)
    searched: np.ndarray  # (m,) rows, a subset of ``rows``
    shared: np.ndarray  # (m,)

    def means(self) -> dict[str, float]:
        return {
            "heldout_texts": len(self.rows),
            "heldout_cosine": float(self.cosine.mean()) if len(self.cosine) else float("nan"),
            "heldout_searched": len(self.searched),
            "heldout_shared": float(self.shared.mean()) if len(self.shared) else float("nan"),
        }


@dataclass
class AdapterRun:
    """One adapter fitted in one direction on every fit pair, with its cost and its label-free measures."""

    method: str
    direction: str
    adapter: Adapter = field(repr=False)
    fit_seconds: float
    n_pairs: int
    timing: Timing  # of what it maps: the queries (new->legacy) or the stored documents (old->new)
    heldout: HeldOut | None = field(default=None, repr=False)
    notes: list[str] = field(default_factory=list)

    @property
    def added_us_per_query(self) -> float:
        """What a query waits for the map: its one-vector time new->legacy; nothing old->new (done once)."""
        return self.timing.one_vector_us if self.direction == NEW_TO_LEGACY else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "direction": self.direction,
            "pairs": self.n_pairs,
            "fit_seconds": self.fit_seconds,
            "bytes": self.adapter.nbytes,
            "us_per_vector": self.timing.per_vector_us,
            "us_one_vector": self.timing.one_vector_us,
            "added_us_per_query": self.added_us_per_query,
            "holdout_cosine": float(getattr(self.adapter, "holdout_cosine_", float("nan"))),
            **({} if self.heldout is None else self.heldout.means()),
            "notes": list(self.notes),
        }


@dataclass(frozen=True)
class Recommendation:
    """The method and direction chosen without the labels, and the verdict: ``stay`` (the new model is not better
    here), ``re-embed`` (the kept share's 95% lower bound is below the threshold) or ``migrate``."""

    method: str
    direction: str
    chosen_by: str  # in words: what the choice read (never the relevance labels)
    verdict: str
    words: str
    measure: str  # what ``kept`` is: recovered fraction, c/b, or the label-free shared top k
    kept: Share
    threshold: float

    def passes(self, threshold: float | None = None) -> bool:
        """The gate: the kept share's 95% lower bound is at least ``threshold`` (default: the run's)."""
        limit = self.threshold if threshold is None else threshold
        return bool(np.isfinite(self.kept.low) and self.kept.low >= limit)

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "direction": self.direction,
            "chosen_by": self.chosen_by,
            "verdict": self.verdict,
            "words": self.words,
            "measure": self.measure,
            "kept": self.kept.to_dict(),
            "threshold": self.threshold,
        }


@dataclass(frozen=True)
class CurvePoint:
    """One fit size of the curve: an adapter fitted on ``pairs`` pairs (a seeded sample of ``share`` of the
    corpus, or the generic fit texts), scored on the whole task."""

    method: str
    direction: str
    source: str  # corpus or generic
    share: float | None  # of the corpus (None: generic texts)
    seed: int
    pairs: int
    agreement: float  # label-free: the share of the new model's top k returned
    ratio: Share | None  # c / b on the headline metric (None without qrels)
    recovered: Share | None  # (c - a) / (b - a), where the new model's gain is real


@dataclass
class MigrationResult:
    """A migration run: every system searched, every adapter fitted, the curve, the recommendation."""

    config: MigrationConfig
    old: SideInfo
    new: SideInfo
    task: RetrievalTask | None = field(repr=False)
    documents: list[str] = field(repr=False)
    fit_rows: np.ndarray = field(repr=False)  # (k,) corpus rows whose vector pairs were fitted on
    n_generic: int  # generic fit pairs (embedded by both)
    systems: list[System]
    adapters: list[AdapterRun]
    recommendation: Recommendation
    label_free_on: str  # what the label-free choice read: the task's queries or held-out texts
    curve_points: list[CurvePoint] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    # ------------------------------------------------------------ lookups

    @property
    def labelled(self) -> bool:
        return self.task is not None

    @property
    def n_pairs(self) -> int:
        return len(self.fit_rows) + self.n_generic

    def system(self, name: str) -> System:
        for s in self.systems:
            if s.name == name:
                return s
        raise KeyError(name)

    def _pick(self, method: str | None, direction: str | None) -> tuple[str, str]:
        """(method, direction): the recommendation's where not given; InputError naming the fitted ones."""
        from isoscope.migrate.options import parse_direction

        rec = self.recommendation
        method = rec.method if method is None else method
        direction = rec.direction if direction is None else parse_direction(direction)
        fitted = {(a.method, a.direction) for a in self.adapters}
        if (method, direction) not in fitted:
            have = ", ".join(sorted({a.method for a in self.adapters}))
            raise InputError(
                f"no adapter {method} ({direction}) in this run; fitted: {have} in {', '.join(DIRECTIONS)}"
            )
        return method, direction

    def adapted(self, method: str | None = None, direction: str | None = None) -> System:
        """The fully mapped system of an adapter (default: the recommended one)."""
        method, direction = self._pick(method, direction)
        return next(s for s in self.systems if s.role == "adapted" and (s.method, s.direction) == (method, direction))

    def run_of(self, method: str | None = None, direction: str | None = None) -> AdapterRun:
        method, direction = self._pick(method, direction)
        return next(a for a in self.adapters if (a.method, a.direction) == (method, direction))

    def adapter(self, method: str | None = None, direction: str | None = None) -> Adapter:
        """The fitted adapter (default: the recommended one), fitted on every fit pair; ``new->legacy`` maps new
        vectors to old ones, ``old->new`` old to new."""
        return self.run_of(method, direction).adapter

    # ------------------------------------------------------------ tables

    def table(self, metric: str | None = None) -> pd.DataFrame:
        """One row per system: every metric's mean, the label-free agreement, ``metric``'s test against the
        baseline (new for adapters, old for new), the kept shares with their intervals, the adapter's costs and
        its held-out measures."""
        metric = metric or self.config.headline
        runs = {(a.method, a.direction): a for a in self.adapters}
        rows = []
        for s in self.systems:
            row: dict[str, Any] = {"system": s.name, "role": s.role, "method": s.method, "direction": s.direction}
            if s.scores is not None:
                row.update({m: s.mean(m) for m in METRICS})
            row[f"agreement@{self.config.k}"] = s.mean_agreement
            test, kept = s.tests.get(metric), s.kept.get(metric)
            row.update(
                {
                    "against": s.against or "",
                    f"Δ {metric}": np.nan if test is None else test.mean_difference,
                    "ci_low": np.nan if test is None else test.ci_low,
                    "ci_high": np.nan if test is None else test.ci_high,
                    "p_value": np.nan if test is None else test.p_value,
                    "test": "" if test is None else test.verdict,
                    "c/b": np.nan if kept is None else kept.ratio.value,
                    "c/b low": np.nan if kept is None else kept.ratio.low,
                    "c/b high": np.nan if kept is None else kept.ratio.high,
                    "recovered": np.nan if kept is None or kept.recovered is None else kept.recovered.value,
                    "recovered low": np.nan if kept is None or kept.recovered is None else kept.recovered.low,
                    "recovered high": np.nan if kept is None or kept.recovered is None else kept.recovered.high,
                }
            )
            run = runs.get((s.method, s.direction)) if s.role == "adapted" else None
            row.update(_run_columns(run))
            rows.append(row)
        return pd.DataFrame(rows)

    def curve(self) -> pd.DataFrame:
        """One row per curve point: method, direction, source, share of the corpus, seed, pairs, the label-free
        agreement, c/b and the recovered fraction (headline metric) with their 95% intervals."""
        rows = []
        for p in self.curve_points:
            row = {
                "method": p.method,
                "direction": p.direction,
                "source": p.source,
                "share": p.share,
                "seed": p.seed,
                "pairs": p.pairs,
                "agreement": p.agreement,
            }
            for name, share in (("c/b", p.ratio), ("recovered", p.recovered)):
                row[name] = np.nan if share is None else share.value
                row[f"{name} low"] = np.nan if share is None else share.low
                row[f"{name} high"] = np.nan if share is None else share.high
            rows.append(row)
        columns = ["method", "direction", "source", "share", "seed", "pairs", "agreement"]
        columns += [f"{n}{s}" for n in ("c/b", "recovered") for s in ("", " low", " high")]
        return pd.DataFrame(rows, columns=columns)

    def plot(self, measure: str | None = None):
        """The curve as a plotly figure (``isoscope.migrate.figures.curve_figure``): ``measure`` is ``recovered``
        (where defined), ``c/b`` or ``agreement`` (default: recovered where the gain is real, else c/b; without
        qrels, agreement)."""
        from isoscope.migrate.figures import curve_figure

        if not self.curve_points:
            raise InputError("this run drew no curve (curve=()); give curve shares to draw one")
        return curve_figure(
            self.curve(),
            measure or self._curve_measure(),
            threshold=self.config.threshold,
            title=f"{self.old.name} -> {self.new.name}: kept against fit pairs",
        )

    def _curve_measure(self) -> str:
        if not self.labelled:
            return "agreement"
        curve = self.curve()
        return "recovered" if curve["recovered"].notna().any() else "c/b"

    def losers(self, n: int = 10, method: str | None = None, direction: str | None = None) -> pd.DataFrame:
        """The ``n`` queries that lose most with an adapter (default: the recommended one) against full
        re-embedding, on the headline metric: query id, text, old (a), new (b), adapted (c), change c - b."""
        if not self.labelled:
            raise InputError("losing queries need relevance labels (a task with qrels); this run had none")
        metric = self.config.headline
        c = self.adapted(method, direction).scores[metric].to_numpy()
        a, b = (self.system(name).scores[metric].to_numpy() for name in ("old", "new"))
        frame = pd.DataFrame(
            {"query_id": self.task.query_ids, "query": self.task.queries, "old": a, "new": b, "adapted": c}
        )
        frame["change"] = frame["adapted"] - frame["new"]
        frame = frame.sort_values(["change", "query_id"], kind="stable").reset_index(drop=True)
        return frame.head(max(int(n), 0))

    def per_text(self, method: str | None = None, direction: str | None = None) -> pd.DataFrame:
        """Where the map fails, text by text: each held-out document's row, text, the cosine of its mapped vector
        with its true one, and (for the searched sample) the share of the new model's top k its adapted search
        returns (NaN where not searched)."""
        held = self.run_of(method, direction).heldout
        if held is None:
            raise InputError("every corpus document was a fit pair: no held-out text to measure")
        shared = pd.Series(held.shared, index=held.searched)
        return pd.DataFrame(
            {
                "row": held.rows,
                "text": [self.documents[i] for i in held.rows],
                "cosine": held.cosine,
                f"shared@{self.config.k}": shared.reindex(held.rows).to_numpy(),
            }
        )

    # ------------------------------------------------------------ words and JSON

    def lines(self) -> list[str]:
        """The result in a few lines (what the command prints without --json)."""
        rec, h = self.recommendation, self.config.headline
        what = f"{self.task.name}: {self.task.n_queries:,} queries, " if self.labelled else "corpus: "
        lines = [
            f"{what}{len(self.documents):,} documents; old {self.old.name} ({self.old.dims}), new {self.new.name} "
            f"({self.new.dims}); fit on {self.n_pairs:,} pairs ({len(self.fit_rows):,} corpus, {self.n_generic:,} "
            "generic)",
        ]
        head = f"{'system':<40}" + (f"{h:>9}" if self.labelled else "") + f"{'agree@' + str(self.config.k):>10}"
        lines.append(head + ("   c/b [95% CI]             recovered [95% CI]" if self.labelled else ""))
        for s in self.systems:
            row = f"{s.name[:39]:<40}" + (f"{s.mean(h):>9.4f}" if self.labelled else "") + f"{s.mean_agreement:>10.3f}"
            kept = s.kept.get(h)
            if kept is not None:
                row += f"   {_share_text(kept.ratio)}"
                row += f"   {_share_text(kept.recovered) if kept.recovered is not None else 'n/a'}"
            lines.append(row)
        lines += [f"verdict: {rec.words}", f"chosen by {rec.chosen_by}"]
        return lines + self.notes + self.warnings

    def to_dict(self) -> dict[str, Any]:
        """Everything the run measured as plain values (``isoscope migrate --json``)."""
        out = {
            "task": None if self.task is None else self.task.summary(),
            "documents": len(self.documents),
            "old": self.old.to_dict(),
            "new": self.new.to_dict(),
            "fit": {
                "pairs": self.n_pairs,
                "corpus_pairs": len(self.fit_rows),
                "generic_pairs": self.n_generic,
                "fraction": len(self.fit_rows) / max(len(self.documents), 1),
            },
            "config": self.config.to_dict(),
            "metrics": list(METRICS) if self.labelled else [],
            "label_free_on": self.label_free_on,
            "systems": [s.to_dict() for s in self.systems],
            "adapters": [a.to_dict() for a in self.adapters],
            "recommendation": self.recommendation.to_dict(),
            "curve": self.curve().to_dict(orient="records"),
            "losers": self.losers().to_dict(orient="records") if self.labelled else [],
            "notes": list(self.notes),
            "warnings": list(self.warnings),
        }
        return out

    def export(self, folder: str | Path, method: str | None = None, direction: str | None = None, **options: Any):
        """Take an adapter home (default: the recommended one): ``isoscope.migrate.export.export_adapter(adapter,
        folder, format=..., ...)`` (``options``: ``format``, ``model``, ``probe``, ...), its direction and both
        sides' names and fingerprints in the README's provenance."""
        from isoscope.migrate.export import export_adapter

        run = self.run_of(method, direction)  # an adapter this run has, or the one-line refusal naming them
        given = {
            "old_model": self.old.name,
            "old_fingerprint": self.old.provenance.get("fingerprint"),
            "new_model": self.new.name,
            "new_fingerprint": self.new.provenance.get("fingerprint"),
        }
        given = {k: v for k, v in given.items() if v} | dict(options.pop("provenance", None) or {})
        return export_adapter(run.adapter, folder, direction=run.direction, provenance=given, **options)


def _share_text(share: Share | None) -> str:
    if share is None:
        return "n/a"
    return f"{share.value:.3f} [{share.low:.3f}, {share.high:.3f}]"


def _run_columns(run: AdapterRun | None) -> dict[str, Any]:
    """An adapter's cost and held-out columns of the table (NaN for a system that is not an adapter)."""
    if run is None:
        return dict.fromkeys(
            ("pairs", "fit_seconds", "bytes", "added_us_per_query", "heldout_cosine", "heldout_shared"), np.nan
        )
    held = run.heldout.means() if run.heldout is not None else {}
    return {
        "pairs": run.n_pairs,
        "fit_seconds": run.fit_seconds,
        "bytes": run.adapter.nbytes,
        "added_us_per_query": run.added_us_per_query,
        "heldout_cosine": held.get("heldout_cosine", np.nan),
        "heldout_shared": held.get("heldout_shared", np.nan),
    }
