"""Clustering as MTEB scores it: mini-batch k-means with k = the number of labels, V-measure against the labels,
over several seeds (mean +- sd), for raw vectors and for each fix fitted on them without the labels.

result = cluster_scores(X, topics, variants=("raw", "whitening"), seeds=(0, 1, 2, 3, 4))
result.table()   # variant, v_measure (mean), v_measure_sd, one column per seed

scikit-learn's ``MiniBatchKMeans`` (batch 500, ``n_init="auto"``, MTEB's settings) and ``v_measure_score``; rows
are L2-normalised first, so k-means groups by direction, as cosine search does (the embedded model's
sentence-transformers head normalises its vectors too). A fix is fitted on the vectors alone: the labels reach
only ``v_measure_score``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from isoscope.errors import InputError

CLUSTER_VARIANTS: tuple[str, ...] = ("raw", "centre", "whitening", "whitening:64", "sn", "abtt", "flow")
SEEDS: tuple[int, ...] = (0, 1, 2, 3, 4)
BATCH_SIZE = 500  # MTEB's clustering batch
MIN_PER_LABEL = 2


@dataclass
class ClusteringRow:
    """One variant: V-measure x100 per seed."""

    variant: str
    v_measure: np.ndarray  # (seeds,) x100
    fit_seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)

    @property
    def mean(self) -> float:
        return float(self.v_measure.mean())

    @property
    def sd(self) -> float:
        return float(self.v_measure.std(ddof=1)) if len(self.v_measure) > 1 else 0.0


@dataclass
class ClusteringResult:
    """Every variant's V-measure (raw first); ``to_dict()`` is plain JSON."""

    rows: list[ClusteringRow]
    n_texts: int
    n_labels: int
    seeds: tuple[int, ...]
    label: str = ""  # the label column's name
    space: str = ""

    @property
    def warnings(self) -> list[str]:
        return [w for r in self.rows for w in r.warnings]

    def table(self) -> pd.DataFrame:
        return pd.DataFrame(
            [
                {
                    "variant": r.variant,
                    "v_measure": r.mean,
                    "v_measure_sd": r.sd,
                    **{f"seed {s}": v for s, v in zip(self.seeds, r.v_measure, strict=True)},
                }
                for r in self.rows
            ]
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "n_texts": self.n_texts,
            "n_labels": self.n_labels,
            "label": self.label,
            "seeds": list(self.seeds),
            "variants": [
                {"variant": r.variant, "v_measure": r.mean, "v_measure_sd": r.sd, "per_seed": r.v_measure.tolist()}
                for r in self.rows
            ],
            "warnings": self.warnings,
        }


def _labels(labels: Sequence[object], n: int) -> np.ndarray:
    values = np.asarray([str(v) for v in labels], dtype=object)
    if len(values) != n:
        raise InputError(f"{len(values)} labels for {n} vectors; give one label per vector")
    names = np.unique(values)
    if len(names) < 2:
        raise InputError(f"clustering needs at least 2 different labels; found {len(names)}")
    if len(names) * MIN_PER_LABEL > n:
        raise InputError(f"{len(names)} labels for {n} texts; clustering needs about {MIN_PER_LABEL} texts per label")
    return values


def kmeans_v_measure(X: np.ndarray, labels: np.ndarray, seed: int) -> float:
    """V-measure x100 of one mini-batch k-means run (k = the number of labels) on the unit rows of ``X``."""
    from sklearn.cluster import MiniBatchKMeans
    from sklearn.metrics import v_measure_score

    from isoscope.neighbours.index import as_unit_float32

    k = len(np.unique(labels))
    model = MiniBatchKMeans(n_clusters=k, batch_size=BATCH_SIZE, n_init="auto", random_state=seed)
    predicted = model.fit_predict(as_unit_float32(X, "vectors"))
    return 100.0 * float(v_measure_score(labels, predicted))


def cluster_scores(
    vectors: np.ndarray,
    labels: Sequence[object],
    *,
    variants: Sequence[str] = CLUSTER_VARIANTS,
    seeds: Sequence[int] = SEEDS,
    flow: Any = None,
    progress: Callable[[int, int], None] | None = None,
) -> ClusteringResult:
    """V-measure of raw ``vectors`` (n, d) and of each fix fitted on them (no labels), k-means with each seed."""
    from isoscope.calibrate import make_calibrator
    from isoscope.calibrate.fitting import fit_size_warning, fit_timed
    from isoscope.retrieval.variants import parse_variants

    X = np.asarray(vectors, np.float32)
    truth = _labels(labels, len(X))
    if not seeds:
        raise InputError("give at least one seed")
    specs = parse_variants(list(variants))
    for spec in specs:
        if not spec.moves_vectors and str(spec) != "raw":
            raise InputError(
                f"'{spec}' changes a search, not the vectors; clustering takes raw or a calibration method"
            )
        if spec.fit_on == "queries":
            raise InputError(f"'{spec}': clustering has no queries; give the method without @queries")
    rows, total = [], len(specs) * len(seeds)
    for i, spec in enumerate(specs):
        Z, seconds, notes = X, 0.0, []
        if spec.method is not None:
            cal = make_calibrator(spec.method, flow=flow)
            seconds = fit_timed(cal, X)  # the vectors only: the labels are never passed
            Z = np.asarray(cal.transform(X), np.float32)
            notes = [w for w in [fit_size_warning(cal, *X.shape)] if w]
        scores = []
        for j, seed in enumerate(seeds):
            scores.append(kmeans_v_measure(Z, truth, int(seed)))
            if progress is not None:
                progress(i * len(seeds) + j + 1, total)
        rows.append(ClusteringRow(str(spec), np.asarray(scores), seconds, notes))
    return ClusteringResult(rows, len(X), len(np.unique(truth)), tuple(int(s) for s in seeds))
