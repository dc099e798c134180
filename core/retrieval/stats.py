"""Is a difference between two variants real? A paired test over queries and a 95% interval, from scipy.

- The test: a paired randomisation test (Fisher's; ``scipy.stats.permutation_test`` with
  ``permutation_type="samples"``: each query's two scores swapped at random, i.e. the sign of its difference
  flipped), two-sided, on the mean per-query difference; exact over all 2^n sign patterns when they are no more
  than ``resamples``, else ``resamples`` seeded draws. It is the test IR papers use for paired runs (Smucker et
  al. 2007).
- The interval: a seeded bootstrap of the mean difference over queries (``scipy.stats.bootstrap``, BCa, 95%;
  percentile where BCa is undefined); ``bootstrap_interval`` is the same for any statistic of one or more paired
  per-query arrays (a ratio of two runs' means, a share of a gain).
- The verdict is the test's alone: ``better`` or ``worse`` when p < ``ALPHA`` (by the sign of the mean difference,
  and the metric's direction: ``isoscope.retrieval.options.METRICS``), else ``no difference``. Each variant is
  tested against raw on its own; with several variants, about one in
  twenty of those that change nothing is still called better or worse at this level.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Literal

import numpy as np

Verdict = Literal["better", "worse", "no difference"]
ALPHA = 0.05
CONFIDENCE = 0.95
RESAMPLES = 10_000  # at most isoscope.data.limits.COUNTS["resamples"].most (checked where a run is configured)
BATCH_VALUES = 1 << 22  # resampled values held at once (32 MiB of float64): more resamples are drawn in batches


def _batch(resamples: int, n: int) -> int | None:
    """scipy's ``batch``: None (all resamples at once, as before) while they hold at most ``BATCH_VALUES`` values,
    else as many resamples as that holds, so memory stays flat however many are asked for."""
    return None if resamples * n <= BATCH_VALUES else max(1, BATCH_VALUES // n)


@dataclass(frozen=True)
class PairedTest:
    """A variant against a baseline on one metric, over the same queries."""

    metric: str
    mean_difference: float  # variant - baseline, averaged over queries
    ci_low: float  # 95% bootstrap interval of the mean difference
    ci_high: float
    p_value: float  # two-sided paired randomisation test
    verdict: Verdict
    n_queries: int

    def to_dict(self) -> dict:
        return asdict(self)


def _mean_difference(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(x - y, axis=axis)


def _interval(diff: np.ndarray, resamples: int, seed: int) -> tuple[float, float]:
    """The 95% bootstrap interval of the mean of ``diff`` (BCa; percentile where BCa is undefined)."""
    return bootstrap_interval((diff,), np.mean, resamples=resamples, seed=seed)


def bootstrap_interval(
    samples: Sequence[np.ndarray],
    statistic: Callable[..., np.ndarray],
    *,
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> tuple[float, float]:
    """The 95% interval of ``statistic(*samples)`` by a seeded bootstrap over the rows (``scipy.stats.bootstrap``;
    BCa, percentile where BCa is undefined; (nan, nan) where neither is, e.g. a ratio whose denominator can be 0).

    ``samples``: one or more per-query arrays (q,) of the same queries; several are resampled together (paired:
    a resample draws the same queries from each). ``statistic(*arrays, axis=-1)`` reduces the last axis, as
    ``np.mean`` does: ``lambda c, b, axis=-1: c.mean(axis) / b.mean(axis)`` is the ratio of two means."""
    from scipy.stats import bootstrap

    arrays = tuple(np.asarray(s, np.float64) for s in samples)  # (q,) each
    if not arrays or any(a.ndim != 1 or a.shape != arrays[0].shape for a in arrays):
        raise ValueError(f"paired samples must be vectors of one length, got {[a.shape for a in arrays]}")
    n = len(arrays[0])
    if n < 2:
        return float("nan"), float("nan")
    for method in ("BCa", "percentile"):
        with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
            warnings.simplefilter("ignore")  # BCa's warning on ties; the percentile interval replaces it
            ci = bootstrap(
                arrays,
                statistic,
                n_resamples=resamples,
                batch=_batch(resamples, n),
                confidence_level=CONFIDENCE,
                method=method,
                paired=len(arrays) > 1,
                rng=np.random.default_rng(seed),
            ).confidence_interval
        if np.isfinite(ci.low) and np.isfinite(ci.high):
            return float(ci.low), float(ci.high)
    return float("nan"), float("nan")


def paired_test(
    variant: np.ndarray,
    baseline: np.ndarray,
    *,
    metric: str = "",
    resamples: int = RESAMPLES,
    seed: int = 0,
    higher_is_better: bool = True,
) -> PairedTest:
    """``variant`` against ``baseline`` (per-query scores, same queries, same order): the mean difference, its
    95% interval, the randomisation test's p-value and the verdict it gives (``higher_is_better``: the metric's
    direction, which a significant difference's sign is read by)."""
    from scipy.stats import permutation_test

    x, y = np.asarray(variant, np.float64), np.asarray(baseline, np.float64)  # (q,) each
    if x.shape != y.shape or x.ndim != 1 or len(x) == 0:
        raise ValueError(f"paired scores must be two vectors of the same length, got {x.shape} and {y.shape}")
    diff = x - y  # (q,)
    mean = float(diff.mean())
    if len(diff) < 2:  # one query: both signs of its difference give the same |mean|, p = 1; no interval
        return PairedTest(metric, mean, float("nan"), float("nan"), 1.0, "no difference", len(diff))
    test = permutation_test(
        (x, y),
        _mean_difference,
        permutation_type="samples",
        vectorized=True,
        n_resamples=resamples,
        batch=_batch(resamples, len(x)),
        alternative="two-sided",
        rng=np.random.default_rng(seed),
    )
    p = float(test.pvalue)
    # every query moved by the same amount (0 for an identical run): every resample's mean is that amount
    low, high = (mean, mean) if np.ptp(diff) == 0 else _interval(diff, resamples, seed)
    return PairedTest(metric, mean, low, high, p, _verdict(mean, p, higher_is_better), len(diff))


def _verdict(mean: float, p: float, higher_is_better: bool = True) -> Verdict:
    if p >= ALPHA or mean == 0:
        return "no difference"
    return "better" if (mean > 0) == higher_is_better else "worse"
