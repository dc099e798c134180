"""Benchmark the cost models (``isoscope.<domain>.costs``, each returning an ``isoscope.costs.Cost``): each estimate
next to the run it estimates, measured side by side in one process.

Usage (from the repo root)::

    .venv/bin/python bench/costs.py            # embedding (2 sizes, 2 engines), flows, kNN graphs, int8 build,
                                               # UMAP, a landmark layout, a live run
    .venv/bin/python bench/costs.py --quick    # embedding (2 sizes, fast engine), a flow, an exact kNN graph,
                                               # the int8 build: about a minute

For every case the script measures the rate the dashboard measures (the encoder's probe, a flow's two-epoch
probe, UMAP's probe, the kNN graphs' probe, the int8 probe builds) exactly as the cost models do, estimates
the run from it, then times the run itself (uncached, in a temporary cache). ``ratio`` is estimate / measured; the target is a ratio within 3x either way
(an estimate that tells "about 2 min" for a run of 40 s or 6 min is still the right order to decide by). On a
machine shared with other work both sides slow down together, which the ratio mostly cancels. Prints a table,
then as its LAST line one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402

from isoscope.atlas import costs as atlas_costs  # noqa: E402
from isoscope.cache import ArrayCache  # noqa: E402
from isoscope.calibrate import costs as flow_costs  # noqa: E402
from isoscope.calibrate.flow import Flow  # noqa: E402
from isoscope.data import load_corpus  # noqa: E402
from isoscope.encode import costs as encode_costs  # noqa: E402
from isoscope.encode.embed import EmbedConfig, companion_poolings, encode_many  # noqa: E402
from isoscope.encode.engines import fastest_fp32_encoder  # noqa: E402
from isoscope.encode.models import load_encoder  # noqa: E402
from isoscope.landscape import costs as landscape_costs  # noqa: E402
from isoscope.neighbours import costs as umap_costs  # noqa: E402
from isoscope.paths import DEMO_CORPUS  # noqa: E402

TARGET_RATIO = 3.0
MAX_LENGTH = 128


def case(estimate: float, measured: float, **extra) -> dict:
    ratio = estimate / max(measured, 1e-9)
    return {
        "estimate_s": round(estimate, 2),
        "measured_s": round(measured, 2),
        "ratio": round(ratio, 2),
        "within_3x": bool(1 / TARGET_RATIO <= ratio <= TARGET_RATIO),
        **extra,
    }


def embedding_cases(encoder, name: str, texts: list[str], sizes: list[int]) -> dict:
    """What the app's embedding pass costs: every companion pooling (hidden states), uncached, into a fresh cache."""
    out = {}
    poolings = [p.name for p in companion_poolings(encoder, 1)]
    rate = encode_costs.measure_throughput(encoder, poolings, MAX_LENGTH)
    for n in sizes:
        sub = texts[:n]
        with tempfile.TemporaryDirectory() as tmp:
            cache = ArrayCache(tmp)
            est = encode_costs.embed_texts_cost(
                encoder, sub, ["mean"], max_length=MAX_LENGTH, rate=lambda h: rate, cache=cache, companions=True
            )
            start = time.perf_counter()
            encode_many(encoder, sub, ["mean"], config=EmbedConfig(max_length=MAX_LENGTH), cache=cache, companions=True)
            measured = time.perf_counter() - start
            free = encode_costs.embed_texts_cost(
                encoder, sub, ["mean"], max_length=MAX_LENGTH, rate=lambda h: rate, cache=cache, companions=True
            )
        out[f"embed_{name}_{n}"] = case(
            est.seconds, measured, tokens_per_s=round(rate.tokens_per_second), cached_after=free.seconds
        )
    return out


def flow_cases(vectors: np.ndarray, sizes: list[int]) -> dict:
    out = {}
    flow = Flow()
    step = flow_costs.measure_flow_step(vectors.shape[1], flow)
    for n in sizes:
        x = vectors[:n]
        start = time.perf_counter()
        Flow().fit(x)
        measured = time.perf_counter() - start
        est = flow_costs.flow_cost(n, flow, step)
        out[f"flow_{n}"] = case(est.seconds, measured, step_s=round(step, 4))
    return out


def umap_cases(vectors: np.ndarray, sizes: list[int]) -> dict:
    from isoscope.neighbours.projection import project

    rate = umap_costs.measure_umap()  # the first call in the process: numba compiles (or loads its disk cache)
    out: dict = {
        "umap_compile_s": round(rate.compile_seconds, 1),
        "umap_s_per_point_epoch": rate.seconds_per_point_epoch,
    }
    for n in sizes:
        start = time.perf_counter()
        project(vectors[:n], "umap", 2, seed=0)
        out[f"umap_{n}"] = case(umap_costs.umap_cost(n, rate).seconds, time.perf_counter() - start)
    return out


