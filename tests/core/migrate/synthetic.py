"""Synthetic retrieval tasks with known answers for the migration tests: an old space A of unit rows and a new
space B that is A through a known map, so what an adapter should recover is known exactly."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from isoscope.retrieval.task import RetrievalTask, build_task


@dataclass
class Synthetic:
    task: RetrievalTask
    Q: np.ndarray  # (q, d) old queries, unit rows, float64
    D: np.ndarray  # (n, d) old documents
    relevant: np.ndarray  # (q,) each query's one relevant document


def unit(X: np.ndarray) -> np.ndarray:
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def rotation(d: int, seed: int) -> np.ndarray:
    q, r = np.linalg.qr(np.random.default_rng(seed).normal(size=(d, d)))
    return q * np.sign(np.diag(r))  # (d, d) orthogonal


def synthetic(n: int = 240, q: int = 60, d: int = 16, *, seed: int = 0, noise: float = 0.8, cone: float = 0.0):
    """Documents: random unit rows; each query: one document plus noise (its one relevant document). ``cone`` adds a
    random amount of one shared direction to every row (documents and queries independently): cosine search then
    reads that direction more than the content, so the old space searches badly and a map that shrinks it helps."""
    rng = np.random.default_rng(seed)
    U = unit(rng.normal(size=(n, d)))  # (n, d)
    relevant = rng.choice(n, q, replace=False)
    Q = U[relevant] + noise * rng.normal(size=(q, d)) / np.sqrt(d)  # (q, d)
    D = U.copy()
    if cone:
        m = np.eye(d)[0]
        D = D + cone * rng.normal(size=(n, 1)) * m
        Q = Q + cone * rng.normal(size=(q, 1)) * m
    task = build_task(
        "synthetic",
        [(f"q{i}", f"query {i}") for i in range(q)],
        [(f"d{i}", f"document {i}") for i in range(n)],
        [(f"q{i}", f"d{r}", 1) for i, r in enumerate(relevant)],
    )
    return Synthetic(task, unit(Q), unit(D), relevant)


def min_gap(Q: np.ndarray, D: np.ndarray, relevant: np.ndarray, k: int = 10) -> float:
    """The smallest cosine gap that decides a metric or a top-k list: around each relevant document and at each
    query's k-th place (float64). Float32 search moves a cosine of unit rows by ~d x 6e-8; a gap well above that
    cannot swap two documents, so the rankings the tests compare are the same in any precision."""
    S = unit(Q) @ unit(D).T  # (q, n)
    order = np.sort(S, axis=1)[:, ::-1]
    kth = order[:, k - 1] - order[:, k]
    rel = S[np.arange(len(Q)), relevant]
    others = np.abs(S - rel[:, None])
    others[np.arange(len(Q)), relevant] = np.inf
    return float(min(kth.min(), others.min()))
