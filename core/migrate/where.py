"""Where an adapter fails (issue 53.3): its per-text error as a column a map colours by, and per cluster in a table.

from isoscope.migrate.where import error_column, cluster_labels, error_by_cluster
colour = error_column(result, texts)                      # (n,) each text's mapped-vs-true cosine, NaN if not held out
labels = cluster_labels(old_document_vectors, k=8)        # KMeans of the old vectors (or an atlas's clusters)
table = error_by_cluster(result, labels)                  # mean and 10th percentile per cluster, the worst first
atlas_column(result, "my-atlas/")                         # the same column in an atlas folder: "extra: adapter_cosine"

The error is ``MigrationResult.per_text`` (held-out documents only: the fit pairs' own error says nothing): the
cosine of each mapped vector with its true one (1: the map is exact there) and, for the searched sample, the shared
top 10. Nothing here refits or re-embeds.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from isoscope.errors import InputError

if TYPE_CHECKING:
    from isoscope.migrate.results import MigrationResult

MEASURES = ("cosine", "shared")  # mapped-vs-true cosine; shared top k with the true neighbours
LOW_QUANTILE = 0.10  # the per-cluster table's lower tail
TOP_WORDS = 4  # words naming a cluster
MAX_CLUSTERS = 200


def _column(result: MigrationResult, measure: str) -> str:
    if measure not in MEASURES:
        raise InputError(f"unknown adapter error measure '{measure:.40}'; choose from {', '.join(MEASURES)}")
    return "cosine" if measure == "cosine" else f"shared@{result.config.k}"


def error_column(
    result: MigrationResult,
    texts: Sequence[str],
    *,
    method: str | None = None,
    direction: str | None = None,
    measure: str = "cosine",
) -> np.ndarray:
    """(len(texts),) float64: each text's adapter error (``measure``: ``cosine`` of its mapped and true vectors, or
    ``shared`` top 10) for the adapter (default: the recommended one), looked up by text among the run's held-out
    documents; NaN for a text that was not held out (a fit pair, a text not in the run, or not searched)."""
    values = _by_text(result, method, direction, measure)
    return np.array([values.get(t, np.nan) for t in texts], dtype=np.float64)


def _by_text(result: MigrationResult, method: str | None, direction: str | None, measure: str) -> dict[str, float]:
    column = _column(result, measure)
    frame = result.per_text(method, direction)
    return dict(zip(frame["text"], frame[column].to_numpy(np.float64), strict=True))


def cluster_labels(vectors: np.ndarray, k: int = 8, *, seed: int = 0) -> np.ndarray:
    """(n,) KMeans labels of ``vectors`` (the old model's document vectors, unit-normalised: cosine clusters),
    seeded; ``k`` is capped at the number of rows."""
    from sklearn.cluster import KMeans

    X = np.asarray(vectors, dtype=np.float64)
    if X.ndim != 2 or len(X) < 2:
        raise InputError(f"clusters need at least 2 vectors as an (n, d) array; got shape {X.shape}")
    if not np.isfinite(X).all():
        raise InputError("the vectors to cluster hold NaN or infinite values")
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or not 1 <= k <= MAX_CLUSTERS:
        raise InputError(f"the number of clusters must be between 1 and {MAX_CLUSTERS}; got {k!r:.40}")
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    X = X / np.where(norms > 0, norms, 1.0)
    k = min(int(k), len(X))
    return KMeans(n_clusters=k, n_init=3, random_state=seed).fit_predict(X).astype(np.int64)


def error_by_cluster(
    result: MigrationResult,
    labels: Sequence[int] | np.ndarray,
    *,
    method: str | None = None,
    direction: str | None = None,
    top: int = TOP_WORDS,
) -> pd.DataFrame:
    """One row per cluster of the run's documents (``labels``: one per document of ``result.documents``, e.g.
    ``cluster_labels`` of the old vectors or an atlas's clusters; negative = no cluster): its held-out texts, the
    mean and the 10th percentile of the mapped-vs-true cosine, the mean shared top 10 (where searched), its top
    words and its worst text; the worst cluster (lowest mean cosine) first. Clusters with no held-out text are left
    out."""
    from isoscope.atlas.labels import top_words

    labels = np.asarray(labels)
    if labels.shape != (len(result.documents),):
        raise InputError(
            f"give one cluster label per document of the run ({len(result.documents):,}); got {labels.shape[0]:,}"
            if labels.ndim == 1
            else f"cluster labels must be one-dimensional; got shape {labels.shape}"
        )
    labels = labels.astype(np.int64)
    frame = result.per_text(method, direction)
    frame["cluster"] = labels[frame["row"].to_numpy()]
    frame = frame[frame["cluster"] >= 0]
    shared = f"shared@{result.config.k}"
    clustered = labels >= 0
    words = top_words([result.documents[i] for i in np.flatnonzero(clustered)], labels[clustered], top)
    rows = []
    for cluster, part in frame.groupby("cluster", sort=True):
        worst = part.loc[part["cosine"].idxmin()]
        rows.append(
            {
                "cluster": int(cluster),
                "texts": len(part),
                "mean cosine": float(part["cosine"].mean()),
                f"p{round(LOW_QUANTILE * 100)} cosine": float(part["cosine"].quantile(LOW_QUANTILE)),
                f"mean {shared}": float(part[shared].mean()) if part[shared].notna().any() else np.nan,
                "top words": " ".join(words.get(int(cluster), [])),
                "worst text": worst["text"],
            }
        )
    columns = ["cluster", "texts", "mean cosine", f"p{round(LOW_QUANTILE * 100)} cosine", f"mean {shared}"]
    table = pd.DataFrame(rows, columns=[*columns, "top words", "worst text"])
    return table.sort_values(["mean cosine", "cluster"], kind="stable").reset_index(drop=True)


def atlas_column(
    result: MigrationResult,
    folder: str | Path,
    *,
    name: str = "adapter_cosine",
    method: str | None = None,
    direction: str | None = None,
    measure: str = "cosine",
) -> Path:
    """Write the adapter's per-text error (``error_column``) into the atlas in ``folder`` as the extra column
    ``name`` (``isoscope.atlas.extras.write_extra``): the Atlas page then colours by "extra: NAME". The atlas's
    texts are read a row group at a time and looked up among the run's held-out documents; NaN elsewhere."""
    from isoscope.atlas.extras import write_extra
    from isoscope.atlas.folder import finished_atlas, load_atlas

    atlas = load_atlas(finished_atlas(folder))
    by_text = _by_text(result, method, direction, measure)
    values = np.full(atlas.n, np.nan)
    for start, texts in atlas.column_chunks("text"):
        values[start : start + len(texts)] = [by_text.get(str(t), np.nan) for t in texts]
    return write_extra(atlas.path, name, values)
