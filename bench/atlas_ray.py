"""Benchmark the atlas's ray engine (``isoscope atlas --engine ray``) on a two-node Ray cluster on this machine
against the one-machine engine on the same vectors (no embedding).

Usage (from the repo root)::

    .venv/bin/python bench/atlas_ray.py --quick          # 50,000 rows x 384, minutes
    .venv/bin/python bench/atlas_ray.py --n 3000000      # the issue's 3M rows (the one-machine engine where it fits)

The corpus: ``n`` synthetic sentences (``isoscope.atlas.synthetic``) with vectors of ``dim`` drawn from
``isoscope.atlas.synthetic.TopicSpace`` (topics, 256 subtopics each, a 16-dimensional subspace per subtopic: local,
low-dimensional neighbourhoods like an embedding space's), written as Parquet shards of 50,000 rows (``text``,
``topic``, ``embedding``) a file at a time; both engines read them as ``isoscope.data.sharded.ParquetShards``
(a batch at a time: no process holds the corpus). The cluster: ``ray.cluster_utils.Cluster``, a head and one more
node of ``--cpus-per-node`` CPUs each. Each build runs in a child process (the driver); every process (the driver, Ray's
workers) is sampled every 0.2 s from /proc: ``peak_rss`` (VmRSS: includes the pages of memory-mapped files, the
page cache the kernel takes back) and ``peak_anon`` (RssAnon: the process's own memory, the number that has to
stay flat in n). ``recall``: the ray graph's recall@15 against exact search on its seeded 1,000-row sample
(``knn_recall.json``); ``trustworthiness_*``: sklearn's trustworthiness (15 neighbours, cosine) of each layout on a
seeded 2,000-row sample; ``trustworthiness_vs_single`` = ray minus one-machine. Prints a table, then ONE JSON
object last.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

QUICK = {"n": 50_000, "dim": 384, "landmarks": 10_000, "shard_rows": 12_500}
FULL = {"n": 3_000_000, "dim": 384, "landmarks": 100_000, "shard_rows": 100_000}
FILE_ROWS = 50_000  # rows per Parquet shard of the corpus


def make_data(folder: Path, n: int, dim: int, seed: int = 0) -> Path:
    """The corpus as Parquet shards in ``folder``/shards (``FILE_ROWS`` rows a file: ``text``, ``topic`` and an
    ``embedding`` column of ``dim`` float32), generated a file at a time; reused when complete."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from isoscope.atlas.synthetic import TOPICS, TopicSpace, synthetic_corpus

    shards = folder / "shards"
    done = folder / "shards.done"
    if done.exists():
        return shards
    shutil.rmtree(shards, ignore_errors=True)
    shards.mkdir(parents=True)
    space = TopicSpace.make(dim, seed=seed)
    for i, s in enumerate(range(0, n, FILE_ROWS)):
        texts, topics = synthetic_corpus(min(FILE_ROWS, n - s), seed + 7919 * i)
        code = pd.Categorical(topics, categories=list(TOPICS)).codes  # (m,)
        x = space.draw(code, seed=(seed, s))  # (m, dim)
        emb = pa.FixedSizeListArray.from_arrays(pa.array(x.ravel(), pa.float32()), dim)
        table = pa.table({"text": texts, "topic": topics, "embedding": emb})
        pq.write_table(table, shards / f"part-{i:05d}.parquet", row_group_size=16_384)
    done.write_text(str(n))
    return shards


def _status(pid: int) -> tuple[int, int] | None:
    """(VmRSS, RssAnon) bytes of a process, or None when it is gone."""
    try:
        fields = dict(
            line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line
        )
        return int(fields["VmRSS"].split()[0]) * 1024, int(fields["RssAnon"].split()[0]) * 1024
    except (OSError, KeyError, ValueError):
        return None


class Sampler:
    """Peak VmRSS and RssAnon of every process under this one, by role (driver, ray worker, ray system)."""

    def __init__(self, driver_pid: int) -> None:
        self.driver_pid = driver_pid
        self.peaks: dict[str, list[int]] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)

    def role(self, proc) -> str:
        if proc.pid == self.driver_pid:
            return "driver"
        try:
            cmd = " ".join(proc.cmdline())
        except Exception:  # gone
            return "gone"
        return "worker" if "default_worker.py" in cmd or cmd.startswith("ray::") else "system"

    def loop(self) -> None:
        import psutil

        me = psutil.Process()
        while not self.stop.is_set():
            for proc in me.children(recursive=True):
                got = _status(proc.pid)
                if got is None:
                    continue
                role = self.role(proc)
                peak = self.peaks.setdefault(role, [0, 0])
                peak[0], peak[1] = max(peak[0], got[0]), max(peak[1], got[1])
            time.sleep(0.2)

    def __enter__(self) -> Sampler:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join()


