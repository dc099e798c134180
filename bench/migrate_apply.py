"""Benchmark ``isoscope migrate apply`` (issue 53.4): stored vectors mapped through a saved adapter, streamed.

Usage (from the repo root)::

    .venv/bin/python bench/migrate_apply.py            # 1,000,000 x 768 .npy: the < 2 min, < 1 GB target
    .venv/bin/python bench/migrate_apply.py --quick    # 100,000 x 768 .npy and 50,000 x 768 Parquet (~50 CPU-s)

A synthetic corpus (anisotropic float32 rows) is written to a work folder (``--work``, default a temporary
folder: about 3 x n x d x 4 bytes of disk, 9.2 GB for 1M x 768), a ridge adapter d -> d is fitted on 2,000 pairs
and saved, then ``apply_adapter`` maps the file in a child process (``--chunk-rows``); its wall time and peak resident memory
(the child's own ``VmHWM``, imports included; and its CPU seconds, user + system, all threads) are what is
measured. Then a run killed half-way (SIGKILL once the ledger holds half of its chunks; chunks of at most a quarter
of the rows, so the kill lands mid-file) and its rerun: the rerun's time and how many chunks it kept. Both outputs
are checked against ``adapter.transform`` on a seeded sample of rows. The 1-minute load average is recorded at the
start and the end: on a shared machine the wall time depends on it, the CPU seconds do not. Prints a table, then
as its LAST line one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from isoscope.migrate.adapters import Adapter  # noqa: E402
from isoscope.migrate.apply import LEDGER, WORK_SUFFIX  # noqa: E402
from isoscope.migrate.methods import make_adapter  # noqa: E402

TARGET_SECONDS = 120.0  # 1M x 768 on 2 cores (issue 53)
TARGET_RSS_MIB = 1024.0
BLOCK = 65_536
CHILD = """
import json, resource, sys, time
from isoscope.migrate.apply import apply_adapter
t = time.perf_counter()
r = apply_adapter(sys.argv[1], sys.argv[2], sys.argv[3], chunk_rows=int(sys.argv[4]), force=True)
# VmHWM: this process's peak resident set, imports included (ru_maxrss would carry the parent's over exec)
peak = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM")) / 1024
use = resource.getrusage(resource.RUSAGE_SELF)
cpu = use.ru_utime + use.ru_stime
print(json.dumps({**r.to_dict(), "wall": time.perf_counter() - t, "peak_rss_mib": peak, "cpu_seconds": cpu}))
"""


def make_vectors(path: Path, n: int, d: int, seed: int) -> None:
    """n x d float32 rows (a shared direction, uneven spectrum) written block by block as .npy (or Parquet)."""
    rng = np.random.default_rng(seed)
    scales = (np.arange(1, d + 1) ** -0.5).astype(np.float32)
    offset = rng.normal(size=d).astype(np.float32)
    blocks = (
        (rng.standard_normal((min(BLOCK, n - s), d), dtype=np.float32) * scales + offset) for s in range(0, n, BLOCK)
    )
    if path.suffix == ".npy":
        out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(n, d))
        for s, block in zip(range(0, n, BLOCK), blocks, strict=True):
            out[s : s + len(block)] = block
        out.flush()
        del out
        return
    import pyarrow as pa
    import pyarrow.parquet as pq

    writer = None
    for s, block in zip(range(0, n, BLOCK), blocks, strict=True):
        emb = pa.FixedSizeListArray.from_arrays(pa.array(block.ravel()), d)
        table = pa.table({"id": np.arange(s, s + len(block)), "text": [f"doc {i}" for i in range(s, s + len(block))]})
        table = table.append_column("emb", emb)
        writer = writer or pq.ParquetWriter(path, table.schema)
        writer.write_table(table)
    writer.close()


def fit_adapter(folder: Path, d: int, seed: int) -> Adapter:
    """A ridge adapter d -> d fitted on 2,000 synthetic pairs (the target a rotation of the source plus noise)."""
    rng = np.random.default_rng(seed + 1)
    X = rng.normal(size=(2_000, d)) + rng.normal(size=d)
    q, _ = np.linalg.qr(rng.normal(size=(d, d)))
    adapter = make_adapter("ridge").fit(X, X @ q + 0.1 * rng.normal(size=(2_000, d)))
    adapter.save(folder, metadata={"direction": "old->new"})
    return adapter


def child(adapter: Path, source: Path, out: Path, chunk_rows: int, kill_at: int | None = None) -> dict:
    """One apply in a fresh process: its report, wall time and peak RSS; ``kill_at``: SIGKILL once the ledger
    holds that many chunks (the report is then None)."""
    cmd = [sys.executable, "-c", CHILD, str(adapter), str(source), str(out), str(chunk_rows)]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env)
    ledger = out.parent / f".{out.name}{WORK_SUFFIX}" / LEDGER
    while kill_at is not None and proc.poll() is None:
        try:
            if len(json.loads(ledger.read_text())["chunks"]) >= kill_at:
                proc.send_signal(signal.SIGKILL)
                break
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.05)
    stdout, _ = proc.communicate()
    status, wall = proc.returncode, time.perf_counter() - start
    report = json.loads(stdout.strip().splitlines()[-1]) if status == 0 else None
    return {"report": report, "wall": wall, "status": status}


def check(adapter: Adapter, source: Path, out: Path, n: int, seed: int) -> float:
    """The largest relative error of 1,000 seeded rows of ``out`` against ``adapter.transform`` of the input."""
    rows = np.sort(np.random.default_rng(seed).choice(n, size=min(n, 1_000), replace=False))
    if source.suffix == ".npy":
        X, Z = np.load(source, mmap_mode="r")[rows], np.load(out, mmap_mode="r")[rows]
    else:
        import pyarrow.parquet as pq

        def take(path: Path) -> np.ndarray:
            col = pq.read_table(path, columns=["emb"]).column("emb").take(rows)
            return np.stack(col.to_numpy(zero_copy_only=False))

        X, Z = take(source), take(out)
    want = adapter.transform(np.asarray(X))
    return float((np.linalg.norm(Z - want, axis=1) / np.linalg.norm(want, axis=1)).max())


def bench_one(work: Path, adapter: Adapter, folder: Path, *, n: int, d: int, fmt: str, chunk_rows: int, seed: int):
    source, out = work / f"in-{n}.{fmt}", work / f"out-{n}.{fmt}"
    t = time.perf_counter()
    make_vectors(source, n, d, seed)
    made = time.perf_counter() - t
    run = child(folder, source, out, chunk_rows)
    assert run["status"] == 0, run
    rss = run["report"]["peak_rss_mib"]
    err = check(adapter, source, out, n, seed)
    chunks = run["report"]["units"]
    # the resume check in chunks small enough that a kill lands mid-file (at least 4 chunks), killed after half
    resume_rows = min(chunk_rows, -(-n // 4))
    resume_chunks = -(-n // resume_rows)
    resumed_out = work / f"resumed-{n}.{fmt}"
    killed = child(folder, source, resumed_out, resume_rows, kill_at=resume_chunks // 2)
    rerun = child(folder, source, resumed_out, resume_rows)
    assert rerun["status"] == 0, rerun
    assert rerun["report"]["units"] == resume_chunks, rerun
    rerun_err = check(adapter, source, resumed_out, n, seed)
    for p in (source, out, resumed_out):
        p.unlink(missing_ok=True)
    seconds = run["report"]["seconds"]
    return {
        "format": fmt,
        "n": n,
        "d": d,
        "chunk_rows": chunk_rows,
        "write_input_seconds": round(made, 2),
        "apply_seconds": round(seconds, 2),
        "process_cpu_seconds": round(run["report"]["cpu_seconds"], 2),
        "process_seconds": round(run["wall"], 2),
        "rows_per_second": round(n / seconds),
        "peak_rss_mib": round(rss, 1),
        "max_rel_error": err,
        "chunks": chunks,
        "resume_chunk_rows": resume_rows,
        "killed_status": killed["status"],
        "rerun_chunks": resume_chunks,
        "rerun_kept_chunks": rerun["report"]["resumed"],
        "rerun_seconds": round(rerun["report"]["seconds"], 2),
        "rerun_max_rel_error": rerun_err,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="100,000 x 768 .npy and 50,000 x 768 Parquet")
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--d", type=int, default=768)
    ap.add_argument("--chunk-rows", type=int, default=65_536)
    ap.add_argument("--parquet", action="store_true", help="also a Parquet file of --n rows (with id and text)")
    ap.add_argument("--work", default=None, help="a folder for the files (default: a temporary one)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    cases = [("npy", 100_000), ("parquet", 50_000)] if args.quick else [("npy", args.n)]
    if args.parquet and not args.quick:
        cases.append(("parquet", args.n))
    load_start = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="isoscope-bench-apply-", dir=args.work) as tmp:
        work = Path(tmp)
        adapter = fit_adapter(work / "adapter", args.d, args.seed)
        rows = [
            bench_one(
                work, adapter, work / "adapter", n=n, d=args.d, fmt=fmt, chunk_rows=args.chunk_rows, seed=args.seed
            )
            for fmt, n in cases
        ]
    print(f"{'format':8} {'rows':>10} {'apply s':>8} {'cpu s':>7} {'rows/s':>10} {'peak MiB':>9} {'rel err':>9} kept")
    for r in rows:
        print(
            f"{r['format']:8} {r['n']:>10,} {r['apply_seconds']:>8.1f} {r['process_cpu_seconds']:>7.1f} "
            f"{r['rows_per_second']:>10,} "
            f"{r['peak_rss_mib']:>9.0f} {r['max_rel_error']:>9.1e} {r['rerun_kept_chunks']:>2}/{r['rerun_chunks']}"
        )
    main_row = rows[0]
    scale = 1_000_000 / main_row["n"]  # --quick: the 1M time extrapolated from the rate (stated as such)
    result = {
        "runs": rows,
        "load_average_start": load_start,  # 1-minute load average: a wall time on a shared machine needs it
        "load_average_end": os.getloadavg()[0],
        "cpu_count": os.cpu_count(),
        "target_seconds_1m": TARGET_SECONDS,
        "target_rss_mib": TARGET_RSS_MIB,
        "seconds_1m": round(main_row["apply_seconds"] * scale, 1),
        # CPU seconds of the whole child (imports included), all threads: what a quiet machine's wall time is
        # at most on one core; independent of the other processes' load
        "cpu_seconds_1m": round(main_row["process_cpu_seconds"] * scale, 1),
        "seconds_1m_extrapolated": scale != 1.0,
        "met": main_row["apply_seconds"] * scale < TARGET_SECONDS
        and max(r["peak_rss_mib"] for r in rows) < TARGET_RSS_MIB,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
