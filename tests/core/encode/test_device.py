"""Devices and dtypes on the CPU (isoscope.encode.device): auto resolution, a refused cuda in one line, dtype in the
cache key, bfloat16 vectors against float32, the fit check and the out-of-memory backoff under a real limit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

from isoscope.encode.device import (
    DTYPES,
    available_devices,
    check_dtype,
    check_fits,
    parse_device,
    parse_dtype,
    resolve_device,
)
from isoscope.encode.embed import CachedTexts, EmbedConfig, encode
from isoscope.encode.engines import fastest_fp32_encoder
from isoscope.encode.models import default_model_path, load_encoder, parameter_count, with_precision
from isoscope.encode.quantize import quantize_encoder
from isoscope.errors import InputError

TEXTS = [
    "A man is playing a guitar on a small stage.",
    "Stock markets fell sharply in early trading today.",
    "ok",
    "The cat sat on the mat while the dog slept by the fire.",
    "A woman is slicing onions in the kitchen.",
    "Heavy rain is expected across the north tomorrow.",
]
HAS_CUDA = torch.cuda.is_available()
HAS_MPS = bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_available())


def one_line(exc: pytest.ExceptionInfo) -> str:
    message = str(exc.value)
    assert "\n" not in message, message
    return message


@pytest.mark.parametrize("text", ["auto", "cpu", "cuda", "cuda:0", "cuda:12", "mps", " CUDA:1 ", ""])
def test_device_spellings_parse(text):
    assert parse_device(text) in {"auto", "cpu", "cuda", "mps"} | {f"cuda:{i}" for i in range(13)}


@pytest.mark.parametrize("text", ["gpu", "cuda:", "cuda:x", "cuda0", "tpu", "cpu:0", "cuda:1:2"])
def test_bad_device_syntax_is_one_line(text):
    with pytest.raises(InputError) as exc:
        parse_device(text)
    assert "auto, cpu, cuda, cuda:N" in one_line(exc)


def test_auto_picks_cuda_then_mps_then_cpu():
    want = "cuda" if HAS_CUDA else "mps" if HAS_MPS else "cpu"
    assert resolve_device("auto").type == want
    assert resolve_device(None).type == want
    assert resolve_device("cpu") == torch.device("cpu")
    listed = available_devices()
    assert listed[:2] == ["auto", "cpu"] and ("mps" in listed) == HAS_MPS
    assert any(d.startswith("cuda:") for d in listed) == HAS_CUDA


@pytest.mark.skipif(HAS_CUDA, reason="this machine has a CUDA GPU: cuda is not refused here")
@pytest.mark.parametrize("text", ["cuda", "cuda:0", "cuda:3"])
def test_cuda_without_one_is_refused_in_one_line(text):
    with pytest.raises(InputError) as exc:
        resolve_device(text)
    message = one_line(exc)
    assert f"device {text}" in message and "--device cpu" in message
    with pytest.raises(InputError):  # before anything is loaded
        load_encoder(None, device=text)


def test_dtype_names_and_float16_refused_on_the_cpu():
    assert DTYPES == ("float32", "float16", "bfloat16")
    assert parse_dtype("bf16") == "bfloat16" and parse_dtype(" FP32 ") == "float32"
    with pytest.raises(InputError) as exc:
        parse_dtype("int4")
    assert "float32, float16, bfloat16" in one_line(exc)
    cpu = torch.device("cpu")
    assert check_dtype(cpu, "bfloat16") == "bfloat16"
    with pytest.raises(InputError) as exc:
        check_dtype(cpu, "float16")
    assert "--dtype bfloat16" in one_line(exc)
    assert check_dtype(torch.device("cuda", 0), "float16") == "float16"  # a GPU may run it (nothing allocated)


def test_int8_runs_on_the_cpu_in_float32_only(encoder):
    with pytest.raises(InputError) as exc:
        load_encoder(None, precision="int8", dtype="bfloat16")
    assert "float32" in one_line(exc)
    bf16 = load_encoder(None, device="cpu", dtype="bfloat16")
    with pytest.raises(InputError):
        with_precision(bf16, "int8")
    with pytest.raises(InputError) as exc:
        quantize_encoder(bf16)
    assert "float32 model on the CPU" in one_line(exc)


def test_fit_check_refuses_in_one_line_what_cannot_fit():
    gpu = torch.device("cuda", 0)
    eight_gb = 8 * 2**30
    check_fits(name="m", parameters=1_000_000_000, dtype="float32", device=gpu, free=eight_gb)  # 3.7 GB: fits
    check_fits(name="m", parameters=10**12, dtype="float32", device=torch.device("cpu"), free=None)  # unchecked
    with pytest.raises(InputError) as exc:
        check_fits(name="big", parameters=3_000_000_000, dtype="float32", device=gpu, free=eight_gb)
    message = one_line(exc)  # 11.2 GB in float32, 5.6 GB in bfloat16
    assert "11.2 GB" in message and "--dtype bfloat16 (5.6 GB)" in message and "8.0 GB free" in message
    with pytest.raises(InputError) as exc:
        check_fits(name="huge", parameters=7_000_000_000, dtype="bfloat16", device=gpu, free=eight_gb)
    assert "a smaller model" in one_line(exc)


def test_parameter_count_reads_the_safetensors_headers(encoder):
    """Every parameter, and at most the buffers besides (the file holds BERT's position ids, 512 values)."""
    folder = Path(default_model_path())
    count = parameter_count(folder, encoder.model.config)
    params = sum(p.numel() for p in encoder.model.parameters())
    buffers = sum(b.numel() for b in encoder.model.buffers())
    assert params <= count <= params + buffers


def test_dtype_is_in_the_cache_key(encoder, tmp_cache):
    bf16 = load_encoder(None, device="cpu", dtype="bfloat16")
    assert bf16.dtype == "bfloat16" and bf16.model.dtype == torch.bfloat16 and bf16.device == "cpu"
    assert bf16.fingerprint == encoder.fingerprint + "+bfloat16"
    named = CachedTexts.of(encoder, TEXTS, config=EmbedConfig(), cache=tmp_cache)
    assert named.key(bf16, "mean") != named.key(encoder, "mean")
    fp32 = encode(encoder, TEXTS, "mean", cache=tmp_cache)  # cached first
    cached_bf16 = encode(bf16, TEXTS, "mean", cache=tmp_cache)
    fresh_bf16 = encode(bf16, TEXTS, "mean")
    np.testing.assert_array_equal(cached_bf16, fresh_bf16)  # computed in bfloat16, not read from float32's entry
    assert not np.array_equal(cached_bf16, fp32)


def test_bfloat16_vectors_are_float32_and_close_to_float32(encoder):
    """bfloat16 keeps 8 significant bits (7 stored + 1 implicit): each rounding of a weight or an activation moves
    it by at most u = 2^-8 = 3.9e-3 relative. torch accumulates bf16 products in float32, so a matrix product's
    error is the rounding of its two inputs and of its output, ~3u; a layer holds two such blocks (attention and the
    feed-forward, each added to the residual stream), so each of the L = 6 layers adds at most ~2 x 3u = 6u
    relative to the vector, and they add up: |v_bf16 - v_fp32| / |v_fp32| <= 6 L u = 0.14 in the worst ordering
    (measured: 1.8e-2). The cosine of two vectors with relative difference e is >= 1 - e^2 / 2: 0.99. The vectors
    must differ, too (bf16 really ran): by at least float32's round-off, 2^-24, many times over."""
    bf16 = load_encoder(None, device="cpu", dtype="bfloat16")
    u, layers = 2.0**-8, encoder.num_layers
    bound = 6 * layers * u
    ref = encode(encoder, TEXTS, "mean")  # (n, 384)
    got = encode(bf16, TEXTS, "mean")
    assert got.dtype == np.float32 and got.shape == ref.shape
    rel = np.linalg.norm(got - ref, axis=1) / np.linalg.norm(ref, axis=1)
    assert rel.max() <= bound, rel
    cos = (got * ref).sum(1) / np.linalg.norm(got, axis=1) / np.linalg.norm(ref, axis=1)
    assert cos.min() >= 1 - bound**2 / 2, cos
    assert rel.min() > 1e3 * 2.0**-24  # not float32's vectors under another name


def test_the_onnx_engines_run_on_the_cpu_in_float32_only(encoder):
    bf16 = load_encoder(None, device="cpu", dtype="bfloat16")
    assert fastest_fp32_encoder(bf16) is bf16  # a half dtype stays a torch model


OOM_SCRIPT = textwrap.dedent(
    """
    import json, logging, resource, sys
    import numpy as np, torch
    from tests.tiny_models import tiny_bert
    from isoscope.encode.embed import EmbedConfig, encode

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    # a feed-forward block of 4096 per token: a batch of 16 texts of 400 tokens holds (16, 400, 4096) float32
    # activations, 105 MB each; a batch of 2 holds 13 MB
    enc = tiny_bert(hidden_size=64, intermediate_size=4096, max_position_embeddings=512)
    texts = [("word%d " % i) * 200 for i in range(16)]  # 400 tokens each once truncated
    ref = encode(enc, texts, "mean", config=EmbedConfig(batch_size=1, max_length=400, batch_tokens=0))

    def address_space():
        for line in open("/proc/self/status"):
            if line.startswith("VmSize"):
                return int(line.split()[1]) * 1024

    resource.setrlimit(resource.RLIMIT_AS, (address_space() + 120 * 2**20, resource.RLIM_INFINITY))
    batch = enc.tokenizer(texts, truncation=True, max_length=400, padding=True, return_tensors="pt")
    try:  # the limit is real: the whole batch at once cannot be allocated
        with torch.inference_mode():
            enc.model(**batch)
        whole = "fits"
    except RuntimeError as exc:
        whole = str(exc).splitlines()[0][:200]
    del batch
    got = encode(enc, texts, "mean", config=EmbedConfig(batch_size=16, max_length=400, batch_tokens=0))
    rel = np.linalg.norm(got - ref, axis=1) / np.linalg.norm(ref, axis=1)
    print(json.dumps({"whole": whole, "max_rel": float(rel.max()), "shape": list(got.shape)}))
    """
)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux's /proc to set an address-space limit")
def test_out_of_memory_halves_the_batch_under_a_real_allocation_limit(tmp_path):
    """RLIMIT_AS (the process's address space) set 120 MB above what the loaded tiny model uses: the whole batch
    of 16 texts cannot be allocated (torch's CPU allocator fails), so encode must back off to smaller batches and
    return every vector. Each text's vector does not depend on its batch (right padding, masked), so the vectors
    equal the one-by-one reference to float32 round-off: a relative 1e-5 is ~100 u over the model's few products."""
    script = tmp_path / "oom.py"
    script.write_text(OOM_SCRIPT, encoding="utf-8")
    root = Path(__file__).resolve().parents[3]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(root)}
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=root, env=env, timeout=300)
    if proc.returncode != 0 and "Cannot allocate memory" in proc.stderr and "Traceback" not in proc.stderr:
        pytest.skip(f"the platform refused the address-space limit itself: {proc.stderr.strip()[-200:]}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["whole"] != "fits" and "memory" in result["whole"].lower(), result
    assert "out of memory on cpu" in proc.stderr and "retrying in halves" in proc.stderr
    assert result["shape"] == [16, 64]
    assert result["max_rel"] <= 1e-5, result
