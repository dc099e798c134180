"""isoscope.encode.costs: embedding's cost from the tokenizer's counts and the encoder's measured throughput, and
the int8 build's probe (tiny random models)."""

from __future__ import annotations

import pytest

from isoscope.cache import ArrayCache
from isoscope.costs import FREE, Cost
from isoscope.encode import costs
from isoscope.encode.costs import Throughput
from isoscope.encode.embed import EmbedConfig, encode_many
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


def test_the_probe_measures_the_encoder_on_its_own_batches(tiny, rate):
    assert rate.tokens_per_second > 0 and rate.probe_seconds > 0
    texts = costs.probe_texts(EmbedConfig().batch_tokens)
    assert rate.probe_tokens == costs.token_count(tiny, texts, 64, sample=None)
    assert rate.probe_tokens >= costs.PROBE_BATCHES * EmbedConfig().batch_tokens  # two full batches at least
    assert len(set(texts)) == len(texts)  # each timed: a repeated text is embedded once (issue 50)


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
        return costs.embed_texts_cost(
            tiny, texts, ["mean"], max_length=64, rate=lambda hidden: rate, cache=cache, companions=True
        )

    assert 0 < cost(small).seconds < cost(large).seconds
    assert cost(large).disk_bytes > cost(small).disk_bytes > 0  # the arrays the pass writes
    assert (
        costs.embed_texts_cost(tiny, corpus(5), ["mean"], max_length=64, rate=lambda h: rate) == FREE
    )  # smaller than the probe
    encode_many(tiny, large, ["mean"], config=EmbedConfig(max_length=64), cache=cache, companions=True)
    assert cost(large) == FREE  # read from the cache, not computed
    assert cost(small).seconds > 0  # other texts are not


def test_an_embedding_cost_counts_each_distinct_text_once(tiny, rate, tmp_path):
    """``encode_many`` embeds each distinct text once (issue 50): texts repeated three times cost one copy's pass
    and write one copy's rows, and once that copy is cached the repeated list costs nothing."""
    cache = ArrayCache(tmp_path)
    once = corpus(300)

    def cost(texts: list[str]) -> Cost:
        return costs.embed_texts_cost(tiny, texts, ["mean"], max_length=64, rate=lambda hidden: rate, cache=cache)

    assert cost(once * 3) == cost(once) and cost(once).seconds > 0
    encode_many(tiny, once, ["mean"], config=EmbedConfig(max_length=64), cache=cache)
    assert cost([*reversed(once), *once]) == FREE


def test_the_int8_probe_builds_small_copies_elsewhere_and_the_cache_says_when_it_is_built(tiny, tmp_path):
    from isoscope.encode.quantize import build_int8_onnx, int8_built

    assert not int8_built(tiny, cache_dir=tmp_path)
    assert costs.measure_int8_build(tiny) > 0
    assert not any(tmp_path.iterdir()), "the probe builds in its own temporary folders"
    assert tiny.model.config.num_hidden_layers == 2, "the encoder's own config is left as it was"
    build_int8_onnx(tiny, cache_dir=tmp_path)
    assert int8_built(tiny, cache_dir=tmp_path)
