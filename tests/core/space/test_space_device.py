"""isoscope.embed(..., device=, dtype=): the model where it was asked for, float32 vectors, provenance that says so."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import isoscope
from isoscope.encode.embed import encode
from isoscope.errors import InputError

TEXTS = ["A man plays a guitar.", "Stocks fell sharply today.", "The cat sat on the mat.", "Rain is expected."]


def test_embed_on_the_cpu_in_bfloat16(tmp_cache):
    space = isoscope.embed(TEXTS, device="cpu", dtype="bfloat16", cache=tmp_cache, progress=False)
    assert space.encoder.device == "cpu" and space.encoder.dtype == "bfloat16"
    assert space.encoder.model.dtype == torch.bfloat16
    provenance = space.embedding.provenance()
    assert provenance["device"] == "cpu" and provenance["dtype"] == "bfloat16"
    assert space.vectors.dtype == np.float32
    np.testing.assert_array_equal(space.vectors, encode(space.encoder, TEXTS, space.embedding.pooling))


def test_an_encoder_is_used_where_it_was_loaded(encoder, tmp_cache):
    space = isoscope.embed(TEXTS, encoder, device="cpu", dtype="float32", cache=tmp_cache, progress=False)
    assert space.encoder is encoder and space.embedding.provenance()["device"] == "cpu"
    with pytest.raises(InputError, match="load_encoder"):
        isoscope.embed(TEXTS, encoder, dtype="bfloat16", progress=False)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA GPU")
def test_a_device_this_machine_lacks_is_refused(tmp_cache):
    with pytest.raises(InputError, match="no usable CUDA GPU"):
        isoscope.embed(TEXTS, device="cuda", progress=False)