def grown(vectors: np.ndarray, n: int, seed: int = 0) -> np.ndarray:
    """(n, d) float32: the rows of ``vectors`` repeated, each copy moved by seeded noise (per dimension 0.02,
    about 0.4 in norm next to unit rows: a new point near the old one) -- a bigger corpus of the same space."""
    rng = np.random.default_rng(seed)
    rows = vectors[np.arange(n) % len(vectors)]
    return (rows + 0.02 * rng.standard_normal(rows.shape)).astype(np.float32)


def knn_cases(vectors: np.ndarray, sizes: list[int]) -> dict:
    """The atlas kNN graph (k = 16, as an atlas with k = 15 builds it), exact and NN-descent, against its estimate."""
    from isoscope.atlas.graph import knn_graph_chunked

    dim = vectors.shape[1]
    rate = atlas_costs.measure_knn(dim)
    out: dict = {"knn_exact_rate": rate.exact, "knn_approx_rate": rate.approx}
    for n in sizes:
        x = grown(vectors, n)
        start = time.perf_counter()
        knn_graph_chunked(x, 16)
        out[f"knn_{n}"] = case(atlas_costs.knn_cost(n, dim, k=16, rate=rate).seconds, time.perf_counter() - start)
    return out


def layout_case(vectors: np.ndarray, n: int, landmarks: int) -> dict:
    """An atlas landmark layout (``isoscope.atlas.layout.layout``) of ``n`` grown rows against ``layout_cost``."""
    from isoscope.atlas.graph import knn_graph_chunked
    from isoscope.atlas.layout import layout

    x = grown(vectors, n)
    knn = knn_graph_chunked(x, 16)
    umap, rate = umap_costs.measure_umap(), atlas_costs.measure_knn(x.shape[1])
    est = atlas_costs.layout_cost(n, x.shape[1], k=16, landmarks=landmarks, umap=umap, knn=rate)
    start = time.perf_counter()
    layout(x, "umap", knn=knn, seed=0, landmarks=landmarks)
    return {f"layout_{n}_landmarks_{landmarks}": case(est.seconds, time.perf_counter() - start)}


def int8_case(encoder) -> dict:
    """Building the int8 model (export and quantise, into an empty folder) against ``measure_int8_build``."""
    from isoscope.encode.quantize import build_int8_onnx

    est = encode_costs.measure_int8_build(encoder)
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        build_int8_onnx(encoder, cache_dir=Path(tmp))
        measured = time.perf_counter() - start
    return {"int8_build": case(est, measured)}


def landscape_case(encoder) -> dict:
    from isoscope.landscape.live import LiveRun, run_live, seconds_per_point

    run = LiveRun("", "demo-topic", 16, 1, 5e-5, 3, 32, 8, hessian_iters=2)
    point = seconds_per_point(encoder, run)
    n_params = sum(p.numel() for p in encoder.model.parameters())
    est = landscape_costs.landscape_cost(run, n_params=n_params, num_layers=encoder.num_layers, point_seconds=point)
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        run_live(encoder, run, tmp)
        measured = time.perf_counter() - start
    return {
        "landscape_live_smallest": case(
            est.seconds, measured, point_s=round(point, 3), disk_mb=round(est.disk_bytes / 2**20)
        )
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="embedding on the fast engine and one flow")
    args = parser.parse_args(argv)
    report: dict = {"load_average_1min_at_start": round(os.getloadavg()[0], 2), "max_length": MAX_LENGTH}
    texts = load_corpus(DEMO_CORPUS).texts
    encoder = load_encoder(None)
    fast = fastest_fp32_encoder(encoder)
    sizes = [1000, len(texts)]
    report.update(embedding_cases(fast, "fast", texts, sizes))
    vectors = encode_many(fast, texts, ["mean"], config=EmbedConfig(max_length=MAX_LENGTH))["mean"]  # (n, 384)
    report.update(flow_cases(vectors, [2000] if args.quick else [2000, len(texts)]))
    report.update(knn_cases(vectors, [len(texts)] if args.quick else [len(texts), 60_000]))
    report.update(int8_case(encoder))
    if not args.quick:
        report.update(embedding_cases(encoder, "torch", texts, sizes))
        report.update(umap_cases(vectors, [1500, len(texts)]))
        report.update(layout_case(vectors, 30_000, 10_000))
        report.update(landscape_case(encoder))
    cases = {k: v for k, v in report.items() if isinstance(v, dict)}
    report["all_within_3x"] = all(v["within_3x"] for v in cases.values())
    report["quick"] = bool(args.quick)
    print(f"isoscope.costs benchmark: {len(texts):,} demo texts, max_length {MAX_LENGTH}")
    for key, v in cases.items():
        print(f"{key:<28}estimate {v['estimate_s']:>8} s   measured {v['measured_s']:>8} s   ratio {v['ratio']:>5}")
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