def keep_unspread(target: Path) -> None:
    """Before the layout's deep spread (``isoscope.atlas.spread``) on the ray engine, a copy of the layout it spreads
    into ``target`` (beside the atlas): the deep zoom measured before and after on one build (this process only)."""
    import shutil as _shutil

    from isoscope.atlas import ray_layout

    spread = ray_layout._spread

    def copying(parts, xy_path, **kwargs):
        _shutil.copyfile(xy_path, target)
        return spread(parts, xy_path, **kwargs)

    ray_layout._spread = copying


def child(args: argparse.Namespace) -> None:
    """The driver: build the atlas from the Parquet shards; print its seconds as JSON."""
    from isoscope.atlas.pipeline import AtlasConfig, build_atlas
    from isoscope.data.sharded import ParquetShards

    if args.child == "ray":
        keep_unspread(args.out.with_name(args.out.name + "-xy-unspread.npy"))

    corpus = ParquetShards.open(args.data / "shards", vector_column="embedding")  # read a batch at a time
    config = AtlasConfig(calibrate="none", landmarks=args.landmarks, engine=args.child, shard_rows=args.shard_rows)
    if args.child == "ray":
        import ray

        ray.init(address=args.address, log_to_driver=False)
    t0 = time.perf_counter()
    run = build_atlas(None, corpus, args.out, config=config)
    print(json.dumps({"wall_s": time.perf_counter() - t0, "seconds": run.seconds}))


def build(kind: str, args: argparse.Namespace, out: Path, address: str = "") -> dict:
    cmd = [sys.executable, __file__, "--child", kind, "--data", str(args.data), "--out", str(out)]
    cmd += ["--landmarks", str(args.landmarks), "--shard-rows", str(args.shard_rows), "--address", address]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with Sampler(proc.pid) as sampler:
        stdout, stderr = proc.communicate(timeout=args.timeout)
    if proc.returncode != 0:
        raise SystemExit(f"{kind} build failed:\n{stderr[-3000:]}")
    result = json.loads(stdout.strip().splitlines()[-1])
    gib = 2**30
    for role, (rss, anon) in sampler.peaks.items():
        if role != "gone":
            result[f"peak_rss_{role}_gib"] = round(rss / gib, 3)
            result[f"peak_anon_{role}_gib"] = round(anon / gib, 3)
    return result


