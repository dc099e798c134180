"""Benchmark model migration (issue 53 item 7) on a real pair: the embedded all-MiniLM-L6-v2 (384) and
all-mpnet-base-v2 (768, from its PyPI pieces: bench/_mpnet.py), both directions, with isotrieve's maps side by side.

Usage (from the repo root)::

    .venv/bin/python bench/migrate.py --quick     # the demo task, 2 fit sizes, 2 adapters: under a minute (cached)
    .venv/bin/python bench/migrate.py             # the STS-B-derived task and the demo, every fit size and adapter
    make bench-migrate-peers ARGS=...             # the same, with isotrieve's venv made first

What it does:

1. mpnet is fetched (five pinned pieces, joined, unzipped under ~/.cache/isoscope/bench/mpnet) and Isoscope's
   embedding of it is checked against ``SentenceTransformer(folder).encode`` on STS-B sentences (max |diff| <= 2e-7).
2. Each task (bench/_stsb_task.py says how the STS-B task is built; the demo is the packaged demo retrieval task)
   is embedded by both models as ``isoscope migrate`` embeds it (``isoscope.migrate.sides.model_side``, cached).
3. At each fit size (a seeded 1%, 5%, 10%, 25% sample of the corpus; the ~10k generic STS-B train sentences alone;
   5% of the corpus plus them) ``isoscope.migrate.run.evaluate_migration`` fits every adapter both ways and scores
   the old model (a), the new (b) and each adapter (c): nDCG@10, c/b and (c - a)/(b - a) (only where b - a's 95%
   interval lies above 0) with paired bootstrap intervals, the label-free recall@10 against the new model's own
   top 10, and the time a query waits for the map.
4. The peer: on the SAME fit pairs, isotrieve's OrthogonalProcrustesMapping and RidgeMapping run in their own venv
   (bench/migrate_peers/isotrieve_maps.py, a subprocess reading and writing .npy files); their mapped vectors are
   searched and scored here exactly as the adapters are (search, pytrec_eval, the same paired tests and intervals).

The machine's load (os.getloadavg) is sampled through the run. Prints a table per task, then as its LAST line one
JSON object (``--out`` also writes it to a file).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parent
REPO_ROOT = BENCH.parent
for p in (str(REPO_ROOT), str(BENCH)):
    if p not in sys.path:
        sys.path.insert(0, p)

from _mpnet import fetch_mpnet, verify_mpnet  # noqa: E402
from _stsb_task import DESCRIPTION, stsb_task  # noqa: E402

from isoscope.errors import InputError  # noqa: E402
from isoscope.migrate.config import MigrationConfig  # noqa: E402
from isoscope.migrate.measure import kept_shares, shared_top  # noqa: E402
from isoscope.migrate.options import DEFAULT_ADAPTERS, NEW_TO_LEGACY, OLD_TO_NEW  # noqa: E402
from isoscope.migrate.run import evaluate_migration  # noqa: E402
from isoscope.migrate.spaces import check_spaces, fit_split  # noqa: E402
from isoscope.retrieval.metrics import per_query  # noqa: E402
from isoscope.retrieval.search import search  # noqa: E402
from isoscope.retrieval.stats import paired_test  # noqa: E402

# label -> (share of the corpus sampled as fit pairs, whether the generic texts are fit pairs too)
SIZES = {
    "1%": (0.01, False),
    "5%": (0.05, False),
    "10%": (0.10, False),
    "25%": (0.25, False),
    "generic": (0.0, True),
    "5% + generic": (0.05, True),
}
GENERIC = 10_000  # generic texts by default (a prefix of them: bench/_stsb_task.py)
PEER_PYTHON = REPO_ROOT / ".venv-migrate-peers" / "bin" / "python"
PEER_SCRIPT = BENCH / "migrate_peers" / "isotrieve_maps.py"
HEADLINE = "ndcg@10"
CHUNK = 1000  # generic texts embedded (and cached) per call


class LoadSampler:
    """os.getloadavg()'s 1-minute figure every few seconds in a thread: the load others put on this machine."""

    def __init__(self, every: float = 5.0) -> None:
        self.samples: list[float] = [os.getloadavg()[0]]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(every,), daemon=True)
        self._thread.start()

    def _run(self, every: float) -> None:
        while not self._stop.wait(every):
            self.samples.append(os.getloadavg()[0])

    def stop(self) -> dict:
        self._stop.set()
        s = np.array(self.samples)
        return {
            "cores": os.cpu_count(),
            "load1_min": float(s.min()),
            "load1_mean": float(s.mean()),
            "load1_max": float(s.max()),
        }


