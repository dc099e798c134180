"""isoscope.costs: a run's time and disk from counts of work and rates measured here (tiny random models)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from isoscope import costs
from isoscope.cache import ArrayCache
from isoscope.calibrate.flow import Flow
from isoscope.costs import FREE, Cost, Throughput
from isoscope.encode.embed import EmbedConfig, encode_many
from isoscope.landscape.live import LiveRun
from tests.tiny_models import tiny_bert

WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()


def corpus(n: int) -> list[str]:
    """``n`` distinct texts of 3 to 14 words."""
    return [" ".join(WORDS[(i + j) % len(WORDS)] for j in range(3 + i % 12)) + f" {i}" for i in range(n)]


@pytest.fixture(scope="module")
def tiny():
    return tiny_bert(7)


@pytest.fixture(scope="module")
def rate(tiny) -> Throughput:
    return costs.measure_throughput(tiny, ["mean"], 64)


def test_a_cost_says_itself_in_words():
    assert Cost(130, 40 * 2**20).describe() == "about 2 min, 40 MB on disk"
    assert Cost(4.2).describe() == "about 4 s"
    assert Cost(42).describe() == "about 40 s"
    assert Cost(3 * 3600 + 600, int(1.1 * 2**30)).describe() == "about 3 h 10 min, 1.1 GB on disk"
    assert Cost(30, 100).describe() == "about 30 s"  # a few bytes are not worth naming
    assert Cost(10, 5) + Cost(15, 7) == Cost(25, 12) and costs.total([]) == FREE
    assert not Cost(costs.SHOW_SECONDS - 0.1).long and Cost(costs.SHOW_SECONDS).long and not FREE.long


def test_the_probe_measures_the_encoder_on_its_own_batches(tiny, rate):
    assert rate.tokens_per_second > 0 and rate.probe_seconds > 0
    texts = costs.probe_texts(EmbedConfig().batch_tokens)
    assert rate.probe_tokens == costs.token_count(tiny, texts, 64, sample=None)
    assert rate.probe_tokens >= costs.PROBE_BATCHES * EmbedConfig().batch_tokens  # two full batches at least


def test_token_counts_come_from_the_tokenizer_and_scale_with_n(tiny):
    texts = corpus(300)
    lengths = [len(ids) for ids in tiny.tokenizer(texts)["input_ids"]]  # special tokens included
    exact = sum(lengths)
    assert max(lengths) < 64 and costs.token_count(tiny, texts, 64, sample=None) == exact
    assert costs.token_count(tiny, texts, 8, sample=None) == sum(min(n, 8) for n in lengths)  # truncated at 8
    big = texts * 20  # 6,000 texts: counted on a seeded sample, scaled to all of them
    assert costs.token_count(tiny, big, 64) == pytest.approx(20 * exact, rel=0.05)
    assert costs.token_count(tiny, [], 64) == 0


def test_embedding_cost_grows_with_the_texts_and_is_free_once_cached(tiny, rate, tmp_path):
    cache = ArrayCache(tmp_path)
    small, large = corpus(300), corpus(900)

    def cost(texts: list[str]) -> Cost:
        return costs.embed_texts_cost(tiny, texts, ["mean"], 64, lambda hidden: rate, cache, companions=True)

    assert 0 < cost(small).seconds < cost(large).seconds
    assert cost(large).disk_bytes > cost(small).disk_bytes > 0  # the arrays the pass writes
    assert costs.embed_texts_cost(tiny, corpus(5), ["mean"], 64, lambda h: rate) == FREE  # smaller than the probe
    encode_many(tiny, large, ["mean"], EmbedConfig(max_length=64), cache=cache, companions=True)
    assert cost(large) == FREE  # read from the cache, not computed
    assert cost(small).seconds > 0  # other texts are not


def test_a_flow_costs_its_steps(tiny):
    flow = Flow(hidden=16, batch_size=32, epochs=3)
    step = costs.measure_flow_step(8, flow)
    assert step > 0
    one, two = costs.flow_cost(320, flow, step), costs.flow_cost(640, flow, step)
    assert two.seconds == pytest.approx(2 * one.seconds)  # 10 -> 20 batches per epoch
    longer = costs.flow_cost(320, Flow(hidden=16, batch_size=32, epochs=6), step)
    assert longer.seconds == pytest.approx(2 * one.seconds)
    assert costs.flow_cost(16, flow, step).seconds == pytest.approx(3 * step / 2)  # half a batch per epoch


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


def test_a_knn_graph_costs_n_squared_d_exact_and_n_log_n_through_nndescent():
    from isoscope.atlas.graph import EXACT_MAX_ROWS

    rate = costs.KnnRate(exact=1e-11, approx=1e-5)
    exact = costs.knn_cost(10_000, 384, 16, rate)
    assert exact.seconds == pytest.approx(1e8 * 384 * 1e-11) and exact.disk_bytes == 10_000 * 16 * 8
    assert costs.knn_cost(EXACT_MAX_ROWS, 384, 16, rate).seconds == pytest.approx(EXACT_MAX_ROWS**2 * 384e-11)
    n = EXACT_MAX_ROWS + 1  # NN-descent from here on
    assert costs.knn_cost(n, 384, 16, rate).seconds == pytest.approx(n * math.log2(n) * 1e-5)
    assert costs.knn_cost(1_000_000, 384, 16, rate).seconds == pytest.approx(1e6 * math.log2(1e6) * 1e-5)
    assert costs.knn_cost(1, 384, 16, rate) == FREE


def test_the_landmark_layout_costs_its_sample_and_the_refinement():
    from isoscope.atlas.layout import REFINE_EPOCHS

    umap, knn = costs.UmapRate(2e-6, 0.0), costs.KnnRate(1e-11, 1e-5)
    full = costs.layout_cost(50_000, 384, 16, 0, umap, knn)
    assert full.seconds == pytest.approx(50_000 * 200 * 2e-6)
    assert costs.layout_cost(50_000, 384, 16, 100_000, umap, knn) == full  # fewer rows than landmarks: full UMAP
    big = costs.layout_cost(1_000_000, 384, 16, 100_000, umap, knn)
    sample = costs.knn_cost(100_000, 384, 16, knn).seconds + 100_000 * 200 * 2e-6
    assert big.seconds == pytest.approx(sample + 1_000_000 * REFINE_EPOCHS * 2e-6)
    # at 1M rows the sample's 200 epochs over a tenth of the rows plus REFINE_EPOCHS over all of them beat
    # full UMAP's 200 over all: (0.1 * 200 + REFINE_EPOCHS) / 200 of its point-epochs, plus the sample's graph
    full_1m = costs.layout_cost(1_000_000, 384, 16, 0, umap, knn).seconds
    assert big.seconds < full_1m * ((0.1 * 200 + REFINE_EPOCHS) / 200 + 0.1)
    assert big.seconds < full_1m


def test_the_knn_probe_measures_both_indexes():
    rate = costs.measure_knn(8)  # 4,000 probe rows of 8 dimensions: milliseconds
    assert rate.exact > 0 and rate.approx > 0
    x = costs.knn_probe_vectors(500, 64)
    assert x.shape == (500, 64) and x.dtype == np.float32
    assert np.linalg.svd(x, compute_uv=False)[costs.KNN_PROBE_RANK] < 0.1 * np.linalg.svd(x, compute_uv=False)[0]


def test_the_int8_probe_builds_small_copies_elsewhere_and_the_cache_says_when_it_is_built(tiny, tmp_path):
    from isoscope.encode.quantize import build_int8_onnx, int8_built

    assert not int8_built(tiny, cache_dir=tmp_path)
    assert costs.measure_int8_build(tiny) > 0
    assert not any(tmp_path.iterdir()), "the probe builds in its own temporary folders"
    assert tiny.model.config.num_hidden_layers == 2, "the encoder's own config is left as it was"
    build_int8_onnx(tiny, cache_dir=tmp_path)
    assert int8_built(tiny, cache_dir=tmp_path)


def _run(**over) -> LiveRun:
    base = {"model": "", "task": "demo-topic", "n_train": 64, "epochs": 2, "lr": 5e-5, "grid": 5, "max_length": 64}
    return LiveRun(**{**base, "eval_size": 16, **over})


def test_a_live_run_costs_more_with_every_knob_and_writes_its_checkpoints():
    def seconds(**over) -> float:
        return costs.landscape_cost(_run(**over), 22_000_000, 6, 0.1).seconds

    base = seconds()
    for knob in ({"grid": 7}, {"n_train": 128}, {"epochs": 3}, {"hessian_iters": 10}):  # eval_size: in the point
        assert seconds(**knob) > base, knob
    assert costs.landscape_cost(_run(), 22_000_000, 6, 0.2).seconds == pytest.approx(2 * base)
    assert costs.landscape_cost(_run(), 22_000_000, 6, 0.1).disk_bytes == int(_run().disk_mb(22_000_000) * 2**20)
    work = costs.landscape_points(_run(), 6)
    # both inits: 2 tasks x 2 epochs x 4 steps of 16 examples, each 3 forwards of 16 against a point's 32
    assert work["train"] == pytest.approx(2 * 2 * 2 * 4 * costs.STEP_FACTOR * 16 / 32)
    # 11 + 25 task-plane points, 3 checkpoints, 9 rollback groups, 10 + 25 filter-view points
    assert work["evaluate"] == pytest.approx(2 * (11 + 25 + 3 + 9 + 10 + 25 + 3 * (16 + 32) / 32))


def test_no_heavy_import_for_a_cost_in_words():
    import subprocess
    import sys

    code = "import sys, isoscope.costs; print(sorted(m for m in ('torch', 'umap', 'numpy') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
