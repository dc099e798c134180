"""Benchmark isoscope.encode.embed.encode in fp32 and int8 against sentence-transformers (fp32) on the same model and sentences.

Usage (from the repo root)::

    HF_HUB_OFFLINE=1 .venv/bin/python bench/encode.py            # STS-B test + dev sentences, best of 3
    HF_HUB_OFFLINE=1 .venv/bin/python bench/encode.py --quick    # the sentences of 250 STS-B test pairs

The three engines run in this process on the embedded all-MiniLM-L6-v2 with the same batch size and max length,
rotating which goes first; each rate is the best of ``--repeat`` runs. Our cache is disabled; the int8 model
(isoscope.encode.quantize, ONNX Runtime) is built before timing (``int8_build_s``: export + quantisation, or a read of
the on-disk int8 cache). The fp32 outputs are compared after L2 normalisation (sentence-transformers normalises
this model's vectors). ``cpu_ratio`` compares the CPU time of the process instead of wall time: steadier when
other jobs share the cores. ``int8_spearman_loss``: STS-B test Spearman (x100, mean pooling) of our fp32
vectors minus that of the int8 ones, on every test pair (the first 250 with ``--quick``).

Prints a human-readable summary, then as its LAST line one JSON object. Targets: ``ratio`` (ours fp32 / theirs)
>= 1, ``int8_ratio`` (ours int8 / theirs fp32) >= 1.5, ``int8_spearman_loss`` <= 0.5.
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

from isoscope.data import load_pairs  # noqa: E402
from isoscope.encode.embed import EmbedConfig, encode  # noqa: E402
from isoscope.encode.models import default_model_path, load_encoder  # noqa: E402
from isoscope.encode.quantize import quantize_encoder  # noqa: E402
from isoscope.geometry.pairs import correlations, cosine_pairs, l2_normalize  # noqa: E402
from isoscope.paths import stsb_dir  # noqa: E402

STSB_DIR = stsb_dir()
TARGET_RATIO = 1.0
TARGET_INT8_RATIO = 1.5
TARGET_INT8_LOSS = 0.5
QUICK_PAIRS = 250


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


def test_spearman(vectors: np.ndarray, texts: list[str], n_pairs: int | None) -> float:
    """STS-B test Spearman (x100) of cosine, from ``vectors`` (one row per text of ``texts``)."""
    pairs = load_pairs(STSB_DIR / "stsb-en-test.csv")
    n = n_pairs or len(pairs.sentence1)
    row = {t: i for i, t in enumerate(texts)}
    a = vectors[[row[s] for s in pairs.sentence1[:n]]]  # (n, d)
    b = vectors[[row[s] for s in pairs.sentence2[:n]]]  # (n, d)
    return correlations(cosine_pairs(a, b), np.asarray(pairs.scores[:n], float))["spearman"]


def quick_sentences() -> list[str]:
    pairs = load_pairs(STSB_DIR / "stsb-en-test.csv")
    return list(dict.fromkeys(pairs.sentence1[:QUICK_PAIRS] + pairs.sentence2[:QUICK_PAIRS]))


def run(quick: bool, repeat: int, batch_size: int, max_length: int) -> dict[str, object]:
    from sentence_transformers import SentenceTransformer

    texts = quick_sentences() if quick else stsb_sentences(("test", "dev"), None)
    encoder = load_encoder()
    start = time.perf_counter()
    encoder8 = quantize_encoder(encoder)
    int8_build_s = time.perf_counter() - start
    st = SentenceTransformer(default_model_path(), device="cpu")
    st.max_seq_length = max_length
    config = EmbedConfig(batch_size=batch_size, max_length=max_length)

    def ours() -> np.ndarray:
        return encode(encoder, texts, "mean", config=config, cache=None)

    def ours_int8() -> np.ndarray:
        return encode(encoder8, texts, "mean", config=config, cache=None)

    def theirs() -> np.ndarray:
        return st.encode(texts, batch_size=batch_size, show_progress_bar=False, convert_to_numpy=True)

    # warm-up (first-call allocations, thread pools) on a slice, not timed
    encode(encoder, texts[:batch_size], "mean", config=config, cache=None)
    encode(encoder8, texts[:batch_size], "mean", config=config, cache=None)
    st.encode(texts[:batch_size], batch_size=batch_size, show_progress_bar=False)

    engines = [("ours", ours), ("theirs", theirs), ("ours_int8", ours_int8)]
    best = {name: float("inf") for name, _ in engines}
    best_cpu = dict(best)
    outputs: dict[str, np.ndarray] = {}
    for i in range(repeat):
        order = engines[i % 3 :] + engines[: i % 3]  # each engine goes first once every three runs
        for name, fn in order:
            seconds, cpu, outputs[name] = timed(fn)
            best[name] = min(best[name], seconds)
            best_cpu[name] = min(best_cpu[name], cpu)
            logging.info("run %d %s: %.2f s wall, %.2f s CPU", i, name, seconds, cpu)
    diff = float(np.abs(l2_normalize(outputs["ours"]) - l2_normalize(outputs["theirs"])).max())
    int8_cos = float(np.sum(l2_normalize(outputs["ours"]) * l2_normalize(outputs["ours_int8"]), axis=1).min())
    rate_ours, rate_theirs = len(texts) / best["ours"], len(texts) / best["theirs"]
    rate_int8 = len(texts) / best["ours_int8"]
    n_pairs = QUICK_PAIRS if quick else None
    spearman_fp32 = test_spearman(outputs["ours"], texts, n_pairs)
    spearman_int8 = test_spearman(outputs["ours_int8"], texts, n_pairs)
    loss = spearman_fp32 - spearman_int8
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
        "ours_int8_sentences_per_s": round(rate_int8, 1),
        "int8_ratio": round(rate_int8 / rate_theirs, 3),
        "int8_cpu_ratio": round(best_cpu["theirs"] / best_cpu["ours_int8"], 3),
        "int8_vs_fp32_speedup": round(rate_int8 / rate_ours, 3),
        "int8_build_s": round(int8_build_s, 1),
        "stsb_test_pairs": n_pairs or "all",
        "fp32_spearman": round(spearman_fp32, 2),
        "int8_spearman": round(spearman_int8, 2),
        "int8_spearman_loss": round(loss, 2),
        "int8_min_cosine_to_fp32": round(int8_cos, 4),
        "target_int8_ratio": TARGET_INT8_RATIO,
        "target_int8_spearman_loss": TARGET_INT8_LOSS,
        "int8_meets_target": bool(rate_int8 / rate_theirs >= TARGET_INT8_RATIO and loss <= TARGET_INT8_LOSS),
        "load_avg_1min": round(os.getloadavg()[0], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"the sentences of {QUICK_PAIRS} STS-B test pairs")
    parser.add_argument(
        "--repeat", type=int, default=None, help="timed runs per engine; the best counts (default 3, 2 with --quick)"
    )
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(message)s")
    repeat = args.repeat if args.repeat is not None else (2 if args.quick else 3)
    result = run(args.quick, repeat, args.batch_size, args.max_length)
    print(f"{result['n_sentences']} sentences, batch {args.batch_size}, max length {args.max_length}")
    print(f"  ours (isoscope.encode.embed.encode):          {result['ours_sentences_per_s']:8.1f} sentences/s")
    print(f"  sentence-transformers .encode:     {result['sentence_transformers_sentences_per_s']:8.1f} sentences/s")
    print(
        f"  ratio ours/theirs: {result['ratio']:.3f} (target >= {TARGET_RATIO}); by CPU time {result['cpu_ratio']:.3f}"
    )
    print(f"  max |diff| of normalized vectors: {result['max_abs_diff_normalized']:.2e}")
    print(
        f"  ours int8 (ONNX Runtime):          {result['ours_int8_sentences_per_s']:8.1f} sentences/s, "
        f"int8_ratio {result['int8_ratio']:.3f} (target >= {TARGET_INT8_RATIO}); by CPU time {result['int8_cpu_ratio']:.3f}"
    )
    print(
        f"  STS-B test Spearman (mean): fp32 {result['fp32_spearman']:.2f}, int8 {result['int8_spearman']:.2f}, "
        f"loss {result['int8_spearman_loss']:.2f} (target <= {TARGET_INT8_LOSS}); load average {result['load_avg_1min']}"
    )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
