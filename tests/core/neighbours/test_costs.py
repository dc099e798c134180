"""isoscope.neighbours.costs: a UMAP layout costs its point-epochs at the rate of the layouts timed here."""

from __future__ import annotations

import pytest

from isoscope.neighbours import costs


def test_a_umap_costs_its_point_epochs_and_its_first_compile():
    rate = costs.UmapRate(seconds_per_point_epoch=2e-6, compile_seconds=30.0)
    assert costs.umap_epochs(2_000) == 500 and costs.umap_epochs(20_000) == 200  # umap-learn's defaults
    assert costs.umap_cost(2_000, rate).seconds == pytest.approx(2.0)  # 2,000 points x 500 epochs
    assert costs.umap_cost(2_000, rate, compiled=False).seconds == pytest.approx(32.0)
    assert costs.umap_cost(20_000, rate).seconds == pytest.approx(8.0)  # 200 epochs above 10,000 points
    assert costs.umap_cost(20_000, rate, epochs=30).seconds == pytest.approx(1.2)


def test_the_rate_of_layouts_seen_here_leaves_out_the_first_compile(monkeypatch):
    monkeypatch.setattr(costs, "_UMAP_SEEN", {})
    assert costs.seen_umap_rate() is None
    costs.record_umap(1_000, 31.0)  # 500,000 point-epochs: 1 s of them, 30 s of compile
    alone = costs.seen_umap_rate()
    assert alone.seconds_per_point_epoch == pytest.approx(31.0 / 500_000) and alone.compile_seconds == 0
    costs.record_umap(20_000, 8.0)  # 4,000,000 point-epochs in 8 s
    rate = costs.seen_umap_rate()
    assert rate.seconds_per_point_epoch == pytest.approx(2e-6) and rate.compile_seconds == pytest.approx(30.0)


def test_every_layout_pays_its_setup_once():
    """Issue 50: a 300-point layout took a third of a 1,000-point one's time, not 15% (its point-epochs' share):
    the probe splits its timings into a setup per layout and a rate per point-epoch, and a layout costs both."""
    rate = costs.UmapRate(seconds_per_point_epoch=2e-6, compile_seconds=30.0, setup_seconds=1.5)
    assert costs.umap_cost(300, rate).seconds == pytest.approx(300 * 500 * 2e-6 + 1.5)
    assert costs.umap_cost(300, rate, compiled=False).seconds == pytest.approx(300 * 500 * 2e-6 + 31.5)
    measured = costs.measure_umap(repeat=False, setup=True)
    assert measured.seconds_per_point_epoch > 0 and measured.setup_seconds >= 0
    whole = costs.UMAP_PROBE_ROWS * costs.umap_epochs(costs.UMAP_PROBE_ROWS) * measured.seconds_per_point_epoch
    assert whole + measured.setup_seconds > 0  # the probe's own layout, rebuilt from its two parts
