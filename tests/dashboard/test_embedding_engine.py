"""dashboard/services/embeddings.py: the app embeds corpora on the fastest fp32-equal engine, names it, and gives
the torch model's vectors within FP32_ENGINE_TOLERANCE; the int8 key stays int8."""

from __future__ import annotations

import numpy as np

from isoscope.dashboard.services import embeddings
from isoscope.dashboard.services.models import ModelKey
from isoscope.encode.embed import EmbedConfig, encode
from isoscope.encode.models import load_encoder
from isoscope.encode.precision import FP32_ENGINE_TOLERANCE

TEXTS = [
    "A man is playing a guitar.",
    "The cat sat on the mat while the dog slept.",
    "Stock markets fell sharply after the announcement.",
    "ok",
]


def test_the_app_embeds_on_onnx_runtime_within_the_fp32_tolerance(tmp_cache) -> None:
    assert embeddings.engine_label(ModelKey()) == "ONNX Runtime fp32"
    assert embeddings.engine_label(ModelKey(), ["layer:3"]) == "ONNX Runtime fp32"  # the all-layers export passes too
    got = embeddings.embed_many(ModelKey(), TEXTS, ["mean", "layer:3"], 128)
    torch_fp32 = load_encoder()
    for pooling, vectors in got.items():
        want = encode(torch_fp32, TEXTS, pooling, config=EmbedConfig(max_length=128))  # (4, 384)
        rel = np.linalg.norm(vectors.array - want, axis=1) / np.linalg.norm(want, axis=1)
        assert rel.max() <= FP32_ENGINE_TOLERANCE, pooling


def test_int8_stays_int8(tmp_cache) -> None:
    assert embeddings.engine_label(ModelKey("", "int8")) == "ONNX Runtime int8"
