"""isoscope.encode.engines and isoscope.encode.onnx_runtime: the fp32 ONNX Runtime engine equals torch within the
stated tolerance on every pooling and architecture, shares its cache identity, runs batches concurrently without
changing a single bit, and falls back to torch when an export fails its check.

The tolerance is ``FP32_ENGINE_TOLERANCE`` (1e-4 relative L2 per vector), derived in ``isoscope.encode.precision``
from float32 round-off: it holds on any CPU, where the two engines differ by ~1e-7..1e-6 in practice.
"""

from __future__ import annotations

import logging

import numpy as np
import pytest

from isoscope.cache import ArrayCache
from isoscope.encode import engines
from isoscope.encode.embed import EmbedConfig, concurrent_batches, encode, encode_many, ordered_map, token_vectors
from isoscope.encode.onnx_runtime import OrtEncoderBody
from isoscope.encode.precision import FP32_ENGINE_TOLERANCE
from isoscope.encode.quantize import quantize_encoder
from tests.tiny_models import tiny_bert, tiny_t5

TEXTS = [
    "A man is playing a guitar.",
    "Someone plays an instrument on a small stage in front of a quiet audience.",
    "short",
    "The cat sat on the mat while the dog slept.",
    "Stock markets fell sharply after the announcement.",
    "Rain is expected tomorrow.",
] * 3
SMALL_BATCHES = EmbedConfig(batch_size=2, batch_tokens=0)  # 9 batches of 2: several run at once


def _relative(a: np.ndarray, b: np.ndarray) -> float:
    """Largest relative L2 difference of the rows of ``a`` from those of ``b`` (n, d)."""
    return float((np.linalg.norm(a - b, axis=1) / np.linalg.norm(b, axis=1)).max())


@pytest.fixture(scope="module")
def bert():
    return tiny_bert(seed=7)


@pytest.fixture(scope="module")
def bert_onnx(bert, tmp_path_factory):
    return engines.onnx_fp32_encoder(bert, tmp_path_factory.mktemp("onnx"))


def test_identity_and_labels(bert, bert_onnx) -> None:
    assert (bert_onnx.precision, bert_onnx.engine) == ("fp32", "onnx")
    assert bert_onnx.fingerprint == bert.fingerprint  # equal within the tolerance: one cache entry
    assert bert_onnx.engine_label == "ONNX Runtime fp32" and bert.engine_label == "PyTorch fp32"
    assert engines.engine_in_use(bert_onnx) == "ONNX Runtime fp32"
    with pytest.raises(ValueError, match="fp32 torch encoder"):
        quantize_encoder(bert_onnx)
    with pytest.raises(ValueError, match="fp32 torch encoder"):
        engines.onnx_fp32_encoder(bert_onnx)


@pytest.mark.parametrize(
    "pooling", ["mean", "cls", "max", "last2avg", "first_last_avg", "layer:0", "layer:1", "layer:2"]
)
def test_every_pooling_equals_torch_within_the_tolerance(bert, bert_onnx, pooling: str) -> None:
    a, b = encode(bert, TEXTS, pooling), encode(bert_onnx, TEXTS, pooling)  # (18, 32) each
    assert b.dtype == np.float32 and b.shape == a.shape
    assert _relative(b, a) <= FP32_ENGINE_TOLERANCE


def test_t5_encoder_poolings_and_encdec_first(tmp_path) -> None:
    t5 = tiny_t5(seed=4)
    fast = engines.onnx_fp32_encoder(t5, tmp_path)
    assert fast.is_encoder_decoder and fast.engine == "onnx"
    for pooling in ("enc_first", "enc_mean", "encdec_first", "layer:0", "layer:2"):
        a, b = encode(t5, TEXTS, pooling), encode(fast, TEXTS, pooling)
        assert _relative(b, a) <= FP32_ENGINE_TOLERANCE, pooling


def test_token_vectors_equal_torch_within_the_tolerance(bert, bert_onnx) -> None:
    a, b = token_vectors(bert, TEXTS[:6]), token_vectors(bert_onnx, TEXTS[:6])
    for ids_a, ids_b, va, vb in zip(a.token_ids, b.token_ids, a.vectors, b.vectors, strict=True):
        np.testing.assert_array_equal(ids_a, ids_b)
        assert _relative(vb, va) <= FP32_ENGINE_TOLERANCE