def trust(vectors: np.ndarray, folder: Path, rows: np.ndarray) -> float:
    from sklearn.manifold import trustworthiness

    from isoscope.atlas.pipeline import load_atlas

    xy = load_atlas(folder).spaces["raw"].xy
    return float(trustworthiness(np.asarray(vectors[rows]), np.asarray(xy[rows]), n_neighbors=15, metric="cosine"))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--n", type=int, default=None)
    p.add_argument("--dim", type=int, default=None)
    p.add_argument("--landmarks", type=int, default=None)
    p.add_argument("--shard-rows", type=int, default=None)
    p.add_argument("--cpus-per-node", type=int, default=1)
    p.add_argument("--work", type=Path, default=None, help="folder for the vectors and both atlases (default: a temp)")
    p.add_argument("--no-single", action="store_true", help="skip the one-machine build")
    p.add_argument("--timeout", type=float, default=6 * 3600)
    p.add_argument("--child", choices=("ray", "local"), default=None, help=argparse.SUPPRESS)
    p.add_argument("--data", type=Path, default=None, help=argparse.SUPPRESS)
    p.add_argument("--out", type=Path, default=None, help=argparse.SUPPRESS)
    p.add_argument("--address", default="", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        child(args)
        return
    base = QUICK if args.quick else FULL
    for key in ("n", "dim", "landmarks", "shard_rows"):
        if getattr(args, key) is None:
            setattr(args, key, base[key])
    work = args.work or Path(tempfile.mkdtemp(prefix="atlas-ray-"))
    args.data = work / f"data-{args.n}x{args.dim}"
    args.data.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    make_data(args.data, args.n, args.dim)
    data_s = time.perf_counter() - t0
    load0 = os.getloadavg()[0]

    from ray.cluster_utils import Cluster

    from isoscope.atlas.costs import atlas_plan, available_memory, one_machine_peak
    from isoscope.sampling import sample_indices

    t0 = time.perf_counter()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": args.cpus_per_node})
    cluster.add_node(num_cpus=args.cpus_per_node)
    cluster_s = time.perf_counter() - t0
    plan = atlas_plan(
        args.n,
        args.dim,
        k=15,
        spaces=1,
        landmarks=args.landmarks,
        engine="ray",
        shard_rows=args.shard_rows,
        workers=2 * args.cpus_per_node,
    )
    try:
        ray_result = build("ray", args, work / f"ray-{args.n}", cluster.address)
    finally:
        cluster.shutdown()
    vectors = np.load(work / f"ray-{args.n}" / "vectors.npy", mmap_mode="r", allow_pickle=False)  # the shards' rows
    rows = sample_indices(args.n, 2_000, 5)
    result = {
        "n": args.n,
        "dim": args.dim,
        "landmarks": args.landmarks,
        "shard_rows": args.shard_rows,
        "nodes": 2,
        "cpus_per_node": args.cpus_per_node,
        "data_s": round(data_s, 1),
        "cluster_start_s": round(cluster_s, 1),
        "load_before": round(load0, 2),
        "plan": plan.to_dict(),
        "ray": ray_result,
    }
    recall = json.loads((work / f"ray-{args.n}" / "raw" / "knn_recall.json").read_text())
    result["recall"] = recall["recall"]
    result["nprobe"], result["nlist"] = recall["nprobe"], recall["nlist"]
    result["trustworthiness_ray"] = trust(vectors, work / f"ray-{args.n}", rows)
    from bench.atlas_deep_zoom import deep_zoom
    from bench.atlas_deep_zoom import trust as trust_of

    result["deep_zoom_after"] = deep_zoom(np.load(work / f"ray-{args.n}" / "raw" / "xy.npy", mmap_mode="r"))
    unspread = work / f"ray-{args.n}-xy-unspread.npy"
    if unspread.exists():  # the same build's layout before its deep spread
        before = np.load(unspread, mmap_mode="r")
        result["deep_zoom_before"] = deep_zoom(before)
        result["trustworthiness_before_spread"] = trust_of(vectors, before)
    from isoscope.atlas.pipeline import MAX_ATLAS_ROWS

    fits = one_machine_peak(args.n, args.dim, k=15, spaces=1) < available_memory() and args.n <= MAX_ATLAS_ROWS
    if fits and not args.no_single:
        result["single"] = build("local", args, work / f"local-{args.n}")
        result["trustworthiness_single"] = trust(vectors, work / f"local-{args.n}", rows)
        result["trustworthiness_vs_single"] = result["trustworthiness_ray"] - result["trustworthiness_single"]
        result["speedup_vs_single"] = result["single"]["wall_s"] / ray_result["wall_s"]
    else:
        result["trustworthiness_vs_single"] = None
        result["single"] = (
            "skipped"
            if args.no_single
            else f"refused: over the one-machine limit of {MAX_ATLAS_ROWS:,} rows or the memory available"
        )
    result["load_after"] = round(os.getloadavg()[0], 2)
    print(f"{'':24}{'ray (2 nodes)':>16}{'one machine':>16}")
    single = result["single"] if isinstance(result["single"], dict) else {}
    for key in ("wall_s", "peak_rss_driver_gib", "peak_anon_driver_gib", "peak_rss_worker_gib", "peak_anon_worker_gib"):
        a, b = ray_result.get(key, "-"), single.get(key, "-")
        print(f"{key:24}{a if isinstance(a, str) else round(a, 2):>16}{b if isinstance(b, str) else round(b, 2):>16}")
    print(f"recall@15 {result['recall']:.4f} (nprobe {result['nprobe']} of {result['nlist']} lists)")
    print(f"trustworthiness ray {result['trustworthiness_ray']:.4f} vs single {result.get('trustworthiness_single')}")
    for when in ("before", "after"):
        if f"deep_zoom_{when}" in result:
            z = result[f"deep_zoom_{when}"]
            print(
                f"deep zoom {when} the spread: level {z['level']}, {z['crowded_blobs']} blobs of {z['crowded_points']}"
                f" points ({z['sharp']}), views resolved {z['views_resolved']}"
            )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
