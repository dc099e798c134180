"""Exact search to a fixed depth, by cosine or by CSLS, and the hubness of the documents.

- ``search``: every query's ``depth`` best documents (``isoscope.neighbours.exact.exact_topk``: brute force, equal
  scores by row id), by cosine of unit vectors.
- CSLS (Conneau et al. 2018, cross-domain similarity local scaling) reduces hubness at search time without
  moving a vector: a document ``d`` is ranked by ``2 cos(q, d) - r(d)``, where ``r(d)`` is the mean cosine of
  ``d`` to its ``k`` nearest other documents (``csls_penalty``: the corpus's own kNN table; on a large corpus its
  nearest among a seeded sample of ``reference`` documents). The query's own term ``r(q)`` is the same for every
  document of its list, so it changes no ranking and is left out. Computed as one inner product of augmented
  vectors, ``[2q, -1] . [d, r(d)]``, so the same exact search runs it.
- ``document_hubness``: the skewness of the documents' k-occurrence (``isoscope.comparison.hubness``) in their
  own kNN table, by cosine or by CSLS, on a seeded sample of the corpus when it is large.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from isoscope.neighbours.exact import exact_topk, knn_table
from isoscope.neighbours.index import as_unit_float32
from isoscope.retrieval.options import CSLS_K, DEPTH
from isoscope.sampling import sample_indices

CSLS_REFERENCE = 10_000  # documents a penalty is measured against on a larger corpus (a seeded sample)
HUBNESS_K = 10
HUBNESS_SAMPLE = 5_000  # documents whose kNN table gives the hubness skew on a larger corpus


@dataclass
class Ranking:
    """Every query's best documents: ``ids`` (q, depth) rows of the documents, best first; ``scores`` (q, depth)."""

    ids: np.ndarray  # (q, depth) int64
    scores: np.ndarray  # (q, depth) float32: cosines, or CSLS scores

    @property
    def depth(self) -> int:
        return int(self.ids.shape[1])


def _augmented(Q: np.ndarray, D: np.ndarray, penalty: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``[2q, -1]`` and ``[d, r(d)]``: their inner product is the CSLS score ``2 cos(q, d) - r(d)``."""
    Qa = np.hstack([2.0 * Q, -np.ones((len(Q), 1), np.float32)]).astype(np.float32)  # (q, d + 1)
    Da = np.hstack([D, penalty[:, None].astype(np.float32)]).astype(np.float32)  # (n, d + 1)
    return Qa, Da


def search(queries: np.ndarray, documents: np.ndarray, depth: int = DEPTH, *, penalty: np.ndarray | None = None):
    """Each query's ``min(depth, n)`` best documents by cosine (``penalty``: by CSLS, ``2 cos - penalty``).
    ``queries`` (q, d) and ``documents`` (n, d) are normalised here. Returns a ``Ranking``."""
    Q = as_unit_float32(queries, "queries")  # (q, d)
    D = as_unit_float32(documents, "documents")  # (n, d)
    depth = min(depth, len(D))
    if penalty is not None:
        Q, D = _augmented(Q, D, penalty)
    scores, ids = exact_topk(D, Q, depth)
    return Ranking(ids, scores)


def csls_penalty(documents: np.ndarray, k: int = CSLS_K, *, reference: int = CSLS_REFERENCE, seed: int = 0):
    """``r(d)`` (n,) float32: the mean cosine of each document to its ``k`` nearest other documents (among a
    seeded sample of ``reference`` documents when the corpus is larger)."""
    D = as_unit_float32(documents, "documents")  # (n, d)
    n = len(D)
    k = min(k, n - 1)
    if n <= reference:
        _, cosines = knn_table(D, k)  # (n, k)
        return cosines.mean(axis=1).astype(np.float32)
    rows = sample_indices(n, reference, seed)  # (m,)
    position = np.full(n, -1, np.int64)
    position[rows] = np.arange(len(rows))
    scores, ids = exact_topk(D[rows], D, k + 1)  # (n, k + 1): a sampled document finds itself first
    itself = ids == position[:, None]
    keep = np.argsort(itself, axis=1, kind="stable")[:, :k]  # the first k that are not the document itself
    return np.take_along_axis(scores, keep, axis=1).mean(axis=1).astype(np.float32)


def document_hubness(
    documents: np.ndarray,
    k: int = HUBNESS_K,
    *,
    penalty: np.ndarray | None = None,
    sample: int = HUBNESS_SAMPLE,
    seed: int = 0,
) -> float:
    """Skewness of the documents' k-occurrence in their own kNN table (by CSLS with ``penalty``), on a seeded
    sample of ``sample`` documents when there are more; NaN when it is undefined (fewer than 3 documents)."""
    from isoscope.comparison.hubness import hubness

    rows = sample_indices(len(documents), sample, seed)
    D = as_unit_float32(np.asarray(documents)[rows], "documents")  # (m, d)
    if len(D) < 3:
        return float("nan")
    k = min(k, len(D) - 1)
    if penalty is None:
        ids, _ = knn_table(D, k)
    else:
        Q, X = _augmented(D, D, np.asarray(penalty)[rows])
        _, ids = exact_topk(X, Q, k, exclude=np.arange(len(D)))
    return hubness(ids).skewness