def embed_task(sides: dict, task, generic: list[str]) -> dict:
    """{"old"|"new": (Q, D, X)}: the task's queries, documents and the generic texts, as run_migration embeds them."""
    out = {}
    for label, side in sides.items():
        Q = side.embed(list(task.queries), "query", None)
        D = side.embed(list(task.documents), "document", None)
        X = None
        if generic:  # in chunks, each cached alone: a run with fewer generic texts reads a prefix of them
            X = np.vstack([side.embed(generic[i : i + CHUNK], "document", None) for i in range(0, len(generic), CHUNK)])
        out[label] = (Q, D, X)
    return out


def run_peer(pairs: tuple[np.ndarray, np.ndarray], Qb: np.ndarray, Da: np.ndarray) -> tuple[dict, dict]:
    """isotrieve's maps fitted on ``pairs`` in its venv: ({(map, direction): mapped vectors}, its peer.json)."""
    with tempfile.TemporaryDirectory(prefix="isoscope-migrate-peer-") as tmp:
        folder = Path(tmp)
        for name, array in (("old", pairs[0]), ("new", pairs[1]), ("queries_new", Qb), ("documents_old", Da)):
            np.save(folder / f"{name}.npy", np.ascontiguousarray(array, np.float32))
        subprocess.run([str(PEER_PYTHON), str(PEER_SCRIPT), str(folder)], check=True, timeout=1800)
        meta = json.loads((folder / "peer.json").read_text())
        mapped = {}
        for key, info in meta["maps"].items():
            if "refused" not in info:
                name, direction = key.split("_", 1)
                mapped[(name, direction)] = np.load(folder / f"{key}.npy")
    return mapped, meta


def score_peer(result, spaces, mapped: np.ndarray, direction: str, config: MigrationConfig) -> dict:
    """One peer map's vectors searched and scored as evaluate_migration scores an adapter."""
    task = result.task
    old = next(s for s in result.systems if s.role == "old")
    new = next(s for s in result.systems if s.role == "new")
    depth = min(config.depth, len(spaces.Da))
    if direction == NEW_TO_LEGACY:
        ranking = search(mapped, spaces.Da, depth)  # the new queries mapped, the old index untouched
    else:
        ranking = search(spaces.Qb, mapped, depth)  # every old document mapped
    new_top = search(spaces.Qb, spaces.Db, depth).ids[:, : config.k]
    scores = per_query(task, ranking)
    row = {
        HEADLINE: float(scores[HEADLINE].mean()),
        "agreement": float(shared_top(ranking.ids[:, : config.k], new_top).mean()),
    }
    for m in config.tested:
        t = paired_test(scores[m], new.scores[m], metric=m, resamples=config.resamples, seed=config.seed)
        kept = kept_shares(
            old.scores[m],
            new.scores[m],
            scores[m],
            new_vs_old=new.tests[m],
            resamples=config.resamples,
            seed=config.seed,
        )
        row[m] = float(scores[m].mean())
        row[f"{m} vs new"] = t.to_dict()
        row[f"{m} kept"] = kept.to_dict()
    return row


def _share(kept: dict | None) -> str:
    if not kept:
        return "-"
    return f"{kept['value']:.3f} [{kept['ci_low']:.3f}, {kept['ci_high']:.3f}]"


