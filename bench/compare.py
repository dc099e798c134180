"""Benchmark isoscope.comparison: layer x layer CKA of all-MiniLM-L6-v2 against itself, and overlap@10 of two big spaces.

Usage (from the repo root)::

    HF_HUB_OFFLINE=1 .venv/bin/python bench/compare.py            # 5,000 STS-B sentences; 100,000 vectors
    HF_HUB_OFFLINE=1 .venv/bin/python bench/compare.py --quick    # 500 sentences; 10,000 vectors, under a minute

1. CKA per layer: the first ``--texts`` distinct sentences of STS-B train (then dev, test) are embedded
   ONCE with the poolings ``layer:0..6`` (one forward pass, cache off), then the 7 x 7 linear and debiased
   CKA matrix is computed twice, side by side: the one-list path (a model against itself: one stacked
   Gram) and the general A-vs-B path on copies (what two different models cost). Both must have a unit
   diagonal.
2. Overlap@10: two synthetic clustered spaces of ``--vectors`` x 384 (bench/index.py's generator; B is A
   rotated, plus noise of 0.25 per coordinate), every vector's exact 10 nearest neighbours in each space
   (``isoscope.comparison.neighbour_overlap``: numpy blocks, bounded memory), the per-text Jaccard and its mean,
   with the peak resident-memory growth; plus the feature-space CKA of the same pair (no n x n matrix),
   and a check that A against itself gives exactly 1 (on the first 5,000 vectors).

Each step records wall and process-CPU seconds: on a machine busy with other work the wall time can be
several times the CPU time. Prints a table, then as its LAST line one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402

from bench.index import PeakMemory, make_clustered  # noqa: E402
from isoscope.comparison import cka_matrix, neighbour_overlap  # noqa: E402

CPU_SECONDS: dict[str, float] = {}


def timed(fn, name: str) -> tuple[float, object]:
    """Wall seconds and result of ``fn()``; its process CPU seconds go to ``CPU_SECONDS[name]``."""
    start, cpu = time.perf_counter(), time.process_time()
    out = fn()
    CPU_SECONDS[name] = round(time.process_time() - cpu, 2)
    return time.perf_counter() - start, out


def stsb_sentences(n: int) -> list[str]:
    """The first ``n`` distinct sentences of STS-B train, then dev, then test."""
    from isoscope.data import load_pairs
    from isoscope.paths import stsb_dir

    seen: dict[str, None] = {}
    for split in ("train", "dev", "test"):
        path = stsb_dir() / f"stsb-en-{split}.csv"
        if not path.exists():
            raise SystemExit(f"STS-B not found at {path}; set ISOSCOPE_STSB_DIR")
        seen.update(dict.fromkeys(load_pairs(str(path)).texts))
        if len(seen) >= n:
            break
    return list(seen)[:n]


def bench_layers(n_texts: int) -> dict[str, object]:
    from isoscope.encode.embed import EmbedConfig, encode_many
    from isoscope.encode.models import load_encoder

    texts = stsb_sentences(n_texts)
    encoder = load_encoder()
    poolings = [f"layer:{i}" for i in range(encoder.num_layers + 1)]
    embed_s, vectors = timed(
        lambda: encode_many(encoder, texts, poolings, config=EmbedConfig(), cache=None), "embed_layers"
    )
    layers = [vectors[p] for p in poolings]  # (n, 384) each
    self_s, same = timed(lambda: cka_matrix(layers), "cka_layers_self")
    copies = [layer.copy() for layer in layers]
    pair_s, general = timed(lambda: cka_matrix(layers, copies), "cka_layers_a_vs_b")
    diag_error = float(np.abs(np.diag(general.linear) - 1.0).max())
    return {
        "layers_texts": len(texts),
        "layers_count": len(layers),
        "layers_embed_s": round(embed_s, 2),
        "cka_layers_self_s": round(self_s, 3),
        "cka_layers_a_vs_b_s": round(pair_s, 3),
        "cka_layers_unit_diagonal": bool(np.all(np.diag(same.linear) == 1.0)),
        "cka_layers_a_vs_b_max_diag_error": diag_error,
        "cka_layer0_vs_last_linear": round(float(same.linear[0, -1]), 4),
        "cka_layer0_vs_last_debiased": round(float(same.debiased[0, -1]), 4),
    }


def bench_overlap(n: int, d: int, seed: int) -> dict[str, object]:
    A = make_clustered(n, d, seed)  # (n, d) float32
    rng = np.random.default_rng(seed + 1)
    q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    B = (A @ q.astype(np.float32)).astype(np.float32)  # rotated: the same geometry...
    for start in range(0, n, 20_000):  # ...plus noise, in blocks
        B[start : start + 20_000] += 0.25 * rng.standard_normal((min(20_000, n - start), d)).astype(np.float32)
    memory = PeakMemory()
    cpu = time.process_time()
    overlap_s, result, peak_mib = memory.measure(lambda: neighbour_overlap(A, B, k=10))
    CPU_SECONDS["overlap"] = round(time.process_time() - cpu, 2)
    cka_s, cka = timed(lambda: cka_matrix([A], [B]), "cka_pair")
    m = min(n, 5_000)
    self_s, same = timed(lambda: neighbour_overlap(A[:m], A[:m].copy(), k=10), "overlap_self")
    return {
        "vectors": n,
        "d": d,
        "overlap_at_10": round(result.overlap_at_k, 4),
        "overlap_s": round(overlap_s, 2),
        "overlap_per_space_s": round(overlap_s / 2, 2),
        "overlap_peak_mib": round(peak_mib, 1),
        "memory_method": memory.method,
        "inputs_mib": round((A.nbytes + B.nbytes) / 2**20, 1),
        "cka_linear": round(float(cka.linear[0, 0]), 4),
        "cka_debiased": round(float(cka.debiased[0, 0]), 4),
        "cka_pair_s": round(cka_s, 2),
        "overlap_self_texts": m,
        "overlap_self": same.overlap_at_k,
        "overlap_self_s": round(self_s, 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="500 sentences and 10,000 vectors")
    parser.add_argument("--texts", type=int, default=None, help="sentences for the layer CKA (default 5000)")
    parser.add_argument("--vectors", type=int, default=None, help="vectors per space (default 100000)")
    parser.add_argument("--d", type=int, default=384)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    n_texts = args.texts or (500 if args.quick else 5_000)
    n_vectors = args.vectors or (10_000 if args.quick else 100_000)
    report: dict[str, object] = {"quick": bool(args.quick), "load_average_1min_at_start": round(os.getloadavg()[0], 2)}
    report.update(bench_layers(n_texts))
    report.update(bench_overlap(n_vectors, args.d, args.seed))
    report["cpu_s"] = dict(CPU_SECONDS)
    print(f"isoscope.comparison benchmark: {n_texts} sentences (7 layers), {n_vectors} x {args.d} vectors")
    for key, value in report.items():
        if not isinstance(value, dict):
            print(f"{key:<36}{value!s:>12}")
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
