"""What a space's methods return: plain data (a DataFrame, arrays, numbers) with a notebook card each.

- ``GeometryFrame`` (``space.geometry()``): a ``pandas.DataFrame``, one row per space (raw first, then each
  calibration), the Anisotropy page's metrics as columns; ``layers=True`` adds ``layer:0..L``. Its card shows
  the headline numbers and the singular-value spectra. Anything derived from it is a plain DataFrame.
- ``STSResult`` (``space.sts(pairs)``): Spearman and Pearson x100 of cosine against the gold scores.
- ``Projection`` (``space.project("umap")``): 2-D/3-D coordinates of (a sample of) the rows.
- ``SweepReport`` (``space.sweep()``): ``isoscope.evaluate.sweep.SweepResult`` with a card.
- ``RetrievalReport`` (``space.retrieval(task)``): ``isoscope.retrieval.run.RetrievalResult`` with a card.
- ``ClusteringReport`` (``space.clustering("topic")``): ``isoscope.retrieval.clustering.ClusteringResult`` with a card.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from isoscope.retrieval.options import HEADLINE as RETRIEVAL_HEADLINE
from isoscope.retrieval.options import METRICS
from isoscope.space.cards import Card, CardStat
from isoscope.space.html import bars_svg, fmt, line_svg, scatter_svg

HEADLINE: tuple[tuple[str, str, str], ...] = (  # metric, label, help
    ("avg_cosine", "average cosine", "mean cosine of random pairs: 0 = isotropic, near 1 = a narrow cone"),
    ("isoscore", "IsoScore", "1 = variance spread over every direction, 0 = one direction"),
    ("effective_rank", "effective rank", "exp of the entropy of the normalised singular values"),
    ("explained_variance_top1", "variance on PC1", "share of variance on the first principal component"),
)


REPR_WIDTH = 100  # print(space.geometry()): column blocks this wide


class GeometryFrame(pd.DataFrame):
    """The metrics of ``isoscope.geometry.metrics.all_metrics``, one row per space; a DataFrame with a card.

    ``spectra`` maps each row's name to its normalised singular values (drawn on the card).
    """

    _metadata = ["spectra", "title"]  # noqa: RUF012 (pandas' own convention for subclass attributes)

    @property
    def _constructor(self) -> type[pd.DataFrame]:
        return pd.DataFrame  # a slice or a sum of it is a plain DataFrame

    def __repr__(self) -> str:
        """The whole frame, every row and column (pandas would cut a wide one with "..."), in blocks of columns
        that fit 100 characters."""
        return self.to_string(line_width=REPR_WIDTH)

    __str__ = __repr__

    def _repr_html_(self) -> str:
        spaces = [name for name in self.index if not str(name).startswith("layer:")]
        first, last = self.loc[spaces[0]], self.loc[spaces[-1]]
        stats = []
        for key, label, tip in HEADLINE:
            value = fmt(first[key]) if len(spaces) == 1 else f"{fmt(first[key])} → {fmt(last[key])}"
            stats.append(CardStat(label, value, tip))
        spectra = {k: v for k, v in (getattr(self, "spectra", None) or {}).items() if k in spaces}
        rows = [[str(name), *(self.loc[name, key] for key, _, _ in HEADLINE)] for name in self.index]
        return Card(
            title=f"Geometry · {getattr(self, 'title', '') or 'space'}",
            subtitle=" → ".join(map(str, spaces)) if len(spaces) > 1 else "",
            stats=stats,
            figure=line_svg(spectra, log=True, label="singular-value spectra") if spectra else "",
            caption="normalised singular values (log)",
            series=list(spectra),
            table=(["space", *(label for _, label, _ in HEADLINE)], rows) if len(self.index) > 1 else None,
            kind="geometry",
        ).html()


@dataclass
class STSResult:
    """STS of one space on scored pairs (``isoscope.evaluate.similarity.sts_scores``)."""

    space: str
    spearman: float  # x100
    pearson: float  # x100
    cosine: np.ndarray  # (m,) per pair
    gold: np.ndarray  # (m,)
    pairs: str = ""  # the pairs' name

    @property
    def n_pairs(self) -> int:
        return len(self.gold)

    def to_dict(self) -> dict[str, Any]:
        return {
            "space": self.space,
            "pairs": self.pairs,
            "n_pairs": self.n_pairs,
            "spearman": self.spearman,
            "pearson": self.pearson,
        }

    def _repr_html_(self) -> str:
        return Card(
            title=f"STS · {self.space}",
            subtitle=f"{self.n_pairs:,} pairs{f' of {self.pairs}' if self.pairs else ''}",
            stats=[
                CardStat("Spearman x100", fmt(self.spearman, ".2f")),
                CardStat("Pearson x100", fmt(self.pearson, ".2f")),
            ],
            figure=scatter_svg(self.gold, self.cosine, label="cosine against gold score"),
            caption="cosine (up) against gold score (across)",
            kind="sts",
        ).html()


@dataclass
class Projection:
    """A 2-D or 3-D map of a space: ``coords`` (m, c) of the rows ``rows`` (m,) (all rows unless sampled)."""

    coords: np.ndarray  # (m, 2|3) float32
    rows: np.ndarray  # (m,) int64 row ids of the space
    method: str
    seed: int = 0
    space: str = ""
    groups: np.ndarray | None = field(default=None, repr=False)  # (m,) small ints for the card's colours

    def to_frame(self, texts: list[str] | None = None) -> pd.DataFrame:
        """Columns row, x, y (z) and, given the space's texts, text."""
        frame = pd.DataFrame({"row": self.rows, **dict(zip("xyz", self.coords.T, strict=False))})
        if texts is not None:
            frame["text"] = [texts[i] for i in self.rows]
        return frame

    def _repr_html_(self) -> str:
        return Card(
            title=f"{self.method.upper()} map · {self.space}",
            subtitle=f"{len(self.rows):,} points, seed {self.seed}",
            figure=scatter_svg(self.coords[:, 0], self.coords[:, 1], self.groups, width=260, height=200),
            caption="space.map() draws every point, with hover and selection",
            kind="projection",
        ).html()