def rows_of(result, size: str, peer: tuple[dict, dict] | None, spaces, config) -> list[dict]:
    """One row per system at one fit size: ours from the result, the peer's scored here."""
    times = {(r.method, r.direction): r for r in result.adapters}
    rows = []
    for s in result.systems:
        kept = s.kept.get(HEADLINE)
        run = times.get((s.method, s.direction))
        rows.append(
            {
                "size": size,
                "system": s.name,
                "role": s.role,
                "method": s.method,
                "direction": s.direction,
                "ndcg@10": s.mean(HEADLINE),
                "recall@100": s.mean("recall@100"),
                "c/b": None if kept is None else kept.ratio.to_dict(),
                "recovered": None if kept is None or kept.recovered is None else kept.recovered.to_dict(),
                "label_free_recall@10": s.mean_agreement,
                "added_us_per_query": None if run is None or s.role != "adapted" else run.added_us_per_query,
                "fit_seconds": None if run is None or s.role != "adapted" else run.fit_seconds,
                "pairs": None if run is None else run.n_pairs,
            }
        )
    if peer is not None:
        mapped, meta = peer
        for key, info in meta["maps"].items():
            name, d = key.split("_", 1)
            direction = NEW_TO_LEGACY if d == "new-legacy" else OLD_TO_NEW
            row = {
                "size": size,
                "system": f"isotrieve {name} ({direction})",
                "role": "peer",
                "method": f"isotrieve:{name}",
                "direction": direction,
            }
            if "refused" in info:
                rows.append({**row, "refused": info["refused"]})
                continue
            scored = score_peer(result, spaces, mapped[(name, d)], direction, config)
            kept = scored[f"{HEADLINE} kept"]
            rows.append(
                {
                    **row,
                    "ndcg@10": scored[HEADLINE],
                    "recall@100": scored.get("recall@100"),
                    "c/b": kept["ratio"],
                    "recovered": kept["recovered"],
                    "label_free_recall@10": scored["agreement"],
                    "added_us_per_query": info["us_one_vector"] if direction == NEW_TO_LEGACY else 0.0,
                    "fit_seconds": info["fit_seconds"],
                    "pairs": meta["pairs"],
                    "alpha": info["alpha"],
                }
            )
    return rows


def bench_task(name: str, task, vectors: dict, sizes: list, config_args: dict, *, peer: bool) -> dict:
    """Every fit size on one task: the rows, and what evaluate_migration said (verdict, notes)."""
    (Qa, Da, Xa), (Qb, Db, Xb) = vectors["old"], vectors["new"]
    out = {"task": task.summary(), "sizes": [], "rows": []}
    for label, fraction, generic in sizes:
        config = MigrationConfig(fit_fraction=fraction, curve=(), **config_args)
        fit = (Xa, Xb) if generic else None
        start = time.perf_counter()
        try:
            result = evaluate_migration(
                (Qa, Da), (Qb, Db), task, fit=fit, config=config, names=("all-MiniLM-L6-v2", "all-mpnet-base-v2")
            )
        except InputError as e:  # too few fit pairs at this size (the demo's 1%): said, and the next size run
            out["sizes"].append({"size": label, "refused": str(e)})
            print(f"\n== {name}: {label}: refused: {e}", flush=True)
            continue
        seconds = time.perf_counter() - start
        spaces = check_spaces((Qa, Da), (Qb, Db), task, fit)
        pairs = spaces.fit_pairs(fit_split(len(Da), config.fraction_for(generic), config.seed)[0])
        peer_out = run_peer(pairs, Qb, Da) if peer else None
        rows = rows_of(result, label, peer_out, spaces, config)
        out["rows"] += rows
        out["sizes"].append(
            {
                "size": label,
                "pairs": len(pairs[0]),
                "seconds": seconds,
                "verdict": result.recommendation.words,
                "notes": list(result.notes),
                "peer": None if peer_out is None else peer_out[1],
            }
        )
        print(f"\n== {name}: {label} ({len(pairs[0]):,} fit pairs; {seconds:.0f} s) ==", flush=True)
        print_rows(rows)
        print("  verdict:", result.recommendation.words, flush=True)
    return out