def test_concurrent_batches_change_no_bit(bert, bert_onnx, tmp_path) -> None:
    """Each batch's result depends on that batch only: running them one at a time gives the same bits, for fp32
    and for int8 (whose activation scales are per batch)."""
    int8 = quantize_encoder(bert, cache_dir=tmp_path)
    for enc in (bert_onnx, int8):
        body = enc.model
        assert isinstance(body, OrtEncoderBody) and concurrent_batches(enc) == body.concurrent_batches
        body.concurrent_batches = 2
        together = encode_many(enc, TEXTS, ["mean", "layer:1"], config=SMALL_BATCHES)
        body.concurrent_batches = 1
        try:
            alone = encode_many(enc, TEXTS, ["mean", "layer:1"], config=SMALL_BATCHES)
        finally:
            body.concurrent_batches = 2
        for name in together:
            np.testing.assert_array_equal(together[name], alone[name])
        np.testing.assert_array_equal(
            encode(enc, TEXTS, "mean", config=SMALL_BATCHES), together["mean"]
        )  # and run to run


def test_ordered_map_keeps_the_order_on_several_threads() -> None:
    assert list(ordered_map(lambda x: x * x, range(50), 3)) == [x * x for x in range(50)]
    assert list(ordered_map(lambda x: -x, iter([3, 1, 2]), 1)) == [-3, -1, -2]


def test_the_two_engines_share_cache_entries(bert, bert_onnx, tmp_path) -> None:
    cache = ArrayCache(tmp_path)
    a = encode_many(bert_onnx, TEXTS, ["mean"], cache=cache)["mean"]
    b = encode_many(bert, TEXTS, ["mean"], cache=cache)["mean"]  # read from the ONNX engine's entry
    assert len(list(tmp_path.glob("*.npy"))) == 1
    np.testing.assert_array_equal(a, b)


def test_an_export_failing_its_check_is_never_used(bert, tmp_path, monkeypatch, caplog) -> None:
    monkeypatch.setattr(engines, "FP32_ENGINE_TOLERANCE", -1.0)  # no export can pass: every check fails
    fast = engines.onnx_fp32_encoder(bert, tmp_path)
    with caplog.at_level(logging.WARNING, logger="isoscope.encode.onnx_runtime"):
        assert engines.engine_in_use(fast) == "PyTorch fp32"
    assert "not used" in caplog.text and "tolerance" in caplog.text
    np.testing.assert_array_equal(encode(fast, TEXTS, "mean"), encode(bert, TEXTS, "mean"))  # torch answered


def test_fastest_fp32_encoder_choices(bert, monkeypatch, tmp_path) -> None:
    fast = engines.fastest_fp32_encoder(bert, tmp_path)
    assert fast.engine == "onnx" and engines.fastest_fp32_encoder(bert, tmp_path) is fast  # memoised
    int8 = quantize_encoder(bert, cache_dir=tmp_path)
    assert engines.fastest_fp32_encoder(int8) is int8  # int8 is an explicit choice, never swapped
    assert engines.fastest_fp32_encoder(fast) is fast
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "onnxruntime" else real(name, *a))
    engines._MEMO.clear()
    assert engines.fastest_fp32_encoder(bert, tmp_path) is bert  # without ONNX Runtime: torch itself


def test_real_model_default_engine_keeps_every_cosine(encoder, tmp_path) -> None:
    """all-MiniLM-L6-v2 on the demo pairs: each vector within the tolerance, so each pair's cosine moves by at
    most 2 x tolerance (a relative error e of both unit vectors moves their cosine by <= 2e)."""
    from isoscope.data import load_pairs
    from isoscope.geometry.pairs import cosine_pairs
    from isoscope.paths import DEMO_PAIRS

    pairs = load_pairs(DEMO_PAIRS)
    n = len(pairs)
    fast = engines.fastest_fp32_encoder(encoder, tmp_path)
    assert engines.engine_in_use(fast) == "ONNX Runtime fp32"
    config = EmbedConfig(max_length=128)
    a, b = (
        encode(encoder, pairs.texts, "mean", config=config),
        encode(fast, pairs.texts, "mean", config=config),
    )  # (2n, 384)
    assert _relative(b, a) <= FP32_ENGINE_TOLERANCE
    ca, cb = cosine_pairs(a[:n], a[n:]), cosine_pairs(b[:n], b[n:])
    assert np.abs(ca - cb).max() <= 2 * FP32_ENGINE_TOLERANCE
