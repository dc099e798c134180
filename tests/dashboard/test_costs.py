"""AppTest: a run that will take long says what it will cost before its button is pressed; a short one says
nothing (a finished one, neither: see test_landscape's live run)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from isoscope.dashboard.services.models import ModelKey
from isoscope.dashboard.ui import ESTIMATE_PREFIX
from tests.dashboard.conftest import APP
from tests.dashboard.test_glossary import small_pairs
from tests.dashboard.test_launched_data import launched, page


def estimates(at: AppTest) -> list[str]:
    return [c.value for c in at.caption if ESTIMATE_PREFIX in c.value]


def test_the_largest_live_run_says_its_time_and_disk_before_it_starts(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("ISOSCOPE_CACHE", str(tmp_path / "cache"))
    at = AppTest.from_file(APP, default_timeout=300)
    at.run()
    at.switch_page("views/landscape.py").run()
    for key, value in (("land_n", 128), ("land_epochs", 3), ("land_grid", 9), ("land_eval", 64)):
        at.select_slider(key=key).set_value(value)
    at.number_input(key="land_hess").set_value(30).run()
    assert not at.exception, at.exception
    # about 60k forward passes of the 6-layer model over 20-token texts, and 4 runs x 4 checkpoints of 22M
    # float32 parameters: minutes and over a GB on any CPU
    (shown,) = estimates(at)
    assert "min" in shown and "GB on disk" in shown, shown
    assert not at.success and not at.get("plotly_chart"), "nothing ran"


def test_short_runs_say_nothing(tmp_path, monkeypatch) -> None:
    at = launched(monkeypatch, tmp_path, small_pairs(tmp_path))
    at = page(at, "pooling")
    at.multiselect(key="pool_methods").set_value(["whitening:64", "sn+abtt:3"]).run()
    assert not estimates(at), "40 sentences, every pooling in one pass, linear fits: seconds"
    at = page(at, "calibration")
    at.radio(key="calp_fit_on").set_value("These sentences only")  # the default adds the demo corpus: minutes cold
    at.multiselect(key="calp_tp").set_value(["mean"])
    at.multiselect(key="calp_tm").set_value(["none", "whitening", "flow"]).run()
    assert not at.exception and not estimates(at), "a flow of 3 epochs on 40 vectors: a fraction of one batch"


def test_the_sweep_says_what_the_int8_build_and_both_passes_cost_before_it_starts(tmp_path, monkeypatch) -> None:
    """A cache with no int8 model in it (the session's embeddings and fp32 ONNX engine shared): the Precision &
    size page says the cost of the sweep, the int8 copy's build included, before its button is pressed.
    Whether that is over the 20 s threshold depends on the machine, so the threshold is lowered to show any
    non-zero cost; ``services.costs.sweep`` itself is checked against its parts."""
    from isoscope import costs
    from isoscope.dashboard.services import costs as estimate
    from isoscope.dashboard.services.keyed import texts
    from isoscope.data import load_corpus
    from isoscope.paths import DEMO_CORPUS
    from tests.conftest import private_cache

    session = Path(os.environ["ISOSCOPE_CACHE"])
    root = private_cache(tmp_path / "cache")
    (session / "onnx").mkdir(parents=True, exist_ok=True)
    (root / "onnx").symlink_to(session / "onnx", target_is_directory=True)
    monkeypatch.setenv("ISOSCOPE_CACHE", str(root))
    monkeypatch.setattr(costs, "SHOW_SECONDS", 1e-6)
    at = AppTest.from_file(APP, default_timeout=300)
    at.run()
    at.switch_page("views/sweep.py").run()
    assert not at.exception, at.exception
    (shown,) = estimates(at)
    assert "about" in shown, shown
    assert not at.get("plotly_chart"), "nothing ran"
    build = estimate.int8_build(ModelKey())
    assert build.seconds > 0, "no int8 model in this cache: its build is part of the cost"
    demo = texts(load_corpus(DEMO_CORPUS).texts)
    total = estimate.sweep(ModelKey(), demo, "mean", 128)
    assert total.seconds > build.seconds
    assert not (root / "int8").exists() or not any((root / "int8").iterdir()), "the estimate built nothing"


def test_an_atlas_estimate_counts_each_space_s_knn_graph_and_layout() -> None:
    """``services.costs.atlas`` for a vectors file (nothing embedded): a PCA map of the raw space needs no graph
    and costs nothing; a calibrated one adds a kNN graph per space; UMAP adds a layout per space at the rate this
    machine measured (a probe, once numba's kernels are compiled or cached), one layout's time when the two run
    side by side."""
    from isoscope.atlas.costs import knn_cost, layout_cost
    from isoscope.atlas.pipeline import PARALLEL_LAYOUT_ROWS, AtlasConfig
    from isoscope.costs import FREE
    from isoscope.dashboard.services import costs as estimate
    from isoscope.dashboard.services.keyed import texts
    from isoscope.neighbours.projection import project

    n, dim = 50_000, 8
    items = texts([f"row {i}" for i in range(n)])
    assert estimate.atlas(None, items, AtlasConfig(layout="pca", calibrate="none"), dim) == FREE
    knn = knn_cost(n, dim, k=16, rate=estimate.knn_rate(dim))
    assert knn.seconds > 0
    pca = estimate.atlas(None, items, AtlasConfig(layout="pca"), dim)
    assert pca == knn + knn  # raw and whitened
    project(np.random.default_rng(0).standard_normal((80, dim)).astype(np.float32), "umap", 2, seed=0)
    rate = estimate.umap_rate()  # the kernels are compiled now: a probe measures the rate
    assert rate is not None and rate.seconds_per_point_epoch > 0
    layout = layout_cost(n, dim, k=16, landmarks=AtlasConfig().landmarks, umap=rate, knn=estimate.knn_rate(dim))
    umap = estimate.atlas(None, items, AtlasConfig(), dim)
    assert n >= PARALLEL_LAYOUT_ROWS  # the two layouts run side by side: the stage takes one layout's time
    assert umap.seconds == pytest.approx((knn + knn + layout).seconds)
    m = PARALLEL_LAYOUT_ROWS - 1  # below, one after the other
    knn = knn_cost(m, dim, k=16, rate=estimate.knn_rate(dim))
    layout = layout_cost(m, dim, k=16, landmarks=AtlasConfig().landmarks, umap=rate, knn=estimate.knn_rate(dim))
    umap = estimate.atlas(None, texts([f"row {i}" for i in range(m)]), AtlasConfig(), dim)
    assert umap.seconds == pytest.approx((knn + knn + layout + layout).seconds)


def test_an_atlas_estimate_counts_each_distinct_text_once() -> None:
    """The atlas embeds each distinct text once (``atlas.pipeline.distinct_rows``): a corpus that repeats every
    text costs the embedding of one copy, while its vectors file still holds a row per text."""
    from isoscope.atlas.pipeline import AtlasConfig
    from isoscope.dashboard.services import costs as estimate
    from isoscope.dashboard.services.keyed import texts
    from isoscope.data import load_corpus
    from isoscope.paths import DEMO_CORPUS

    once = load_corpus(DEMO_CORPUS).texts[:600]
    config = AtlasConfig(layout="pca", calibrate="none")  # no graph, no layout: the embedding alone
    single = estimate.atlas(ModelKey(), texts(once), config, 384)
    double = estimate.atlas(ModelKey(), texts(once + once), config, 384)
    assert single.seconds > 0 and double.seconds == pytest.approx(single.seconds)
    assert double.disk_bytes == pytest.approx(2 * single.disk_bytes)
