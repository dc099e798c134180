"""Benchmark a retrieval run (isoscope.retrieval): 100,000 documents x 1,000 queries end to end, embedding cached.

Usage (from the repo root)::

    .venv/bin/python bench/retrieval.py            # 100,000 documents x 1,000 queries, 384 dimensions
    .venv/bin/python bench/retrieval.py --quick    # 10,000 x 200, under a minute

The embedding is what the cache holds: the vectors are a seeded synthetic corpus (clusters around a shared offset,
the cone of a raw encoder) and each query is a noisy copy of its relevant document (grade 2), with a document of
the same cluster at grade 1. Timed per variant (raw, centre, whitening:64, csls), each as
``isoscope.retrieval.run.evaluate_retrieval`` runs it: the fit (CSLS: its penalty from a 10,000-document
reference), the exact search to depth 100, the scoring by pytrec_eval, the paired test and interval against raw
(10,000 resamples), and the geometry (average cosine, IsoScore, hubness skew on a 5,000-document sample); then
the whole run once, end to end. Machine load is reported at the start and the end (os.getloadavg).

Prints a table, then as its LAST line one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from isoscope.retrieval.fixes import fit_variant  # noqa: E402
from isoscope.retrieval.metrics import per_query  # noqa: E402
from isoscope.retrieval.run import RetrievalConfig, _geometry, evaluate_retrieval  # noqa: E402
from isoscope.retrieval.search import search  # noqa: E402
from isoscope.retrieval.stats import paired_test  # noqa: E402
from isoscope.retrieval.task import build_task  # noqa: E402
from isoscope.retrieval.variants import parse_variant  # noqa: E402

VARIANTS = ("raw", "centre", "whitening:64", "csls")


def synthetic_task(n_docs: int, n_queries: int, d: int, seed: int):
    """Documents (n, d) in 500 clusters around a shared offset, queries (q, d) near their relevant documents."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((500, d)).astype(np.float32)
    cluster = rng.integers(0, 500, n_docs)
    offset = 3.0 * rng.standard_normal(d).astype(np.float32)  # the cone every raw encoder has
    docs = np.empty((n_docs, d), np.float32)
    for start in range(0, n_docs, 20_000):
        rows = slice(start, min(start + 20_000, n_docs))
        docs[rows] = centres[cluster[rows]] + 0.8 * rng.standard_normal((docs[rows].shape[0], d)) + offset
    targets = rng.choice(n_docs, n_queries, replace=False)
    queries = docs[targets] + 1.0 * rng.standard_normal((n_queries, d)).astype(np.float32)
    judgements = []
    for i, t in enumerate(targets):
        judgements.append((f"q{i}", f"d{t}", 2))
        same = np.flatnonzero(cluster == cluster[t])
        other = int(same[(np.searchsorted(same, t) + 1) % len(same)])
        if other != t:
            judgements.append((f"q{i}", f"d{other}", 1))
    task = build_task(
        "synthetic",
        [(f"q{i}", "") for i in range(n_queries)],
        [(f"d{i}", "") for i in range(n_docs)],
        judgements,
    )
    return task, queries, docs


def timed(fn, *args, **kwargs):
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="10,000 documents x 200 queries")
    parser.add_argument("--docs", type=int, default=None)
    parser.add_argument("--queries", type=int, default=None)
    parser.add_argument("--d", type=int, default=384)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    n_docs = args.docs or (10_000 if args.quick else 100_000)
    n_queries = args.queries or (200 if args.quick else 1_000)
    report: dict[str, object] = {
        "quick": bool(args.quick),
        "documents": n_docs,
        "queries": n_queries,
        "dims": args.d,
        "load_average_1min_at_start": round(os.getloadavg()[0], 2),
    }
    (task, Q, D), report["task_build_s"] = timed(synthetic_task, n_docs, n_queries, args.d, args.seed)
    raw_scores = None
    rows = {}
    for name in VARIANTS:
        spec = parse_variant(name)
        fitted, fit_s = timed(fit_variant, spec, Q, D)
        ranking, search_s = timed(search, fitted.queries, fitted.documents, 100, penalty=fitted.penalty)
        scores, score_s = timed(per_query, task, ranking)
        test_s = 0.0
        if raw_scores is None:
            raw_scores = scores
        else:
            _, test_s = timed(paired_test, scores["ndcg@10"], raw_scores["ndcg@10"])
        geometry, geometry_s = timed(_geometry, fitted, 0)
        rows[name] = {
            "fit_s": round(fit_s, 3),
            "search_s": round(search_s, 3),
            "score_s": round(score_s, 3),
            "test_s": round(test_s, 3),
            "geometry_s": round(geometry_s, 3),
            "ndcg@10": round(float(scores["ndcg@10"].mean()), 4),
            "hubness_skew": round(geometry["hubness_skew"], 3),
        }
    report["variants"] = rows
    report["search_s_per_variant"] = round(float(np.mean([r["search_s"] for r in rows.values()])), 3)
    report["score_s_per_variant"] = round(float(np.mean([r["score_s"] for r in rows.values()])), 3)
    config = RetrievalConfig(variants=VARIANTS)
    _, report["end_to_end_s"] = timed(evaluate_retrieval, Q, D, task, config=config)
    report["end_to_end_s"] = round(float(report["end_to_end_s"]), 2)
    report["task_build_s"] = round(float(report["task_build_s"]), 2)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    report["cpu_s"] = round(usage.ru_utime + usage.ru_stime, 1)
    report["peak_rss_mib"] = round(usage.ru_maxrss / 1024, 1)
    report["load_average_1min_at_end"] = round(os.getloadavg()[0], 2)
    print(f"isoscope.retrieval benchmark: {n_docs:,} documents x {n_queries:,} queries, d = {args.d}")
    print(f"{'variant':<14}{'fit s':>8}{'search s':>10}{'score s':>9}{'test s':>8}{'geometry s':>12}{'nDCG@10':>9}")
    for name, r in rows.items():
        print(f"{name:<14}{r['fit_s']:>8}{r['search_s']:>10}{r['score_s']:>9}{r['test_s']:>8}{r['geometry_s']:>12}"
              f"{r['ndcg@10']:>9}")  # fmt: skip
    for key in ("end_to_end_s", "cpu_s", "peak_rss_mib", "load_average_1min_at_start", "load_average_1min_at_end"):
        print(f"{key:<36}{report[key]!s:>12}")
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
