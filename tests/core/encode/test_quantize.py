"""isoscope.encode.quantize and the precision plumbing: int8 encoders through ONNX Runtime, on tiny random models and the real one.

Tolerances follow from int8 arithmetic, never exact values: each quantised matmul rounds its inputs to 255
levels of the batch's range and its weights to 255 levels of each output channel's range, so every layer adds a
relative error of the order of 1/255 of the range (a few percent of a typical value, where outliers stretch the
range); two to six layers compound to a relative error ``e`` of a few percent, and the cosine between int8 and
fp32 vectors is ``1 - e^2 / 2``: above 0.99 for a few percent. Kernels differ across CPUs (AVX2, VNNI, ARM), so
nothing is compared bit for bit. Everything kept in fp32 is the fp32 function up to float32 round-off, and is
checked tightly.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from isoscope.cache import ArrayCache
from isoscope.encode import quantize
from isoscope.encode.embed import EmbedConfig, encode, encode_many, token_vectors
from isoscope.encode.models import load_encoder, with_precision
from isoscope.encode.onnx_runtime import export_onnx
from isoscope.encode.precision import INT8_RECIPE, PRECISIONS, parse_precision, precision_suffix
from isoscope.errors import InputError
from isoscope.geometry.pairs import correlations, cosine_pairs, l2_normalize
from tests.tiny_models import tiny_bert, tiny_t5

TEXTS = [
    "A man is playing a guitar.",
    "Someone plays an instrument on a small stage in front of a quiet audience.",
    "short",
    "The cat sat on the mat while the dog slept.",
    "Stock markets fell sharply after the announcement.",
    "Rain is expected tomorrow.",
]
INT8_MIN_COSINE = 0.99  # 1 - e^2/2 for a relative error e of a few percent (module docstring)


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sum(l2_normalize(a) * l2_normalize(b), axis=1)  # (n,)


@pytest.fixture(scope="module")
def tiny():
    return tiny_bert(seed=3)


@pytest.fixture(scope="module")
def tiny_int8(tiny, tmp_path_factory):
    return quantize.quantize_encoder(tiny, cache_dir=tmp_path_factory.mktemp("int8"))


# --------------------------------------------------------------------------------------------- names


def test_precision_names() -> None:
    assert PRECISIONS == ("fp32", "int8")
    assert parse_precision(" INT8 ") == "int8"
    with pytest.raises(InputError, match="fp32, int8"):
        parse_precision("fp16")
    assert precision_suffix("fp32") == ""  # fp32 keys stay what they were
    assert INT8_RECIPE in precision_suffix("int8")


def test_load_encoder_rejects_a_bad_precision_before_loading() -> None:
    with pytest.raises(InputError, match="unknown precision 'half'"):
        load_encoder("/no/such/model", precision="half")  # the precision is checked before the path


# --------------------------------------------------------------------------------------------- tiny BERT


def test_int8_encoder_identity(tiny, tiny_int8) -> None:
    assert tiny_int8.precision == "int8" and tiny.precision == "fp32"
    assert (tiny_int8.engine, tiny.engine) == ("onnx", "torch")
    assert tiny_int8.engine_label == "ONNX Runtime int8"
    assert tiny_int8.fingerprint == tiny.fingerprint + precision_suffix("int8")
    assert (tiny_int8.num_layers, tiny_int8.hidden_size) == (tiny.num_layers, tiny.hidden_size)
    assert with_precision(tiny, "fp32") is tiny
    with pytest.raises(ValueError, match="cannot turn a int8 encoder into fp32"):
        with_precision(tiny_int8, "fp32")


@pytest.mark.parametrize("pooling", ["mean", "cls", "max", "last2avg", "first_last_avg", "layer:0", "layer:1"])
def test_int8_close_to_fp32_every_pooling(tiny, tiny_int8, pooling: str) -> None:
    a, b = encode(tiny, TEXTS, pooling), encode(tiny_int8, TEXTS, pooling)  # (6, 32) each
    assert b.shape == a.shape and b.dtype == np.float32
    if pooling == "layer:0":  # the embedding output: no Linear before it, so fp32 arithmetic throughout
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-5)
    else:
        assert _cosines(a, b).min() > INT8_MIN_COSINE
        assert not np.array_equal(a, b)  # really quantised


def test_quantising_leaves_the_fp32_model_untouched(tmp_path) -> None:
    enc = tiny_bert(seed=5)
    before = encode(enc, TEXTS, "mean")  # a padded batch: tracing the model itself used to break this path
    export_onnx(enc, tmp_path / "m.onnx")
    np.testing.assert_array_equal(encode(enc, TEXTS, "mean"), before)


def test_everything_kept_in_fp32_is_the_fp32_function(tiny, tmp_path) -> None:
    kept = quantize.quantize_encoder(tiny, quantize.Int8Config(keep_fp32=("*",)), cache_dir=tmp_path)
    assert kept.fingerprint != tiny.fingerprint + precision_suffix("int8")  # another recipe, another key
    a, b = encode(tiny, TEXTS, "mean"), encode(kept, TEXTS, "mean")
    np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)  # float32 kernels of two libraries


def test_linear_nodes_name_the_torch_modules(tiny, tmp_path) -> None:
    path = tmp_path / "fp32.onnx"
    export_onnx(tiny, path)
    modules = set(quantize.linear_nodes(path).values())
    linears = {n for n, m in tiny.model.named_modules() if isinstance(m, torch.nn.Linear)}
    encoder_linears = {n for n in linears if n.startswith("encoder.layer.")}
    assert encoder_linears <= modules <= linears  # the pooler feeds no hidden state and may be pruned
    assert len(encoder_linears) == 6 * tiny.num_layers
    kept = quantize.quantize_onnx(path, tmp_path / "int8.onnx", quantize.Int8Config(only=("encoder.layer.0.*",)))
    assert set(kept) == modules - {n for n in modules if n.startswith("encoder.layer.0.")}


def test_int8_model_is_cached_on_disk(tiny, tmp_path) -> None:
    config = quantize.Int8Config(per_channel=False)
    first = quantize.build_int8_onnx(tiny, config, cache_dir=tmp_path)
    model = tmp_path / f"{quantize.int8_key(tiny, config)}.onnx"
    stamp = model.stat().st_mtime_ns
    again = quantize.build_int8_onnx(tiny, config, cache_dir=tmp_path)
    assert again == first and model.stat().st_mtime_ns == stamp  # read, not rebuilt
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([model.name, model.with_suffix(".json").name])


def test_int8_uses_7_bit_weights_by_default() -> None:
    """reduce_range: u8 x s8 products summed in pairs by vpmaddubsw (AVX2, AVX-512F) overflow int16 with 8-bit
    weights (255 * 127 * 2 > 32767); 7-bit weights (|w| <= 63) cannot (255 * 63 * 2 = 32130)."""
    assert quantize.DEFAULT_CONFIG.reduce_range
    assert 255 * 127 * 2 > 2**15 - 1 >= 255 * 63 * 2
    assert quantize.Int8Config(reduce_range=False).key() != quantize.DEFAULT_CONFIG.key()


def test_only_the_export_a_pooling_needs_is_built(tiny, tmp_path) -> None:
    int8 = quantize.quantize_encoder(tiny, quantize.Int8Config(per_channel=False), cache_dir=tmp_path)
    assert len(list(tmp_path.glob("*.onnx"))) == 1  # the last hidden state only: mean, cls, max
    encode(int8, TEXTS, "mean")
    assert len(list(tmp_path.glob("*.onnx"))) == 1
    encode(int8, TEXTS, "layer:1")  # every hidden state: a second export, made on first use
    assert len(list(tmp_path.glob("*.onnx"))) == 2


def test_embedding_cache_keeps_precisions_apart(tiny, tiny_int8, tmp_path) -> None:
    cache = ArrayCache(tmp_path)
    a = encode_many(tiny, TEXTS, ["mean"], cache=cache)["mean"]
    b = encode_many(tiny_int8, TEXTS, ["mean"], cache=cache)["mean"]
    assert len(list(tmp_path.glob("*.npy"))) == 2
    assert not np.array_equal(a, b)
    np.testing.assert_array_equal(encode_many(tiny_int8, TEXTS, ["mean"], cache=cache)["mean"], b)


def test_token_vectors_and_static_embeddings_of_int8(tiny, tiny_int8) -> None:
    a, b = token_vectors(tiny, TEXTS), token_vectors(tiny_int8, TEXTS)
    for ids_a, ids_b, va, vb in zip(a.token_ids, b.token_ids, a.vectors, b.vectors, strict=True):
        np.testing.assert_array_equal(ids_a, ids_b)
        assert _cosines(va, vb).min() > INT8_MIN_COSINE
    emb = tiny_int8.model.get_input_embeddings().weight
    assert emb is tiny.model.get_input_embeddings().weight  # static token vectors stay fp32


def test_t5_int8_encoder_and_fp32_decoder(tmp_path) -> None:
    t5 = tiny_t5(seed=2)
    t5_int8 = quantize.quantize_encoder(t5, cache_dir=tmp_path)
    assert t5_int8.is_encoder_decoder
    for pooling in ("enc_first", "enc_mean", "encdec_first", "layer:2"):
        a, b = encode(t5, TEXTS, pooling), encode(t5_int8, TEXTS, pooling)
        assert _cosines(a, b).min() > INT8_MIN_COSINE, pooling


# --------------------------------------------------------------------------------------------- the real model


def test_real_model_int8_keeps_the_sts_ranking(encoder) -> None:
    """All-MiniLM-L6-v2 on the demo pairs: vectors close to fp32 and nearly the same Spearman."""
    from isoscope.cache import ArrayCache
    from isoscope.data import load_pairs
    from isoscope.paths import DEMO_PAIRS

    pairs = load_pairs(DEMO_PAIRS)
    n = len(pairs)
    int8 = with_precision(encoder, "int8")
    config = EmbedConfig(max_length=128)
    cache = ArrayCache()  # the session's: the fp32 vectors are the app's and the other tests'
    a, b = (
        encode(encoder, pairs.texts, "mean", config=config, cache=cache),
        encode(int8, pairs.texts, "mean", config=config),
    )
    cos = _cosines(a, b)
    # a short sentence padded next to long ones gets fewer of the batch's 255 levels: a few percent of error
    assert cos.mean() > INT8_MIN_COSINE and cos.min() > 0.95
    gold = np.asarray(pairs.scores, float)
    s32 = correlations(cosine_pairs(a[:n], a[n:]), gold)["spearman"]
    s8 = correlations(cosine_pairs(b[:n], b[n:]), gold)["spearman"]
    # a cosine change of ~1e-2 moves a few ranks; 1.5 points is ~3 of 165 pairs swapping far (fewer of 974)
    assert abs(s32 - s8) < 1.5


def test_without_onnxruntime_int8_is_one_line_that_says_what_to_install(tiny, monkeypatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "onnxruntime" else real(name, *a))
    with pytest.raises(InputError, match="needs onnxruntime: pip install onnxruntime onnx"):
        quantize.quantize_encoder(tiny)
