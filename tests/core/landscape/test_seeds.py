"""isoscope.landscape.seeds: mean and sample sd over seeds (known answers), built from each seed's own results."""

from __future__ import annotations

import math

import numpy as np
import pytest

from isoscope.landscape.results import load_results, seed_dir
from isoscope.landscape.seeds import HEADLINE_BY_NAME, HEADLINES, headline_summary, learning_bands, stat


def test_stat_known_answers():
    s = stat([1.0, 2.0, 4.0])
    assert s.mean == pytest.approx(7 / 3) and s.n == 3
    assert s.sd == pytest.approx(math.sqrt(((1 - 7 / 3) ** 2 + (2 - 7 / 3) ** 2 + (4 - 7 / 3) ** 2) / 2))  # ddof 1
    one = stat([5.0])
    assert one.mean == 5.0 and math.isnan(one.sd) and one.n == 1
    gap = stat([1.0, float("nan"), 3.0])  # a seed without the number (e.g. Hessian skipped) is not averaged in
    assert gap.mean == 2.0 and gap.n == 2 and len(gap.values) == 3
    assert math.isnan(stat([float("nan")]).mean)
    assert "scale_invariant" not in s.to_json() and stat([1.0], True).to_json()["scale_invariant"] is True


def test_scale_invariance_is_stated_for_every_flatness_number():
    assert HEADLINE_BY_NAME["filter_sharpness"].scale_invariant is True
    assert HEADLINE_BY_NAME["hessian_top_eigenvalue"].scale_invariant is False
    assert HEADLINE_BY_NAME["grid_curvature_max"].scale_invariant is False
    assert HEADLINE_BY_NAME["train_loss_theta1"].scale_invariant is None
    assert len({h.name for h in HEADLINES}) == len(HEADLINES)


def test_summary_is_made_of_each_seeds_own_results(tiny_run):
    out, summary, _, _ = tiny_run
    per_seed = [load_results(out).inits, load_results(seed_dir(out, 1)).inits]
    computed = headline_summary(per_seed)
    for init in ("pretrained", "scratch"):
        for h in HEADLINES:
            values = [h.get(s[init]) for s in per_seed]
            got = summary["summary"][init][h.name]
            np.testing.assert_array_equal(np.array(got["values"], float), np.array(values, float))
            assert computed[init][h.name].n == got["n"]
        s0, s1 = per_seed[0][init], per_seed[1][init]
        assert s0.theta1.train_loss != s1.theta1.train_loss  # the seeds really differ
        sharp = summary["summary"][init]["filter_sharpness"]
        assert sharp["mean"] == pytest.approx(
            np.mean([s0.filter_normalized.sharpness.mean, s1.filter_normalized.sharpness.mean])
        )
        assert sharp["sd"] == pytest.approx(
            abs(s0.filter_normalized.sharpness.mean - s1.filter_normalized.sharpness.mean) / math.sqrt(2)
        )
        assert sharp["scale_invariant"] is True
    bands = learning_bands(per_seed)
    for init, band in bands.items():
        held = np.array([[m.heldout_loss for m in s[init].learning_curve.metrics] for s in per_seed])  # (2, 3)
        np.testing.assert_allclose(band["heldout_loss_mean"], held.mean(0))
        np.testing.assert_allclose(band["heldout_loss_sd"], held.std(0, ddof=1))
        assert band["epoch"] == [0.0, 1.0, 2.0]
    for init, band in bands.items():
        for key, values in band.items():
            np.testing.assert_allclose(np.array(summary["learning_curves"][init][key], float), values)
