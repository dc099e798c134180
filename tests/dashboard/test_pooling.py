"""AppTest: the Pooling explorer on the demo pairs."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from isoscope.dashboard.services.models import ModelKey
from tests.dashboard.conftest import open_page


def test_explorer_table_and_best(app: AppTest) -> None:
    at = open_page(app, "pooling")
    assert not at.dataframe, "nothing runs before the button"
    at.button(key="pool_go").click().run()
    assert not at.exception, at.exception
    table = at.dataframe[0].value
    assert set(table["calibration"]) == {"none", "whitening:64"}
    assert {"cls", "mean", "max", "last2avg", "first_last_avg", "layer:0", "layer:6"} <= set(table["pooling"])
    best = table.loc[table["spearman"].idxmax()]
    assert f"Best: {best['pooling']} + {best['calibration']}" in at.success[0].value
    assert len(at.get("plotly_chart")) == 2


def test_pairs_without_scores_get_one_info_line(app: AppTest) -> None:
    at = open_page(app, "pooling")
    at.radio(key="pool_source").set_value("Type two sentences").run()
    assert not at.exception and not at.error
    assert any("The explorer needs gold scores" in i.value for i in at.info), [i.value for i in at.info]


def test_pairs_with_one_score_for_all_get_one_info_line(app: AppTest) -> None:
    """Spearman is undefined when every gold score is the same: the page says so instead of failing."""
    at = open_page(app, "pooling")
    at.radio(key="pool_source").set_value("Upload a file").run()
    flat = b"sentence1,sentence2,score\nA cat sleeps.,A cat naps.,3\nRain falls.,It is raining.,3\nA bus left.,The bus went.,3\n"
    at.file_uploader(key="pool_upload").set_value(("flat.csv", flat, "text/csv")).run()
    assert not at.exception and not at.error
    assert any("same score" in i.value for i in at.info), [i.value for i in at.info]


def test_the_estimate_counts_every_pooling_s_uniformity_and_fits(tmp_cache) -> None:
    """Issue 50: the explorer's estimate counted the pass and the flows; its table computes, per pooling (13 of
    them here) and calibration, the uniformity of the unique sentences' pairs and a fit of each linear method: the
    estimate is those parts added up (the first 300 demo pairs, an empty cache)."""
    from isoscope.anatomy.poolings import pooling_modes_for
    from isoscope.cache import ArrayCache
    from isoscope.dashboard.services import anatomy, costs
    from isoscope.dashboard.services.models import encoder
    from isoscope.data import Pairs, load_pairs
    from isoscope.encode.costs import embed_texts_cost
    from isoscope.geometry.costs import covariance_cost, uniformity_cost
    from isoscope.paths import DEMO_PAIRS

    full = load_pairs(DEMO_PAIRS)
    pairs = Pairs(full.sentence1[:300], full.sentence2[:300], full.scores[:300])
    texts = list(dict.fromkeys(pairs.texts))
    enc = encoder(ModelKey())
    modes = pooling_modes_for(enc)
    rate = costs.metrics_rate(enc.hidden_size)
    speed = lambda hidden: costs.throughput(ModelKey(), hidden, 128, fast=False)  # noqa: E731
    embed = embed_texts_cost(enc, texts, modes, max_length=128, rate=speed, cache=ArrayCache())
    parts = embed.seconds + uniformity_cost(len(texts), rate, spaces=2 * len(modes)).seconds
    parts += covariance_cost(len(texts), rate, passes=len(modes)).seconds  # whitening:64 on each pooling
    got = anatomy.pooling_report_cost(ModelKey(), pairs, ("whitening:64",), 128)
    assert len(modes) == 13 and embed.seconds > 0  # 6 poolings and 7 layers
    assert got.seconds == pytest.approx(parts)
