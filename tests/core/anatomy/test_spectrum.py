"""Embedding anatomy: spectrum, rank-k shrink of the input embedding (restored after), input vs output."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from transformers import BertConfig, BertForMaskedLM, RemBertConfig, RemBertForMaskedLM

from isoscope.anatomy.spectrum import (
    compare_input_output,
    default_ranks,
    embedding_spectrum,
    input_embedding_weight,
    low_rank,
    shrink_curve,
    swapped_input_embedding,
)
from isoscope.data import Pairs, load_pairs
from isoscope.encode.embed import EmbedConfig, encode
from isoscope.errors import InputError
from isoscope.evaluate.similarity import sts_evaluate
from isoscope.geometry.metrics import effective_rank, singular_values
from isoscope.paths import DEMO_PAIRS

CONFIG = EmbedConfig(batch_size=64, max_length=64)


@pytest.fixture(scope="module")
def demo_pairs() -> Pairs:
    """The first 200 demo pairs (400 texts: each rank of the shrink curve re-embeds them all)."""
    p = load_pairs(DEMO_PAIRS)
    return Pairs(p.sentence1[:200], p.sentence2[:200], p.scores[:200], name="demo_pairs_head")


@pytest.fixture(scope="module")
def few_pairs(demo_pairs) -> Pairs:
    return Pairs(demo_pairs.sentence1[:30], demo_pairs.sentence2[:30], demo_pairs.scores[:30], name="few")


@pytest.fixture(scope="module")
def shrink(encoder, demo_pairs):
    before = input_embedding_weight(encoder.model).detach().clone()
    result = shrink_curve(encoder, demo_pairs, ranks=(8, 384), config=CONFIG)
    return before, result


# ------------------------------------------------------------------ spectrum


def test_spectrum_matches_metrics(encoder) -> None:
    W = input_embedding_weight(encoder.model).detach().double().numpy()  # (30522, 384)
    spec = embedding_spectrum(encoder.model.get_input_embeddings().weight)
    s = singular_values(W, center=False)  # isoscope.geometry.metrics: eigvalsh of the Gram, a separate code path
    assert spec.shape == (30522, 384)
    np.testing.assert_allclose(spec.singular_values, s, rtol=1e-6, atol=1e-6 * s[0])
    p = s / s.sum()
    assert spec.effective_rank == pytest.approx(math.exp(-np.sum(p * np.log(p))), rel=1e-6)
    assert spec.effective_rank == pytest.approx(effective_rank(W, center=False), rel=1e-9)
    assert spec.effective_rank_centered == pytest.approx(effective_rank(W), rel=1e-9)
    assert 1 < spec.effective_rank < 384
    assert spec.energy[-1] == pytest.approx(1.0)
    assert np.all(np.diff(spec.energy) >= -1e-12)


def test_spectrum_small_matches_numpy_svd() -> None:
    W = np.random.default_rng(3).standard_normal((400, 20)) * np.linspace(3, 0.1, 20) + 0.5
    spec = embedding_spectrum(W)
    np.testing.assert_allclose(spec.singular_values, np.linalg.svd(W, compute_uv=False), rtol=1e-9)
    sc = np.linalg.svd(W - W.mean(0), compute_uv=False)
    pc = sc / sc.sum()
    assert spec.effective_rank_centered == pytest.approx(math.exp(-np.sum(pc * np.log(pc))), rel=1e-9)
    with pytest.raises(InputError, match="more rows than columns"):
        embedding_spectrum(W.T)


def test_default_ranks() -> None:
    assert default_ranks(384) == [8, 16, 32, 64, 128, 384]
    assert default_ranks(16) == [8, 16]


def test_low_rank_is_eckart_young() -> None:
    W = np.random.default_rng(0).standard_normal((50, 12))
    s = np.linalg.svd(W, compute_uv=False)
    for k in (1, 5, 12):
        Wk = low_rank(W, k)
        assert np.linalg.matrix_rank(Wk) == k
        assert np.linalg.norm(W - Wk) ** 2 == pytest.approx(np.sum(s[k:] ** 2), abs=1e-9)
    np.testing.assert_allclose(low_rank(W, 12), W, atol=1e-12)
    with pytest.raises(InputError, match="between 1 and 12"):
        low_rank(W, 13)
    with pytest.raises(InputError, match="between 1 and 12"):
        low_rank(W, 0)


# ------------------------------------------------------------------ shrink curve on the real model


def test_full_rank_reproduces_original(shrink, encoder, demo_pairs) -> None:
    _, result = shrink
    full_row = result.curve.set_index("k").loc[384]
    assert full_row["overlap_at_10"] == 1.0
    assert full_row["spearman"] == pytest.approx(result.full["spearman"], abs=1e-3)
    assert full_row["energy"] == pytest.approx(1.0)
    vectors = encode(encoder, demo_pairs.texts, "mean", config=CONFIG)
    n = len(demo_pairs)
    assert result.full["spearman"] == pytest.approx(
        sts_evaluate(vectors[:n], vectors[n:], demo_pairs.scores)["spearman"], abs=1e-3
    )


def test_low_rank_degrades(shrink) -> None:
    _, result = shrink
    low = result.curve.set_index("k").loc[8]
    assert low["overlap_at_10"] < 0.9
    assert low["spearman"] < result.full["spearman"]
    assert low["energy"] < 1.0
    assert low["embedding_params"] == 30522 * 8 + 8 * 384
    assert low["full_embedding_params"] == 30522 * 384


def test_weight_restored_after_shrink(shrink, encoder) -> None:
    before, _ = shrink
    param = input_embedding_weight(encoder.model)
    assert torch.equal(param.detach(), before)


def test_weight_restored_after_error(encoder, few_pairs) -> None:
    param = input_embedding_weight(encoder.model)
    ptr_before, values_before = param.data_ptr(), param.detach().clone()
    seen: list[int] = []

    def progress(done: int, total: int) -> None:
        seen.append(done)
        if done > len(set(few_pairs.texts)):  # inside the first rank-k encoding
            raise RuntimeError("stop")

    with pytest.raises(RuntimeError, match="stop"):
        shrink_curve(encoder, few_pairs, ranks=(4,), config=EmbedConfig(8, 64), progress=progress)
    assert len(seen) > 1
    assert param.data_ptr() == ptr_before  # the original storage is back
    assert torch.equal(param.detach(), values_before)


def test_swap_context_manager(encoder) -> None:
    param = input_embedding_weight(encoder.model)
    original = param.data_ptr()
    zeros = np.zeros(tuple(param.shape), np.float32)
    with swapped_input_embedding(encoder.model, zeros):
        assert float(param.detach().abs().sum()) == 0.0
        assert input_embedding_weight(encoder.model) is param  # same parameter, new values
    assert param.data_ptr() == original
    assert float(param.detach().abs().sum()) > 0.0
    with pytest.raises(ValueError, match="shape"), swapped_input_embedding(encoder.model, zeros[:10]):
        pass
    assert param.data_ptr() == original


def test_shrink_cache_keyed_by_rank(encoder, few_pairs, tmp_cache) -> None:
    first = shrink_curve(encoder, few_pairs, ranks=(8, 16), config=CONFIG, cache=tmp_cache)
    assert len(list(tmp_cache.root.glob("*.npy"))) == 3  # full model + one per rank
    calls = []
    handle = encoder.model.register_forward_hook(lambda *_: calls.append(1))
    try:
        again = shrink_curve(encoder, few_pairs, ranks=(8, 16), config=CONFIG, cache=tmp_cache)
    finally:
        handle.remove()
    assert calls == []  # every encoding came from the cache
    np.testing.assert_allclose(first.curve["spearman"], again.curve["spearman"])
    assert first.curve.loc[0, "spearman"] != first.curve.loc[1, "spearman"]


# ------------------------------------------------------------------ input vs output embedding


def test_loaded_model_has_no_output_embedding(encoder) -> None:
    assert compare_input_output(encoder.model) is None


def test_tied_bert_masked_lm() -> None:
    torch.manual_seed(0)
    mlm = BertForMaskedLM(BertConfig(vocab_size=300, hidden_size=16, num_hidden_layers=1, num_attention_heads=2))
    cmp = compare_input_output(mlm, n_tokens=200)
    assert cmp.tied
    assert np.isnan(cmp.row_cosine[0])  # the all-zero padding row has no direction
    np.testing.assert_allclose(cmp.row_cosine[1:], 1.0, atol=1e-9)
    assert cmp.structure_spearman == pytest.approx(100.0)
    assert cmp.to_dict()["row_cosine_mean"] == pytest.approx(1.0)


def test_untied_bert_masked_lm() -> None:
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=300, hidden_size=16, num_hidden_layers=1, num_attention_heads=2)
    cfg.tie_word_embeddings = False
    mlm = BertForMaskedLM(cfg)
    cmp = compare_input_output(mlm, n_tokens=200)
    assert not cmp.tied
    assert abs(float(np.nanmean(cmp.row_cosine))) < 0.1  # independent random tables
    assert cmp.input_spectrum.shape == cmp.output_spectrum.shape == (300, 16)


def test_decoupled_rembert_sizes() -> None:
    torch.manual_seed(0)
    cfg = RemBertConfig(
        vocab_size=300,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        input_embedding_size=8,
        output_embedding_size=24,
    )
    cmp = compare_input_output(RemBertForMaskedLM(cfg), n_tokens=100)
    assert not cmp.tied
    assert cmp.row_cosine is None
    assert (cmp.input_shape, cmp.output_shape) == ((300, 8), (300, 24))
    assert math.isfinite(cmp.structure_spearman)
    assert cmp.output_spectrum.effective_rank > cmp.input_spectrum.effective_rank
