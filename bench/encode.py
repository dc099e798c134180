"""Benchmark core.embed.encode against sentence-transformers on the same model and sentences.

Usage (from the repo root)::

    HF_HUB_OFFLINE=1 .venv/bin/python bench/encode.py            # STS-B test + dev sentences, best of 3
    HF_HUB_OFFLINE=1 .venv/bin/python bench/encode.py --quick    # 500 STS-B test sentences, under a minute

Both engines run in this process on the embedded all-MiniLM-L6-v2 with the same batch size and max length,
alternating which goes first; each rate is the best of ``--repeat`` runs. Our cache is disabled. The outputs
are compared after L2 normalisation (sentence-transformers normalises this model's vectors). ``cpu_ratio`` compares
the CPU time of the process instead of wall time: steadier when other jobs share the cores.

Prints a human-readable summary, then as its LAST line one JSON object. Target: ``ratio`` (ours / theirs) >= 1.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from core.data import load_pairs  # noqa: E402
from core.embed import EmbedConfig, encode  # noqa: E402
from core.evaluate import l2_normalize  # noqa: E402
from core.models import default_model_path, load_encoder  # noqa: E402
from core.paths import stsb_dir  # noqa: E402

STSB_DIR = stsb_dir()
TARGET_RATIO = 1.0


def stsb_sentences(splits: tuple[str, ...], limit: int | None) -> list[str]:
    """Unique sentences of the given STS-B splits, in first-seen order (at most ``limit``)."""
    seen: dict[str, None] = {}
    for split in splits:
        pairs = load_pairs(STSB_DIR / f"stsb-en-{split}.csv")
        for s in pairs.sentence1 + pairs.sentence2:
            seen.setdefault(s, None)
    texts = list(seen)
    return texts[:limit] if limit else texts


def timed(fn: Callable[[], np.ndarray]) -> tuple[float, float, np.ndarray]:
    """(wall seconds, CPU seconds of this process, result) of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - wall, time.process_time() - cpu, out


def run(quick: bool, repeat: int, batch_size: int, max_length: int) -> dict[str, object]:
    from sentence_transformers import SentenceTransformer

    texts = stsb_sentences(("test",) if quick else ("test", "dev"), 500 if quick else None)
    encoder = load_encoder()
    st = SentenceTransformer(default_model_path(), device="cpu")
    st.max_seq_length = max_length
    config = EmbedConfig(batch_size=batch_size, max_length=max_length)

    def ours() -> np.ndarray:
        return encode(encoder, texts, "mean", config, cache=None)

    def theirs() -> np.ndarray:
        return st.encode(texts, batch_size=batch_size, show_progress_bar=False, convert_to_numpy=True)

    # warm-up (first-call allocations, thread pools) on a slice, not timed
    encode(encoder, texts[:batch_size], "mean", config, cache=None)
    st.encode(texts[:batch_size], batch_size=batch_size, show_progress_bar=False)

    best = {"ours": float("inf"), "theirs": float("inf")}
    best_cpu = dict(best)
    outputs: dict[str, np.ndarray] = {}
    for i in range(repeat):
        order = (("ours", ours), ("theirs", theirs)) if i % 2 == 0 else (("theirs", theirs), ("ours", ours))
        for name, fn in order:
            seconds, cpu, outputs[name] = timed(fn)
            best[name] = min(best[name], seconds)
            best_cpu[name] = min(best_cpu[name], cpu)
            logging.info("run %d %s: %.2f s wall, %.2f s CPU", i, name, seconds, cpu)
    diff = float(np.abs(l2_normalize(outputs["ours"]) - l2_normalize(outputs["theirs"])).max())
    rate_ours, rate_theirs = len(texts) / best["ours"], len(texts) / best["theirs"]
    return {
        "bench": "encode",
        "mode": "quick" if quick else "full",
        "n_sentences": len(texts),
        "batch_size": batch_size,
        "max_length": max_length,
        "repeat": repeat,
        "torch_threads": torch.get_num_threads(),
        "ours_sentences_per_s": round(rate_ours, 1),
        "sentence_transformers_sentences_per_s": round(rate_theirs, 1),
        "ratio": round(rate_ours / rate_theirs, 3),
        "cpu_ratio": round(best_cpu["theirs"] / best_cpu["ours"], 3),  # less sensitive to a busy machine
        "target_ratio": TARGET_RATIO,
        "meets_target": bool(rate_ours / rate_theirs >= TARGET_RATIO),
        "max_abs_diff_normalized": diff,
        "outputs_agree": diff < 1e-4,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="500 STS-B test sentences (under a minute)")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per engine; the best counts (default 3)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(message)s")
    result = run(args.quick, args.repeat, args.batch_size, args.max_length)
    print(f"{result['n_sentences']} sentences, batch {args.batch_size}, max length {args.max_length}")
    print(f"  ours (core.embed.encode):          {result['ours_sentences_per_s']:8.1f} sentences/s")
    print(f"  sentence-transformers .encode:     {result['sentence_transformers_sentences_per_s']:8.1f} sentences/s")
    print(
        f"  ratio ours/theirs: {result['ratio']:.3f} (target >= {TARGET_RATIO}); by CPU time {result['cpu_ratio']:.3f}"
    )
    print(f"  max |diff| of normalized vectors: {result['max_abs_diff_normalized']:.2e}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
