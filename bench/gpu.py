"""Isoscope on a CUDA GPU against sentence-transformers' ``encode`` on the same GPU, same texts, one run.

Usage (from the repo root)::

    make bench-gpu                                  # full: 100,000 texts side by side, then a 1M-text atlas
    make bench-gpu ARGS=--quick                     # 20,000 texts and a 50,000-text atlas, a minute or two
    .venv/bin/python bench/gpu.py --quick --device cpu --n 300 --atlas-n 3000   # the same code on the CPU (a check)

Engines, all on the embedded all-MiniLM-L6-v2 run as its recipe says (mean pooling, then normalise), the same texts (synthetic sentences,
``isoscope.atlas.synthetic``, seeded, plus the STS-B test sentences when ``../shared/data/stsb`` is there), the same
batch size (``--batch-size``, default 256) and max length (256): Isoscope in float32 and in bfloat16
(``isoscope.encode.device``: ``load_encoder(device=, dtype=)``), and ``SentenceTransformer(..., device=).encode`` in
float32 and in bfloat16 (the model cast with ``.to(torch.bfloat16)``). Each engine runs once to warm up, then
``--repeat`` timed rounds rotating which goes first, ``torch.cuda.synchronize()`` around each; the best wall time
counts. Every row: sentences/s; ``vs_st``: Isoscope's rate over sentence-transformers' at the same dtype;
``min_cos_vs_st_fp32``: the smallest cosine of a text's vector to sentence-transformers' float32 vector.

Atlas: ``isoscope.atlas.pipeline.build_atlas`` with the model on the GPU (float32) over ``--atlas-n`` synthetic
sentences (default 1,000,000; the kNN graph and the layout run on the CPU), stage seconds and texts/s of the
embedding stage.

Without a CUDA GPU (and ``--device cuda``, the default) it prints one JSON object saying so and exits 0. The LAST
stdout line is one JSON object; targets: ``fp32_vs_st`` >= 1 and ``bf16_vs_st`` >= 1 (Isoscope's length-sorted,
token-budget batches against sentence-transformers' own sorting), ``fp32_min_cos`` >= 0.99999, ``bf16_min_cos``
>= 0.99 (bfloat16's 8-bit mantissa: tests/core/encode/test_device.py argues the bound).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

TARGET_RATIO = 1.0
TARGET_FP32_COS = 0.99999
TARGET_BF16_COS = 0.99
Embed = Callable[[list[str]], np.ndarray]  # texts -> (n, d) float32


def texts_for(n: int) -> list[str]:
    """``n`` texts: the STS-B test sentences when found (real lengths), topped up with seeded synthetic sentences."""
    from isoscope.atlas.synthetic import synthetic_corpus

    found: list[str] = []
    stsb = REPO_ROOT.parent / "shared" / "data" / "stsb" / "stsb-en-test.csv"
    if stsb.exists():
        from isoscope.data import load_pairs

        pairs = load_pairs(stsb)
        found = list(dict.fromkeys(pairs.sentence1 + pairs.sentence2))[:n]
    return found + synthetic_corpus(n - len(found), 0)[0]


def engines(device: str, batch_size: int, max_length: int) -> dict[str, Embed]:
    import torch
    from sentence_transformers import SentenceTransformer

    from isoscope.encode.embed import EmbedConfig, encode
    from isoscope.encode.models import default_model_path, load_encoder

    config = EmbedConfig(batch_size=batch_size, max_length=max_length)
    iso32 = load_encoder(None, device)
    dtypes = ["float32", "bfloat16"]
    out: dict[str, Embed] = {}
    for dtype in dtypes:
        enc = iso32 if dtype == "float32" else load_encoder(None, device, dtype=dtype)
        out[f"isoscope_{dtype}"] = lambda t, enc=enc: encode(enc, t, config=config)
        st = SentenceTransformer(default_model_path(), device=device)
        st.max_seq_length = max_length
        if dtype == "bfloat16":
            st = st.to(torch.bfloat16)
        out[f"st_{dtype}"] = lambda t, st=st: np.asarray(
            st.encode(t, batch_size=batch_size, show_progress_bar=False, convert_to_numpy=False, convert_to_tensor=True)
            .float()
            .cpu()
        )
    return out


def _sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def time_engines(fns: dict[str, Embed], texts: list[str], repeat: int, device: str) -> tuple[dict, dict]:
    """(best wall seconds, vectors) per engine: one warm-up, then ``repeat`` rounds rotating the order."""
    names = list(fns)
    for name in names:  # warm-up: kernels, allocator pools, tokenizer caches
        fns[name](texts[:512])
    wall = {name: float("inf") for name in names}
    vectors: dict[str, np.ndarray] = {}
    for i in range(repeat):
        k = i % len(names)
        for name in names[k:] + names[:k]:
            _sync(device)
            start = time.perf_counter()
            vectors[name] = fns[name](texts)
            _sync(device)
            wall[name] = min(wall[name], time.perf_counter() - start)
            logging.info("round %d %-18s %.2f s", i, name, time.perf_counter() - start)
    return wall, vectors


def min_cosine(a: np.ndarray, b: np.ndarray) -> float:
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return float((a * b).sum(1).min())


def atlas_on(device: str, n: int, out: Path | None) -> dict:
    """A ``n``-text atlas with the model on ``device``: stage seconds and the embedding stage's texts/s."""
    from isoscope.atlas.pipeline import AtlasConfig, build_atlas
    from isoscope.atlas.synthetic import synthetic_corpus
    from isoscope.encode.models import load_encoder

    texts, _ = synthetic_corpus(n, 0)
    folder = out or Path(tempfile.mkdtemp(prefix="isoscope-gpu-atlas-"))
    run = build_atlas(load_encoder(None, device), texts, folder, config=AtlasConfig())
    secs = run.seconds
    return {
        "atlas_n": n,
        "atlas_engine": run.engine or None,
        "atlas_stage_seconds": {k: round(v, 1) for k, v in secs.items()},
        "atlas_embed_texts_per_s": round(n / secs["embed"], 1) if "embed" in secs else None,
        "atlas_seconds": round(sum(secs.values()), 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="20,000 texts and a 50,000-text atlas")
    ap.add_argument("--device", default="cuda", help="cuda (default), cuda:N; cpu only to check this script")
    ap.add_argument("--n", type=int, default=None, help="texts timed (default: 100,000; 20,000 with --quick)")
    ap.add_argument("--atlas-n", type=int, default=None, help="atlas texts (default: 1,000,000; 50,000 --quick)")
    ap.add_argument("--no-atlas", action="store_true", help="skip the atlas")
    ap.add_argument("--atlas-out", default=None, help="atlas folder (default: a new temporary folder)")
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--max-length", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=None, help="timed rounds (default: 3; 2 with --quick)")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(message)s")
    import torch

    if args.device.startswith("cuda") and not torch.cuda.is_available():
        build = "a CPU-only torch build" if torch.version.cuda is None else "no CUDA GPU visible"
        print(json.dumps({"bench": "gpu", "skipped": f"no CUDA GPU on this machine ({build})", "ok": True}))
        return
    n = args.n or (20_000 if args.quick else 100_000)
    atlas_n = args.atlas_n or (50_000 if args.quick else 1_000_000)
    repeat = args.repeat or (2 if args.quick else 3)
    texts = texts_for(n)
    gpu = torch.cuda.get_device_name(torch.device(args.device)) if args.device.startswith("cuda") else "none"
    start = time.perf_counter()
    wall, vectors = time_engines(engines(args.device, args.batch_size, args.max_length), texts, repeat, args.device)
    rate = {name: round(n / w, 1) for name, w in wall.items()}
    ref = vectors["st_float32"]
    result: dict[str, object] = {
        "bench": "gpu",
        "mode": "quick" if args.quick else "full",
        "device": args.device,
        "gpu": gpu,
        "torch": torch.__version__,
        "n": n,
        "batch_size": args.batch_size,
        "max_length": args.max_length,
        "sentences_per_s": rate,
        "fp32_vs_st": round(rate["isoscope_float32"] / rate["st_float32"], 2),
        "bf16_vs_st": round(rate["isoscope_bfloat16"] / rate["st_bfloat16"], 2),
        "fp32_min_cos": round(min_cosine(vectors["isoscope_float32"], ref), 7),
        "bf16_min_cos": round(min_cosine(vectors["isoscope_bfloat16"], ref), 7),
        "st_bf16_min_cos": round(min_cosine(vectors["st_bfloat16"], ref), 7),
        "peak_gpu_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2) if args.device.startswith("cuda") else None,
    }
    del vectors
    if not args.no_atlas:
        result.update(atlas_on(args.device, atlas_n, Path(args.atlas_out) if args.atlas_out else None))
    result["seconds"] = round(time.perf_counter() - start, 1)
    result["ok"] = bool(
        result["fp32_vs_st"] >= TARGET_RATIO
        and result["bf16_vs_st"] >= TARGET_RATIO
        and result["fp32_min_cos"] >= TARGET_FP32_COS
        and result["bf16_min_cos"] >= TARGET_BF16_COS
    )
    width = max(len(k) for k in rate)
    for name, r in rate.items():
        print(f"{name:<{width}}  {r:>10,.1f} sentences/s")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
