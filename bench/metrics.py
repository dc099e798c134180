"""Benchmark isoscope.geometry.metrics on synthetic anisotropic embeddings.

Usage (from the repo root)::

    .venv/bin/python bench/metrics.py            # 20000 x 384, the all_metrics < 10 s target
    .venv/bin/python bench/metrics.py --quick    # 4000 x 384, finishes in a few seconds

Prints a human-readable table, then as its LAST line one JSON object with the timings.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from isoscope.geometry import metrics  # noqa: E402

TARGET_SECONDS = 10.0


def make_data(n: int, d: int, seed: int) -> np.ndarray:
    """Seeded anisotropic cloud: Gaussian with spectrum ``s_i = i^-0.75``, randomly rotated, plus an offset.

    Returned as float32, the dtype real sentence embeddings come in. Shape ``(n, d)``.
    """
    rng = np.random.default_rng(seed)
    scales = np.arange(1, d + 1, dtype=np.float64) ** -0.75  # (d,)
    q, _ = np.linalg.qr(rng.standard_normal((d, d)))  # (d, d) orthogonal
    offset = 0.5 * rng.standard_normal(d)  # (d,)
    X = (rng.standard_normal((n, d)) * scales) @ q + offset  # (n, d)
    return X.astype(np.float32)


def time_call(fn: Callable[[], object], repeat: int) -> tuple[float, object]:
    """Best wall time over ``repeat`` calls of ``fn`` and the last result."""
    best = float("inf")
    result: object = None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def run(n: int, d: int, seed: int, repeat: int) -> dict[str, object]:
    """Time ``all_metrics`` and each individual metric on ``make_data(n, d, seed)``."""
    X = make_data(n, d, seed)
    calls: dict[str, Callable[[], object]] = {
        "avg_cosine": lambda: metrics.avg_cosine(X, seed=seed),
        "cosine_histogram_sample": lambda: metrics.cosine_histogram_sample(X, 10_000, seed),
        "partition_isotropy": lambda: metrics.partition_isotropy(X),
        "isoscore": lambda: metrics.isoscore(X),
        "explained_variance": lambda: metrics.explained_variance(X, k=10),
        "singular_values": lambda: metrics.singular_values(X),
        "effective_rank": lambda: metrics.effective_rank(X),
        "alignment": lambda: metrics.alignment(X, X[::-1]),
        "uniformity": lambda: metrics.uniformity(X, seed=seed),
    }
    per_metric = {name: time_call(fn, repeat)[0] for name, fn in calls.items()}
    all_seconds, values = time_call(lambda: metrics.all_metrics(X, seed=seed), repeat)
    return {
        "n": n,
        "d": d,
        "seed": seed,
        "repeat": repeat,
        "all_metrics_seconds": round(all_seconds, 4),
        "target_seconds": TARGET_SECONDS,
        "ratio_target_over_measured": round(TARGET_SECONDS / all_seconds, 2),
        "metric_seconds": {name: round(sec, 4) for name, sec in per_metric.items()},
        "metric_values": values,
    }


def print_table(report: dict[str, object]) -> None:
    """Print timings and metric values as aligned text."""
    print(f"isoscope.geometry.metrics benchmark: n={report['n']} d={report['d']} seed={report['seed']}")
    print(f"{'function':<26}{'seconds':>10}")
    print("-" * 36)
    seconds = report["metric_seconds"]
    assert isinstance(seconds, dict)
    for name, sec in seconds.items():
        print(f"{name:<26}{sec:>10.4f}")
    print("-" * 36)
    print(f"{'all_metrics':<26}{report['all_metrics_seconds']:>10.4f}   (target < {TARGET_SECONDS:g} s)")
    print(f"{'target / measured':<26}{report['ratio_target_over_measured']:>10.2f}x")
    print()
    values = report["metric_values"]
    assert isinstance(values, dict)
    for name, value in values.items():
        print(f"{name:<26}{value:>14.6g}")


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, run the benchmark, print the table and the final JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller n (4000) so the run takes seconds")
    parser.add_argument("--n", type=int, default=None, help="rows (default 20000, or 4000 with --quick)")
    parser.add_argument("--d", type=int, default=384, help="dimensions (default 384)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=1, help="report the best of this many runs")
    args = parser.parse_args(argv)
    n = args.n if args.n is not None else (4000 if args.quick else 20000)
    report = run(n, args.d, args.seed, max(1, args.repeat))
    report["quick"] = bool(args.quick)
    print_table(report)
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