@dataclass
class SweepReport:
    """``isoscope.evaluate.sweep.run_sweep``'s result for a space: ``table`` has one row per variant."""

    result: Any  # isoscope.evaluate.sweep.SweepResult
    space: str = ""

    @property
    def table(self) -> pd.DataFrame:
        return self.result.table

    @property
    def warnings(self) -> list[str]:
        return list(self.result.warnings)

    def _repr_html_(self) -> str:
        t = self.table
        pca = self.result.family("pca")
        rows = [[r.variant, r.bytes_per_vector, r.overlap_at_k, r.spearman, r.isoscore] for r in t.itertuples()]
        return Card(
            title=f"Precision & size · {self.space}",
            subtitle=f"{self.result.n_texts:,} texts, overlap@{self.result.k} with fp32",
            figure=line_svg({"pca:K overlap": pca["overlap_at_k"].to_numpy()}, label="overlap as PCA shrinks"),
            caption="overlap@k as PCA keeps more dimensions",
            table=(["variant", "bytes", "overlap", "Spearman", "IsoScore"], rows),
            notes=self.warnings,
            kind="sweep",
        ).html()


@dataclass
class RetrievalReport:
    """``isoscope.retrieval.run.RetrievalResult`` of a space: ``table`` has one row per fix, raw first."""

    result: Any  # isoscope.retrieval.run.RetrievalResult
    space: str = ""

    @property
    def table(self) -> pd.DataFrame:
        return self.result.table()

    @property
    def warnings(self) -> list[str]:
        return list(self.result.warnings)

    def to_dict(self) -> dict[str, Any]:
        return self.result.to_dict()

    def _repr_html_(self) -> str:
        t, task, name = self.table, self.result.task, RETRIEVAL_HEADLINE
        headline = METRICS[name]
        best = t.iloc[int((t[name].to_numpy() * headline.sign).argmax())]
        columns = ["variant", name, f"Δ {name}", "ci_low", "ci_high", "verdict", "hubness_skew"]
        rows = [
            [variant, ndcg, delta, f"[{fmt(low)}, {fmt(high)}]", verdict, hubs]
            for variant, ndcg, delta, low, high, verdict, hubs in t.reindex(columns=columns).itertuples(index=False)
        ]
        return Card(
            title=f"Retrieval · {task.name}",
            subtitle=f"{task.n_queries:,} queries, {task.n_documents:,} documents · {self.space}",
            stats=[
                CardStat(f"{headline.label} raw", fmt(t[name].iloc[0]), "pytrec_eval, mean over queries"),
                CardStat("best", f"{best.variant} {fmt(best[name])}", f"its verdict: {best.verdict}"),
            ],
            figure=bars_svg(t[name].to_numpy(), label=f"{headline.label} per variant"),
            caption=f"{headline.label}, raw first",
            table=(["variant", headline.label, "Δ", "95% CI", "vs raw", "hub skew"], rows),
            notes=self.warnings,
            kind="retrieval",
        ).html()


@dataclass
class ClusteringReport:
    """``isoscope.retrieval.clustering.ClusteringResult`` of a space: ``table`` has one row per fix, raw first."""

    result: Any  # isoscope.retrieval.clustering.ClusteringResult

    @property
    def table(self) -> pd.DataFrame:
        return self.result.table()

    def to_dict(self) -> dict[str, Any]:
        return self.result.to_dict()

    def _repr_html_(self) -> str:
        r = self.result
        rows = [[row.variant, row.mean, row.sd] for row in r.rows]
        return Card(
            title=f"Clustering · {r.label or 'labels'}",
            subtitle=f"{r.n_texts:,} texts, k = {r.n_labels} · {r.space} · {len(r.seeds)} seeds",
            stats=[CardStat("V-measure raw", f"{fmt(r.rows[0].mean, '.1f')} ± {fmt(r.rows[0].sd, '.1f')}", "x100")],
            figure=bars_svg([row.mean for row in r.rows], label="V-measure per variant"),
            caption="V-measure x100 (mini-batch k-means), raw first",
            table=(["variant", "V-measure", "sd"], rows),
            notes=r.warnings,
            kind="clustering",
        ).html()
