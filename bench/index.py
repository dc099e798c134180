"""Benchmark isoscope.neighbours.index: exact FAISS vs numpy brute force, HNSW recall and speed-up, IVF-PQ, build times.

Usage (from the repo root)::

    .venv/bin/python bench/index.py            # 100000 x 384 clustered vectors, 1000 queries
    .venv/bin/python bench/index.py --quick    # 10000 x 384, 200 queries, under a minute

Data: seeded Gaussian clusters (200 centres) with a shared 32-d low-rank spread plus small isotropic
noise, float32, queries drawn fresh from the same clusters. Exact search is timed once for FAISS
(isoscope.neighbours.index's flat kind, ``IndexFlatIP``) and once for numpy (normalised matrix product + argpartition
in blocks of queries, i.e. ``isoscope.neighbours.exact.exact_topk``) on the same batch of queries, and again one
query at a time (what an interactive page does; ``SINGLE_QUERIES`` queries). HNSW (M=32,
efConstruction=100) is searched at increasing ``efSearch``; the reported recall@10 (against the exact
ids) and speed-up over the flat search are those of the smallest ``efSearch`` reaching recall 0.95.

Peak memory per phase is the growth of the process's peak resident set (VmHWM in /proc/self/status,
reset with /proc/self/clear_refs before each phase) over the resident set at the phase's start, in
MiB; it includes FAISS's C++ allocations, which tracemalloc would not see. Where /proc cannot be
reset it falls back to ru_maxrss deltas (then only growth beyond the earlier peak shows).

Prints a table, then as its LAST line one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

import faiss  # noqa: E402

from isoscope.neighbours.exact import exact_topk  # noqa: E402
from isoscope.neighbours.index import IndexParams, build_index, recall_from_ids  # noqa: E402

TARGET_RECALL = 0.95
EF_SEARCH_SWEEP = (16, 32, 64, 128, 256, 512)
K = 10
SINGLE_QUERIES = 50


def make_clustered(n: int, d: int, seed: int, query_seed: int | None = None) -> np.ndarray:
    """Seeded clustered cloud (n, d) float32; ``query_seed`` draws new points around the same centres."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((200, d)).astype(np.float32)  # (c, d)
    basis = (rng.standard_normal((32, d)) / np.sqrt(32)).astype(np.float32)  # (32, d) shared spread
    draw = np.random.default_rng(query_seed) if query_seed is not None else rng
    out = np.empty((n, d), np.float32)
    for start in range(0, n, 20_000):  # in blocks: no float64 copy of the whole corpus
        m = min(20_000, n - start)
        labels = draw.integers(0, len(centres), m)
        local = draw.standard_normal((m, 32)).astype(np.float32) @ basis  # (m, d)
        noise = 0.25 * draw.standard_normal((m, d)).astype(np.float32)
        out[start : start + m] = centres[labels] + 0.8 * local + noise
    return out


class PeakMemory:
    """Peak resident-set growth of a phase, in MiB (see the module doc for the method)."""

    def __init__(self) -> None:
        self.method = "VmHWM-reset"
        try:
            self._reset()
            self._status("VmHWM")
        except OSError:
            self.method = "ru_maxrss-delta"

    @staticmethod
    def _status(field: str) -> int:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])  # KiB
        raise OSError(field)

    @staticmethod
    def _reset() -> None:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")

    def measure(self, fn: Callable[[], object]) -> tuple[float, object, float]:
        """(seconds, result, peak MiB above the starting resident set) of one call."""
        if self.method == "VmHWM-reset":
            self._reset()
            before = self._status("VmRSS")
        else:
            before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        start = time.perf_counter()
        result = fn()
        seconds = time.perf_counter() - start
        after = (
            self._status("VmHWM")
            if self.method == "VmHWM-reset"
            else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        )
        return seconds, result, max(0, after - before) / 1024


