"""Benchmark the cost models (``isoscope.<domain>.costs``, each returning an ``isoscope.costs.Cost``): each estimate
next to the run it estimates, measured side by side in one process, on a quiet machine and with two busy
processes.

Usage (from the repo root)::

    .venv/bin/python bench/costs.py            # embedding (2 sizes, 2 engines), flows, kNN graphs, int8 build,
                                               # UMAP, a landmark layout, live loss-surface runs; the app's pages
                                               # that estimate (Anisotropy's first visit on the demo, the Pooling
                                               # explorer, the sweep, Retrieval, the Calibration page's fit) and
                                               # `isoscope atlas`'s plan
    .venv/bin/python bench/costs.py --quick    # embedding (600 texts, fast engine), a flow of 500 vectors, an
                                               # exact kNN graph, Anisotropy's first visit on 300 demo texts,
                                               # `isoscope atlas`'s plan on 300 (raw space only)
    .venv/bin/python bench/costs.py --only pages,atlas_plan   # some groups of cases (GROUPS; PAGES by name)

The pages run in ``streamlit.testing.v1.AppTest``, in this process, each in an empty cache (the ONNX exports
shared: built once per model) with Streamlit's caches cleared, so every probe is measured again in each phase. What a
page estimates is read where it says it (``ui.estimate``, wrapped to keep the exact ``Cost`` and the moment it was
shown); what it measures is the work after that moment: the rest of a first visit that starts by itself, or the run
its button starts. ``isoscope atlas``'s plan (its graphs and layouts) is read from ``--json`` and set against the
seconds of those stages of the same run.

For every case the script measures the rate the dashboard measures (the encoder's probe, a flow's two-epoch
probe, UMAP's probe, the kNN graphs' probe, the int8 probe builds, a loss-surface run's point and step probes)
exactly as the cost models do, estimates the run from it, then times the run itself (uncached, in a temporary
cache). ``ratio`` is estimate / measured; the target is a ratio between 0.5 and 2 (``TARGET_RATIO``) for every
estimate. Every case runs twice (``PHASES``): "quiet" (whatever else the machine runs: the load average is
reported) and "busy", with ``BUSY_PROCESSES`` processes of this script burning a CPU core each, probe and run
alike, as a student's laptop busy with other work would be; the load average before and after each phase is in
the report. Prints a table, then as its LAST line one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("STREAMLIT_LOGGER_LEVEL", "error")  # the pages' services called outside a page: bare mode

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

TARGET_RATIO = 2.0  # estimate / measured within [1 / 2, 2]
MAX_LENGTH = 128
BUSY_PROCESSES = 2
PHASES = ("quiet", "busy")


def case(estimate: float, measured: float, **extra) -> dict:
    ratio = estimate / max(measured, 1e-9)
    return {
        "estimate_s": round(estimate, 2),
        "measured_s": round(measured, 2),
        "ratio": round(ratio, 2),
        "within_target": bool(1 / TARGET_RATIO <= ratio <= TARGET_RATIO),
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
    rate = flow_costs.measure_flow_rate(vectors.shape[1], flow)
    for n in sizes:
        x = vectors[:n]
        start = time.perf_counter()
        Flow().fit(x)
        measured = time.perf_counter() - start
        est = flow_costs.flow_cost(n, flow, rate)
        out[f"flow_{n}"] = case(est.seconds, measured, step_s=round(rate.step, 4), setup_s=round(rate.setup, 2))
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


def landscape_cases(encoder) -> dict:
    """Live loss-surface runs against ``landscape_cost``: the smallest the page offers, and the page's defaults
    (``isoscope.landscape.live.default_live_run``: the run a newcomer starts first)."""
    from isoscope.landscape.live import LiveRun, default_live_run, measure_rates, run_live

    out = {}
    runs = {
        "smallest": LiveRun("", "demo-topic", 16, 1, 5e-5, 3, 32, 8, hessian_iters=2),
        "page_defaults": default_live_run(""),
    }
    n_params = sum(p.numel() for p in encoder.model.parameters())
    for name, run in runs.items():
        rates = measure_rates(encoder, run)
        est = landscape_costs.landscape_cost(run, n_params=n_params, num_layers=encoder.num_layers, rates=rates)
        with tempfile.TemporaryDirectory() as tmp:
            start = time.perf_counter()
            run_live(encoder, run, tmp)
            measured = time.perf_counter() - start
        out[f"landscape_live_{name}"] = case(
            est.seconds, measured, **{f"{k}_s": round(v, 3) for k, v in rates.as_dict().items()}
        )
    return out


APP = REPO_ROOT / "dashboard" / "app.py"


class EstimateSpy:
    """The costs the pages pass to ``ui.estimate`` and when (the pages call ``ui.estimate`` through the module:
    wrapping it there sees every call); the real function still draws the caption."""

    def __enter__(self) -> EstimateSpy:
        from isoscope.dashboard import ui

        self.ui, self.real, self.seen = ui, ui.estimate, []

        def record(cost, **kwargs):
            self.seen.append((time.perf_counter(), cost))
            return self.real(cost, **kwargs)

        ui.estimate = record
        return self

    def __exit__(self, *exc: object) -> None:
        self.ui.estimate = self.real


def cold_app(folder: Path) -> None:
    """An empty ``ISOSCOPE_CACHE`` at ``folder`` (the ONNX exports linked from the usual cache: an export is made
    once per model, not per visit) and Streamlit's caches, and the services' notes of what they hold, emptied."""
    import streamlit as st

    from isoscope.cache import default_cache_dir
    from isoscope.dashboard.services import anatomy, geometry

    exports = default_cache_dir() / "onnx"
    exports.mkdir(parents=True, exist_ok=True)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "onnx").symlink_to(exports, target_is_directory=True)
    os.environ["ISOSCOPE_CACHE"] = str(folder)
    st.cache_data.clear()
    st.cache_resource.clear()
    geometry._computed.clear()  # what metrics_of computed (its cache is cleared above)
    anatomy._reported.clear()


def page_case(page: str, *, data: Path | None = None, button: str | None = None) -> dict:
    """A page's estimate against the work it estimates, in a cold app (``cold_app``): ``button`` None, the first
    visit's work after the estimate was shown; else the run that button starts. ``data``: the file given to
    ``isoscope app`` (the pages' first choice), else the demo."""
    from streamlit.testing.v1 import AppTest

    from isoscope.dashboard.launch import ENV_DATA_FILE

    saved = {k: os.environ.get(k) for k in ("ISOSCOPE_CACHE", ENV_DATA_FILE)}
    try:
        with tempfile.TemporaryDirectory() as tmp, EstimateSpy() as spy:
            cold_app(Path(tmp) / "cache")
            os.environ.pop(ENV_DATA_FILE, None)
            if data is not None:
                os.environ[ENV_DATA_FILE] = str(data)
            at = AppTest.from_file(str(APP), default_timeout=1800)
            at.run()  # the home page: the sidebar loads the model
            start = time.perf_counter()
            at.switch_page(f"views/{page}.py").run()
            if button is not None:
                shown, cost = spy.seen[0]
                start = time.perf_counter()
                at.button(key=button).click().run()
                measured = time.perf_counter() - start
            else:
                shown, cost = spy.seen[0]
                measured = time.perf_counter() - shown
            if at.exception:
                raise RuntimeError(f"{page}: {at.exception[0].message}")
            return case(cost.seconds, measured, probes_s=round(shown - start, 2) if button is None else None)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def corpus_file(texts: list[str], folder: Path, name: str) -> Path:
    path = folder / f"{name}.txt"
    path.write_text("\n".join(texts) + "\n", encoding="utf-8")
    return path


PAGES = {  # page -> the key of the button that starts its job (None: its first visit starts it)
    "anisotropy": None,
    "pooling": "pool_go",
    "sweep": "sweep_run",
    "retrieval": "ret_run",
    "calibration": "calp_fit",  # the first estimate on the page: a flow on the pairs and the demo corpus
}


def page_cases(texts: list[str], folder: Path, *, quick: bool, pages: set[str]) -> dict:
    """The pages that say a cost (``PAGES``, those in ``pages``): Anisotropy's first visit (it starts by itself),
    and in the full run the Pooling explorer, the Precision & size sweep, Retrieval and the Calibration page's fit
    (their buttons) on the demo."""
    if quick:
        return {"page_anisotropy_300": page_case("anisotropy", data=corpus_file(texts[:300], folder, "c300"))}
    return {f"page_{name}_demo": page_case(name, button=button) for name, button in PAGES.items() if name in pages}


def atlas_plan_case(encoder, texts: list[str], folder: Path, *, spaces: int = 2) -> dict:
    """``isoscope atlas --json`` on ``texts``: the plan's seconds (its graphs and layouts, timed on probes before
    the build) against those stages' seconds in the same run (the embedding, the clusters and the tiles are not in
    the plan: ``build_s`` is the whole build's)."""
    import contextlib
    import io

    from isoscope.atlas.pipeline import PARALLEL_LAYOUT_ROWS
    from isoscope.cli import main

    path = corpus_file(texts, folder, f"atlas{len(texts)}")

    def build(out: str) -> dict:
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            raw_only = ["--calibrate", "none"] if spaces == 1 else []
            argv = ["atlas", "--input", str(path), "--out", str(folder / out), *raw_only, "--json", "--quiet"]
            code = main(argv, encoder=encoder)
        if code != 0:
            raise RuntimeError(f"isoscope atlas exited {code}")
        return json.loads(printed.getvalue().strip().splitlines()[-1])

    result = build(f"atlas{len(texts)}")  # its embedding stage is not what the plan estimates
    seconds = result["seconds"]
    layouts = [seconds.get(s, 0.0) for s in ("raw_layout", "cal_layout")]
    measured = seconds.get("raw_knn", 0.0) + seconds.get("cal_knn", 0.0)
    measured += max(layouts) if len(texts) >= PARALLEL_LAYOUT_ROWS else sum(layouts)
    return {
        f"atlas_plan_{len(texts)}": case(result["plan"]["seconds"], measured, build_s=round(sum(seconds.values()), 1))
    }


class Busy:
    """``n`` processes, each burning one CPU core (a Python loop) until the block ends; started and stopped by
    this script only (their own process ids)."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.procs: list[subprocess.Popen] = []

    def __enter__(self) -> Busy:
        loop = "import time\nwhile True:\n    sum(i * i for i in range(10_000))\n"
        self.procs = [subprocess.Popen([sys.executable, "-c", loop]) for _ in range(self.n)]
        time.sleep(1.0)  # running before the probes
        return self

    def __exit__(self, *exc: object) -> None:
        for proc in self.procs:
            proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


GROUPS = ("embedding", "flow", "knn", "pages", "atlas_plan", "int8", "umap", "layout", "landscape")


def phase_cases(encoder, fast, texts: list[str], vectors: np.ndarray, *, quick: bool, only: set[str]) -> dict:
    """Every case of one phase (of the groups in ``only``): probes then runs, in the conditions of the phase."""
    out: dict = {}
    if "embedding" in only:
        out.update(embedding_cases(fast, "fast", texts, [600] if quick else [1000, len(texts)]))
    if "flow" in only:
        out.update(flow_cases(vectors, [500] if quick else [2000, len(texts)]))
    if "knn" in only:
        out.update(knn_cases(vectors, [len(texts)] if quick else [len(texts), 60_000]))
    with tempfile.TemporaryDirectory() as tmp:
        pages = set(PAGES) if "pages" in only else only & set(PAGES)
        if pages:
            out.update(page_cases(texts, Path(tmp), quick=quick, pages=pages))
        if "atlas_plan" in only:
            sub = texts[:300] if quick else texts
            out.update(atlas_plan_case(encoder, sub, Path(tmp), spaces=1 if quick else 2))
    if quick:
        return out
    if "int8" in only:
        out.update(int8_case(encoder))
    if "embedding" in only:
        out.update(embedding_cases(encoder, "torch", texts, [1000, len(texts)]))
    if "umap" in only:
        out.update(umap_cases(vectors, [1500, len(texts)]))
    if "layout" in only:
        out.update(layout_case(vectors, 30_000, 10_000))
    if "landscape" in only:
        out.update(landscape_cases(encoder))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small embedding, flow and kNN cases")
    parser.add_argument("--phases", default=",".join(PHASES), help="which phases to run (quiet,busy)")
    parser.add_argument(
        "--only", default=",".join(GROUPS), help=f"which groups of cases ({','.join(GROUPS)}; or pages by name)"
    )
    args = parser.parse_args(argv)
    only = set(args.only.split(","))
    start = time.perf_counter()
    report: dict = {"max_length": MAX_LENGTH, "busy_processes": BUSY_PROCESSES, "cpus": os.cpu_count()}
    texts = load_corpus(DEMO_CORPUS).texts
    encoder = load_encoder(None)
    fast = fastest_fp32_encoder(encoder)
    # the demo's vectors, from the on-disk cache after a first run (not timed: the cases below time their runs)
    vectors = encode_many(fast, texts, ["mean"], config=EmbedConfig(max_length=MAX_LENGTH), cache=ArrayCache())["mean"]
    cases: dict[str, dict] = {}
    for phase in args.phases.split(","):
        load_before = round(os.getloadavg()[0], 2)
        if phase == "busy":
            with Busy(BUSY_PROCESSES):
                found = phase_cases(encoder, fast, texts, vectors, quick=args.quick, only=only)
        else:
            found = phase_cases(encoder, fast, texts, vectors, quick=args.quick, only=only)
        report[f"{phase}.load_average_1min"] = [load_before, round(os.getloadavg()[0], 2)]
        for key, value in found.items():
            if isinstance(value, dict):
                cases[f"{phase}.{key}"] = value
            else:
                report[f"{phase}.{key}"] = value
    report.update(cases)
    report["all_within_target"] = all(v["within_target"] for v in cases.values())
    report["ratio_range"] = [min(v["ratio"] for v in cases.values()), max(v["ratio"] for v in cases.values())]
    report["quick"] = bool(args.quick)
    report["wall_s"] = round(time.perf_counter() - start, 1)
    print(f"isoscope.costs benchmark: {len(texts):,} demo texts, max_length {MAX_LENGTH}; target ratio 1/2..2")
    for phase in args.phases.split(","):
        print(f"{phase}: load average (1 min) before, after {report[f'{phase}.load_average_1min']}")
    for key, v in cases.items():
        flag = "" if v["within_target"] else "  MISS"
        print(
            f"{key:<34}estimate {v['estimate_s']:>8} s   measured {v['measured_s']:>8} s   ratio {v['ratio']:>5}{flag}"
        )
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
