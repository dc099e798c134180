"""The same texts in the old and the new space, checked once: ``SpacePair`` (queries, documents and generic fit
texts on both sides), the seeded fit sample of the corpus (``fit_split``) and one adapter fitted in one direction
(``fit_adapter``: new->legacy maps new vectors to old, old->new old to new)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from isoscope.errors import InputError
from isoscope.migrate.adapters import finite_rows
from isoscope.migrate.options import NEW_TO_LEGACY
from isoscope.sampling import sample_indices

if TYPE_CHECKING:
    from isoscope.migrate.adapters import Adapter
    from isoscope.retrieval.task import RetrievalTask

Side = tuple[np.ndarray | None, np.ndarray]  # (queries (q, d) or None, documents (n, d))


@dataclass
class SpacePair:
    """The same texts in the old space (a) and the new (b): queries, documents and generic fit texts."""

    Qa: np.ndarray | None  # (q, d_a)
    Da: np.ndarray  # (n, d_a)
    Qb: np.ndarray | None  # (q, d_b)
    Db: np.ndarray  # (n, d_b)
    Xa: np.ndarray | None = None  # (m, d_a) generic fit texts
    Xb: np.ndarray | None = None  # (m, d_b)

    @property
    def n_generic(self) -> int:
        return 0 if self.Xa is None else len(self.Xa)

    def fit_pairs(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The corpus rows' vectors and the generic texts', old (k + m, d_a) and new (k + m, d_b)."""
        parts_a, parts_b = [self.Da[rows]], [self.Db[rows]]
        if self.Xa is not None:
            parts_a.append(self.Xa)
            parts_b.append(self.Xb)
        return np.vstack(parts_a), np.vstack(parts_b)


def _checked(X: object, name: str) -> np.ndarray:
    """``X`` as float32 (n, d), every row finite and not all zeros (``adapters.finite_rows``' one-line refusals)."""
    return np.ascontiguousarray(finite_rows(X, name), np.float32)


def check_spaces(old: Side, new: Side, task: RetrievalTask | None, fit: tuple | None) -> SpacePair:
    """The two sides checked: finite rows, the same texts in both (row counts), one width per side; InputError
    naming the array otherwise."""
    (Qa, Da), (Qb, Db) = old, new
    Da, Db = _checked(Da, "the old documents"), _checked(Db, "the new documents")
    if len(Da) != len(Db):
        raise InputError(f"the old space holds {len(Da):,} documents and the new {len(Db):,}; give both the same texts")
    if len(Da) < 2:
        raise InputError(f"a migration needs at least 2 documents; got {len(Da)}")
    if task is not None:
        if Qa is None or Qb is None:
            raise InputError("a task's queries need vectors in both spaces")
        Qa, Qb = _checked(Qa, "the old queries"), _checked(Qb, "the new queries")
        if len(Qa) != task.n_queries or len(Qb) != task.n_queries or len(Da) != task.n_documents:
            raise InputError(
                f"{task.name}: {task.n_queries:,} queries and {task.n_documents:,} documents, but vectors of "
                f"{len(Qa):,} and {len(Qb):,} queries and {len(Da):,} documents"
            )
        _same_width(Qa, Da, "old")
        _same_width(Qb, Db, "new")
    else:
        Qa = Qb = None
    Xa = Xb = None
    if fit is not None:
        Xa, Xb = _checked(fit[0], "the old fit vectors"), _checked(fit[1], "the new fit vectors")
        if len(Xa) != len(Xb):
            raise InputError(f"the fit texts have {len(Xa):,} old vectors and {len(Xb):,} new; give the same texts")
        _same_width(Xa, Da, "old")
        _same_width(Xb, Db, "new")
    return SpacePair(Qa, Da, Qb, Db, Xa, Xb)


def _same_width(X: np.ndarray, D: np.ndarray, side: str) -> None:
    if X.shape[1] != D.shape[1]:
        raise InputError(
            f"the {side} space's vectors have {X.shape[1]} and {D.shape[1]} dimensions; one space, one width"
        )


def fit_split(n: int, fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(fit rows (k,), held-out rows (n - k,)): a seeded sample of ``fraction`` of the ``n`` documents, and the rest."""
    k = round(fraction * n)
    rows = sample_indices(n, k, seed) if k > 0 else np.zeros(0, np.int64)
    return rows, np.setdiff1d(np.arange(n), rows)


def fit_adapter(method: str, direction: str, pairs: tuple[np.ndarray, np.ndarray], seed: int) -> tuple[Adapter, float]:
    """``method`` fitted in ``direction`` on (old (k, d_a), new (k, d_b)) pairs: new->legacy maps new to old,
    old->new old to new. Returns the adapter and its fit seconds."""
    from isoscope.migrate.methods import make_adapter

    Xa, Xb = pairs
    source, target = (Xb, Xa) if direction == NEW_TO_LEGACY else (Xa, Xb)
    adapter = make_adapter(method, seed=seed)
    start = time.perf_counter()
    adapter.fit(source, target)
    return adapter, time.perf_counter() - start