def numpy_topk(X: np.ndarray, Q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Brute-force cosine top-k with numpy. X must be L2-normalised (n, d). Returns scores, ids (q, k)."""
    Qn = (Q / np.linalg.norm(Q, axis=1, keepdims=True)).astype(np.float32)  # (q, d)
    return exact_topk(X, Qn, k)


def one_by_one(search: Callable[[np.ndarray], object], Q: np.ndarray) -> float:
    """Total seconds to search the rows of Q one query at a time."""
    start = time.perf_counter()
    for q in Q:
        search(q[None, :])
    return time.perf_counter() - start


def index_mib(index: object) -> float:
    return faiss.serialize_index(index.index).nbytes / 2**20  # type: ignore[attr-defined]


def run(n: int, d: int, n_queries: int, seed: int, with_ivfpq: bool) -> dict[str, object]:
    mem = PeakMemory()
    X = make_clustered(n, d, seed)
    Q = make_clustered(n_queries, d, seed, query_seed=seed + 1)
    report: dict[str, object] = {"n": n, "d": d, "queries": n_queries, "k": K, "seed": seed}
    report["faiss_threads"] = faiss.omp_get_max_threads()
    report["load_average_1min_at_start"] = round(os.getloadavg()[0], 2)  # other work on the machine skews timings
    report["memory_method"] = mem.method

    flat_build, flat, flat_mem = mem.measure(lambda: build_index(X, "flat"))
    flat_search, (_, flat_ids), _ = mem.measure(lambda: flat.search(Q, K))
    Xn = (X / np.linalg.norm(X, axis=1, keepdims=True)).astype(np.float32)
    numpy_search, (_, np_ids), numpy_mem = mem.measure(lambda: numpy_topk(Xn, Q, K))
    single = Q[:SINGLE_QUERIES]
    flat_single = one_by_one(lambda q: flat.search(q, K), single)
    numpy_single = one_by_one(lambda q: numpy_topk(Xn, q, K), single)
    report |= {
        "flat_build_s": round(flat_build, 3),
        "flat_search_s": round(flat_search, 4),
        "numpy_search_s": round(numpy_search, 4),
        "flat_vs_numpy_speedup": round(numpy_search / flat_search, 2),
        "flat_numpy_agreement_at_10": round(recall_from_ids(flat_ids, np_ids), 4),
        "single_queries": len(single),
        "flat_single_query_ms": round(1000 * flat_single / len(single), 3),
        "numpy_single_query_ms": round(1000 * numpy_single / len(single), 3),
        "flat_vs_numpy_speedup_single_query": round(numpy_single / flat_single, 2),
        "flat_build_peak_mib": round(flat_mem, 1),
        "numpy_search_peak_mib": round(numpy_mem, 1),
        "flat_index_mib": round(index_mib(flat), 1),
    }

    params = IndexParams(hnsw_m=32, ef_construction=100)
    hnsw_build, hnsw, hnsw_mem = mem.measure(lambda: build_index(X, "hnsw", params))
    sweep = []
    for ef in EF_SEARCH_SWEEP:
        hnsw.set_search_params(ef_search=ef)
        seconds, (_, ids), _ = mem.measure(lambda: hnsw.search(Q, K))
        sweep.append({"ef_search": ef, "recall_at_10": round(recall_from_ids(ids, flat_ids), 4), "search_s": seconds})
    chosen = next((s for s in sweep if s["recall_at_10"] >= TARGET_RECALL), sweep[-1])
    hnsw.set_search_params(ef_search=chosen["ef_search"])
    hnsw_single = one_by_one(lambda q: hnsw.search(q, K), single)
    report |= {
        "hnsw_m": params.hnsw_m,
        "hnsw_ef_construction": params.ef_construction,
        "hnsw_build_s": round(hnsw_build, 2),
        "hnsw_build_peak_mib": round(hnsw_mem, 1),
        "hnsw_index_mib": round(index_mib(hnsw), 1),
        "hnsw_ef_search": chosen["ef_search"],
        "hnsw_recall_at_10": chosen["recall_at_10"],
        "hnsw_search_s": round(chosen["search_s"], 4),
        "hnsw_vs_flat_speedup": round(flat_search / chosen["search_s"], 2),
        "hnsw_single_query_ms": round(1000 * hnsw_single / len(single), 3),
        "hnsw_vs_flat_speedup_single_query": round(flat_single / hnsw_single, 2),
        "hnsw_target_recall": TARGET_RECALL,
        "hnsw_meets_target": chosen["recall_at_10"] >= TARGET_RECALL,
        "hnsw_sweep": [{**s, "search_s": round(s["search_s"], 4)} for s in sweep],
    }

    if with_ivfpq:
        pq_params = IndexParams(nlist=256, nprobe=16, pq_m=48, train_size=min(n, 30_000))
        pq_build, pq, pq_mem = mem.measure(lambda: build_index(X, "ivfpq", pq_params))
        pq_search, (_, pq_ids), _ = mem.measure(lambda: pq.search(Q, K))
        report |= {
            "ivfpq_build_s": round(pq_build, 2),
            "ivfpq_build_peak_mib": round(pq_mem, 1),
            "ivfpq_index_mib": round(index_mib(pq), 1),
            "ivfpq_recall_at_10": round(recall_from_ids(pq_ids, flat_ids), 4),
            "ivfpq_search_s": round(pq_search, 4),
            "ivfpq_params": {"nlist": 256, "nprobe": 16, "pq_m": 48, "pq_nbits": 8},
        }
    return report


def print_table(r: dict[str, object]) -> None:
    print(
        f"isoscope.neighbours.index benchmark: n={r['n']} d={r['d']} queries={r['queries']} k={r['k']} threads={r['faiss_threads']}"
    )
    print(f"exact  FAISS flat search {r['flat_search_s']:.4f} s   numpy {r['numpy_search_s']:.4f} s   ", end="")
    print(f"speed-up {r['flat_vs_numpy_speedup']}x  (agreement {r['flat_numpy_agreement_at_10']})")
    print(
        f"one query at a time: FAISS flat {r['flat_single_query_ms']} ms, numpy {r['numpy_single_query_ms']} ms, "
        f"hnsw {r['hnsw_single_query_ms']} ms"
    )
    print(f"hnsw   build {r['hnsw_build_s']} s, index {r['hnsw_index_mib']} MiB, peak +{r['hnsw_build_peak_mib']} MiB")
    print(f"{'efSearch':>10}{'recall@10':>12}{'search s':>12}")
    for s in r["hnsw_sweep"]:  # type: ignore[union-attr]
        print(f"{s['ef_search']:>10}{s['recall_at_10']:>12.4f}{s['search_s']:>12.4f}")
    print(
        f"hnsw   efSearch={r['hnsw_ef_search']}: recall@10 {r['hnsw_recall_at_10']} at {r['hnsw_vs_flat_speedup']}x "
        f"the flat search speed (target recall {r['hnsw_target_recall']})"
    )
    if "ivfpq_build_s" in r:
        print(
            f"ivfpq  build {r['ivfpq_build_s']} s, index {r['ivfpq_index_mib']} MiB (flat {r['flat_index_mib']}), "
            f"recall@10 {r['ivfpq_recall_at_10']}, search {r['ivfpq_search_s']} s"
        )
    print(f"memory: {r['memory_method']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10000 vectors, 200 queries, no IVF-PQ")
    parser.add_argument("--n", type=int, default=None, help="corpus rows (default 100000, or 10000 with --quick)")
    parser.add_argument("--d", type=int, default=384)
    parser.add_argument("--queries", type=int, default=None, help="default 1000, or 200 with --quick")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    n = args.n or (10_000 if args.quick else 100_000)
    queries = args.queries or (200 if args.quick else 1000)
    report = run(n, args.d, queries, args.seed, with_ivfpq=not args.quick)
    report["quick"] = bool(args.quick)
    print_table(report)
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
