"""What a migration keeps, measured: with relevance labels, and without them.

- ``kept_shares``: ``c / b`` (the adapted system's mean score over the new model's) and, only where the new model's
  gain over the old is real (the 95% interval of ``b - a`` lies above 0), the recovered fraction
  ``(c - a) / (b - a)``; each with a paired bootstrap interval over queries (``isoscope.retrieval.stats``). Where the
  new model is significantly worse (the interval lies below 0) there is no gain to recover: a "fraction" of a loss
  (15.0 when an adapter falls far below both) would read as a share kept, so it is left undefined too.
- ``top_ids`` and ``shared_top``: the label-free measure the papers report, recall@10 of the adapted search against
  the new model's own exact top 10 (per query: how many of the new model's 10 the adapted search also returns,
  over 10), by ``isoscope.neighbours.exact`` and ``isoscope.neighbours.overlap``.
- ``row_cosines``: the cosine of each mapped vector with the true one (a text held out of the fit).
- ``timed_transform``: what an adapter adds at serving time (its weight is ``Adapter.nbytes``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from isoscope.neighbours.exact import exact_topk
from isoscope.neighbours.index import as_unit_float32
from isoscope.neighbours.overlap import jaccard_tables
from isoscope.retrieval.stats import PairedTest, bootstrap_interval

ONE_VECTOR_REPEATS = 21  # one vector mapped this many times; the median is its time


@dataclass(frozen=True)
class Share:
    """A kept share with its 95% paired bootstrap interval over queries (nan where undefined)."""

    value: float
    low: float
    high: float

    def to_dict(self) -> dict[str, float]:
        return {"value": self.value, "ci_low": self.low, "ci_high": self.high}


@dataclass(frozen=True)
class Kept:
    """What an adapted system keeps of the new model on one metric: ``ratio`` = c / b always; ``recovered`` =
    (c - a) / (b - a) only where the new model's gain is real, else None (``why`` says which)."""

    metric: str
    ratio: Share
    recovered: Share | None
    why: str = ""  # why ``recovered`` is None

    @property
    def headline(self) -> tuple[str, Share]:
        """(name, share) a verdict reads: the recovered fraction where defined, else c / b."""
        return ("recovered fraction", self.recovered) if self.recovered is not None else ("c/b", self.ratio)

    def to_dict(self) -> dict:
        return {
            "metric": self.metric,
            "ratio": self.ratio.to_dict(),
            "recovered": None if self.recovered is None else self.recovered.to_dict(),
            "why_no_recovered": self.why or None,
        }


def gain_is_real(new_vs_old: PairedTest) -> bool:
    """True when the 95% interval of ``b - a`` lies above 0: only then is ``(c - a) / (b - a)`` a share of a gain."""
    return bool(new_vs_old.ci_low > 0)


def _ratio(c: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(c, axis=axis) / np.mean(b, axis=axis)


def _recovered(a: np.ndarray, b: np.ndarray, c: np.ndarray, axis: int = -1) -> np.ndarray:
    base = np.mean(a, axis=axis)
    return (np.mean(c, axis=axis) - base) / (np.mean(b, axis=axis) - base)


def _share(samples: tuple[np.ndarray, ...], statistic, *, resamples: int, seed: int) -> Share:
    with np.errstate(divide="ignore", invalid="ignore"):
        value = float(statistic(*samples))
    if not np.isfinite(value):
        return Share(float("nan"), float("nan"), float("nan"))
    low, high = bootstrap_interval(samples, statistic, resamples=resamples, seed=seed)
    return Share(value, low, high)


def kept_shares(
    a: np.ndarray, b: np.ndarray, c: np.ndarray, *, new_vs_old: PairedTest, resamples: int, seed: int
) -> Kept:
    """c / b and, where ``new_vs_old`` (b against a) says the gain is real, (c - a) / (b - a), from per-query scores
    (q,) each of the same queries, with paired bootstrap intervals."""
    a, b, c = (np.asarray(x, np.float64) for x in (a, b, c))
    ratio = _share((c, b), _ratio, resamples=resamples, seed=seed)
    if not gain_is_real(new_vs_old):
        t = new_vs_old
        where = "is worse here" if t.ci_high < 0 else "is not better here"
        why = (
            f"the new model {where} on {t.metric} (b - a {t.mean_difference:+.4f}, 95% CI [{t.ci_low:+.4f}, "
            f"{t.ci_high:+.4f}]): there is no gain to recover a share of"
        )
        return Kept(t.metric, ratio, None, why)
    return Kept(new_vs_old.metric, ratio, _share((a, b, c), _recovered, resamples=resamples, seed=seed))


def mean_share(values: np.ndarray, *, resamples: int, seed: int) -> Share:
    """The mean of per-query values (q,) with its bootstrap interval."""
    values = np.asarray(values, np.float64)
    if np.ptp(values) == 0:  # every query the same: every resample's mean is that value
        return Share(float(values.mean()), float(values[0]), float(values[0]))
    return _share((values,), np.mean, resamples=resamples, seed=seed)


# ---------------------------------------------------------------- label-free


def top_ids(queries: np.ndarray, documents: np.ndarray, k: int, *, exclude: np.ndarray | None = None) -> np.ndarray:
    """Each query's ``k`` nearest documents by cosine (q, k) int64 (``exclude`` (q,): a row each leaves out)."""
    Q = as_unit_float32(queries, "queries")  # (q, d)
    D = as_unit_float32(documents, "documents")  # (n, d)
    return exact_topk(D, Q, k, exclude=exclude)[1]


def shared_top(ids: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """Per query (q,): the share of ``reference``'s top k (q, k) that ``ids`` (q, k) also holds (recall@k against
    the reference's own top k)."""
    shared, _ = jaccard_tables(ids, reference)
    return shared / reference.shape[1]


def row_cosines(mapped: np.ndarray, true: np.ndarray) -> np.ndarray:
    """The cosine of each mapped row with its true row (n,), in float64."""
    A, B = np.asarray(mapped, np.float64), np.asarray(true, np.float64)  # (n, d) each
    num = np.einsum("ij,ij->i", A, B)
    return num / np.maximum(np.linalg.norm(A, axis=1) * np.linalg.norm(B, axis=1), 1e-30)


# ---------------------------------------------------------------- serving cost


@dataclass(frozen=True)
class Timing:
    """An adapter's transform time here: ``per_vector_us`` over a batch, ``one_vector_us`` for one vector alone
    (the median of ``ONE_VECTOR_REPEATS`` calls: what one query waits)."""

    per_vector_us: float
    one_vector_us: float
    batch: int


def timed_transform(adapter, X: np.ndarray) -> tuple[np.ndarray, Timing]:
    """``adapter.transform(X)`` (m, d_out) and how long it took, per vector and for one vector alone."""
    start = time.perf_counter()
    Y = adapter.transform(X)
    batch = time.perf_counter() - start
    one = []
    for _ in range(ONE_VECTOR_REPEATS):
        t = time.perf_counter()
        adapter.transform(X[:1])
        one.append(time.perf_counter() - t)
    return Y, Timing(1e6 * batch / max(len(X), 1), 1e6 * float(np.median(one)), len(X))