def print_rows(rows: list[dict]) -> None:
    head = f"  {'system':<44} {'nDCG@10':>8} {'c/b [95% CI]':>26} {'(c-a)/(b-a)':>26} {'LF r@10':>8} {'us/q':>7}"
    print(head)
    for r in rows:
        if "refused" in r:
            print(f"  {r['system']:<44} refused: {r['refused'][:70]}")
            continue
        us = "" if r.get("added_us_per_query") is None else f"{r['added_us_per_query']:.1f}"
        print(
            f"  {r['system']:<44} {r['ndcg@10']:>8.4f} {_share(r['c/b']):>26} {_share(r['recovered']):>26} "
            f"{r['label_free_recall@10']:>8.3f} {us:>7}"
        )


def _cell(share: dict | None) -> str:
    return "-" if not share else f"{share['value']:.3f} [{share['ci_low']:.3f}, {share['ci_high']:.3f}]"


def markdown(reports: list[dict], *, brief: bool = False) -> str:
    """The results table of one or more runs' JSON objects (bench/RESULTS.md; ``brief``, for docs/results.md:
    without the partly re-embedded rows and isotrieve's refusals): one row per task, fit size and system; the old
    and new models once per task."""
    lines = [
        "| task | fit | pairs | system | nDCG@10 | c/b [95% CI] | (c-a)/(b-a) [95% CI] | label-free r@10 | us/query |",
        "|---|---|---:|---|---:|---|---|---:|---:|",
    ]
    shown: set[tuple[str, str]] = set()  # (task, old|new): each once across the runs
    for report in reports:
        for name, task in report["tasks"].items():
            pairs = {z["size"]: z.get("pairs") for z in task["sizes"]}
            for z in task["sizes"]:
                if "refused" in z:
                    lines.append(f"| {name} | {z['size']} | | refused: {z['refused']} | | | | | |")
            for r in task["rows"]:
                if brief and (r["role"] == "partial" or "refused" in r):
                    continue
                if r["role"] in ("old", "new"):
                    if (name, r["role"]) in shown:
                        continue
                    shown.add((name, r["role"]))
                    size, n = "", ""
                else:
                    size, n = r["size"], f"{pairs.get(r['size']) or '':,}"
                if "refused" in r:
                    lines.append(f"| {name} | {size} | {n} | {r['system']}: refused ({r['refused'][:60]}) | | | | | |")
                    continue
                us = "" if r.get("added_us_per_query") is None else f"{r['added_us_per_query']:.0f}"
                lines.append(
                    f"| {name} | {size} | {n} | {r['system']} | {r['ndcg@10']:.4f} | {_cell(r['c/b'])} | "
                    f"{_cell(r['recovered'])} | {r['label_free_recall@10']:.3f} | {us} |"
                )
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="the demo task, 5%% and 25%%, procrustes and ridge")
    p.add_argument("--tasks", nargs="+", choices=("stsb", "demo"), default=None)
    p.add_argument("--methods", nargs="+", default=None)
    p.add_argument(
        "--sizes",
        nargs="+",
        default=None,
        help="fit sizes among " + ", ".join(SIZES).replace("%", "%%") + " (default: all)",
    )
    p.add_argument("--generic", type=int, default=GENERIC, help="generic fit texts (a prefix; default %(default)s)")
    p.add_argument("--resamples", type=int, default=2000)
    p.add_argument("--verify-texts", type=int, default=None, help="STS-B sentences for the mpnet equality check")
    p.add_argument("--no-peer", action="store_true", help="leave isotrieve out (its venv: make bench-migrate-peers)")
    p.add_argument("--out", type=Path, default=None, help="write the JSON object here too")
    p.add_argument("--markdown", type=Path, nargs="+", default=None, help="print the table of these --out files")
    p.add_argument("--brief", action="store_true", help="with --markdown: leave out partly re-embedded and refusals")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> dict:
    from isoscope.cache import ArrayCache
    from isoscope.encode.models import load_encoder
    from isoscope.migrate.sides import model_side
    from isoscope.paths import DEMO_RETRIEVAL
    from isoscope.retrieval.load import load_task

    args = parse_args(argv)
    if args.markdown:
        print(markdown([json.loads(p.read_text()) for p in args.markdown], brief=args.brief))
        return {}
    load = LoadSampler()
    started = time.perf_counter()
    peer = not args.no_peer
    if peer and not PEER_PYTHON.exists():
        raise SystemExit(f"{PEER_PYTHON} is missing: run `make bench-migrate-peers` (or pass --no-peer)")
    tasks = args.tasks or (["demo"] if args.quick else ["stsb", "demo"])
    # None: isoscope.migrate's DEFAULT_ADAPTERS, each where the fit pairs allow it (mlp from 20 pairs)
    methods = tuple(args.methods) if args.methods else ("procrustes", "ridge") if args.quick else None
    generic_n = 1000 if args.quick else args.generic
    chosen = args.sizes or (["5%", "25%"] if args.quick else list(SIZES))
    unknown = [z for z in chosen if z not in SIZES]
    if unknown:
        raise SystemExit(f"unknown size {unknown[0]!r}; choose from {', '.join(SIZES)}")
    sizes = [(z, *SIZES[z]) for z in chosen]
    stsb, generic = stsb_task()
    generic = generic[:generic_n] if any(g for _, _, g in sizes) else []

    folder = fetch_mpnet()
    encoders = {"old": load_encoder(None, device="cpu"), "new": load_encoder(str(folder), device="cpu")}
    verify_n = args.verify_texts or (16 if args.quick else 300)
    verify_texts = list(dict.fromkeys(stsb.documents))[:verify_n]
    check = verify_mpnet(folder, verify_texts, encoders["new"])
    print(
        f"mpnet: Isoscope vs SentenceTransformer.encode on {check['texts']} STS-B sentences, the same batches: max "
        f"|diff| {check['max_abs_diff']:.3g} (tolerance {check['tolerance']:g}): "
        f"{'equal' if check['equal'] else 'NOT EQUAL'}; each with its own batching {check['default_batches_diff']:.3g} "
        f"(sentence-transformers against itself, batch 32 vs one batch: {check['st_batch_floor']:.3g})",
        flush=True,
    )
    cache = ArrayCache()
    sides = {label: model_side(enc, cache=cache) for label, enc in encoders.items()}
    config_args = {"methods": methods, "resamples": args.resamples}
    report: dict = {
        "mpnet_check": check,
        "stsb_task": DESCRIPTION,
        "methods": list(methods or DEFAULT_ADAPTERS),
        "tasks": {},
    }
    for name in tasks:
        task = stsb if name == "stsb" else load_task(DEMO_RETRIEVAL, "test")
        t = time.perf_counter()
        vectors = embed_task(sides, task, generic)
        print(
            f"\n{name}: {task.n_queries} queries, {task.n_documents} documents, {len(generic):,} generic texts; "
            f"embedded (or read from the cache) in {time.perf_counter() - t:.0f} s",
            flush=True,
        )
        report["tasks"][name] = bench_task(name, task, vectors, sizes, config_args, peer=peer)
    report["load"] = load.stop()
    report["seconds"] = time.perf_counter() - started
    report["command"] = "bench/migrate.py " + " ".join(argv if argv is not None else sys.argv[1:])
    line = json.dumps(report, default=float)
    if args.out:
        args.out.write_text(line + "\n")
    print(f"\nload (1-min average, {report['load']['cores']} cores): {report['load']}; {report['seconds']:.0f} s")
    print(line)
    return report


if __name__ == "__main__":
    main()
