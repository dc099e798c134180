"""isoscope.retrieval.stats: the paired randomisation test's known answers, the interval, the verdict's rule."""

from __future__ import annotations

import numpy as np
import pytest

from isoscope.retrieval.stats import ALPHA, paired_test


def test_an_identical_run_is_no_difference_with_p_1() -> None:
    x = np.random.default_rng(0).random(50)
    got = paired_test(x, x.copy(), metric="ndcg@10")
    assert got.p_value == 1.0 and got.verdict == "no difference"
    assert got.mean_difference == 0.0 and got.ci_low == 0.0 and got.ci_high == 0.0


def test_exact_enumeration_knows_its_smallest_p() -> None:
    """Five queries, each 0.1 better: of the 2^5 sign patterns only all-plus and all-minus reach |mean| 0.1, so
    p = 2/32 = 0.0625 exactly, above 0.05: five queries cannot show a difference, however consistent."""
    base = np.array([0.2, 0.4, 0.5, 0.7, 0.9])
    got = paired_test(base + 0.1, base)
    assert got.p_value == pytest.approx(2 / 32)
    assert got.verdict == "no difference"
    six = np.append(base, 0.3)
    assert paired_test(six + 0.1, six).p_value == pytest.approx(2 / 64)  # six queries can: better
    assert paired_test(six + 0.1, six).verdict == "better" and paired_test(six, six + 0.1).verdict == "worse"


def test_the_verdict_follows_the_test_not_the_interval() -> None:
    """Three of forty queries gain 0.2: the bootstrap interval of the mean excludes 0 (it never resamples a
    negative difference) but the randomisation test does not reject (p > 0.05): the verdict is no difference."""
    x = np.random.default_rng(0).random(40)
    y = x.copy()
    y[:3] += 0.2
    got = paired_test(y, x)
    assert got.ci_low > 0 and got.p_value > ALPHA
    assert got.verdict == "no difference"


def test_seeded_and_the_interval_holds_the_mean() -> None:
    rng = np.random.default_rng(1)
    base = rng.random(200)
    noisy = base + rng.normal(0.05, 0.1, 200)  # a 7-standard-error shift: no draw misses it
    a, b = paired_test(noisy, base, seed=3), paired_test(noisy, base, seed=3)
    assert a == b
    assert a.ci_low < a.mean_difference < a.ci_high
    assert a.verdict == "better" and a.p_value < ALPHA
    one = paired_test(base[:1] + 0.5, base[:1])  # a single query: no test can reject, no interval
    assert one.verdict == "no difference" and one.p_value == 1.0 and np.isnan(one.ci_low)
    with pytest.raises(ValueError, match="same length"):
        paired_test(base, base[:-1])


def test_many_resamples_are_drawn_in_batches_of_bounded_memory() -> None:
    """Issue 51: 10**12 resamples asked for 58 TiB at once. Up to ``BATCH_VALUES`` resampled values scipy draws them
    all at once (the results seen so far are unchanged); beyond, a batch holds at most that many, whatever the
    count (which ``isoscope.data.limits.COUNTS`` bounds at a million)."""
    from isoscope.retrieval.stats import BATCH_VALUES, RESAMPLES, _batch

    assert _batch(RESAMPLES, 400) is None  # 4M values: one draw, as before
    for resamples, queries in ((10**6, 1000), (10**12, 50), (10**6, 10**7)):
        batch = _batch(resamples, queries)
        assert batch is not None and 1 <= batch and (batch * queries <= BATCH_VALUES or batch == 1)
    x = np.random.default_rng(3).random(300)
    batched = paired_test(x + 0.05, x, resamples=20_000)  # 6M values: two batches of 13,981 resamples and less
    assert batched.p_value < 1e-3 and batched.ci_low > 0  # every query better by 0.05: far from chance either way


def _ratio(c: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    return c.mean(axis=axis) / b.mean(axis=axis)


def test_a_statistic_of_paired_runs_is_resampled_query_by_query() -> None:
    """``bootstrap_interval`` draws the same queries from every run: when each query keeps exactly 90% of its score,
    every resample's ratio of means is 0.9 (an unpaired bootstrap would scatter it, the scores vary 3x)."""
    from isoscope.retrieval.stats import bootstrap_interval

    rng = np.random.default_rng(2)
    b = rng.random(300) + 0.5
    low, high = bootstrap_interval((0.9 * b, b), _ratio)
    assert low == pytest.approx(0.9, rel=1e-12) and high == pytest.approx(0.9, rel=1e-12)
    noisy = b * rng.normal(0.9, 0.05, 300)
    low, high = bootstrap_interval((noisy, b), _ratio, seed=1)
    assert low < noisy.mean() / b.mean() < high
    # the standard error of the mean of 300 ratios of sd 0.05 is 0.003: a 95% interval ~0.012 wide, never 0.03
    assert high - low < 0.03
    assert bootstrap_interval((noisy, b), _ratio, seed=1) == (low, high)  # seeded


def test_an_undefined_statistic_has_no_interval() -> None:
    from isoscope.retrieval.stats import bootstrap_interval

    zeros = np.zeros(20)
    assert all(np.isnan(bootstrap_interval((np.ones(20), zeros), _ratio)))  # every resample divides by 0
    assert all(np.isnan(bootstrap_interval((np.ones(1), np.ones(1)), _ratio)))  # one query: nothing to resample
    with pytest.raises(ValueError, match="one length"):
        bootstrap_interval((np.ones(3), np.ones(4)), _ratio)
