"""Isoscope's encoder engines against sentence-transformers' own backends and fastembed, side by side in one process.

Usage (from the repo root; the peers need their own venv, made from bench/peers/requirements.lock)::

    make bench-peers                                   # full: STS-B test + dev sentences, best of 3, idle + contended
    make bench-peers ARGS=--quick                      # the sentences of 250 STS-B test pairs, under a minute
    .venv-peers/bin/python bench/encode_peers.py --contention 2 -v

Engines, all on the embedded all-MiniLM-L6-v2 with the same sentences, batch size (64) and max length (256):
sentence-transformers in torch fp32, its ONNX backend in fp32 and its dynamic int8 export for this CPU
(``export_dynamic_quantized_onnx_model``: avx2 / avx512 / avx512_vnni / arm64), fastembed on the same ONNX export
loaded from a local folder (it cannot download here), and Isoscope's torch fp32, its default fp32 engine
(``isoscope.encode.engines.fastest_fp32_encoder``) and its int8 engine (``isoscope.encode.quantize``). Isoscope
batches short sentences up to a token budget (``EmbedConfig.batch_tokens``); 64 is its smallest batch.

Each engine is timed ``--repeat`` times, rotating which goes first; the best wall time counts. Every row: sentences/s,
``cpu_ratio`` (CPU-seconds of sentence-transformers torch fp32 / this engine's, in the same pass), STS-B test
Spearman (x100, cosine), and ``max_dcos``: the largest |cos - cos_fp32| over the STS-B test pairs, against
sentence-transformers torch fp32. The contended pass (``--contention N``, default 2) repeats the ONNX rows while
N busy processes that this benchmark starts (a Python loop each) compete for the cores. The load average is
printed with each pass. The exports of the peers are cached under ``~/.cache/isoscope/bench-peers`` (the first
run spends most of its time exporting).

The LAST stdout line is one JSON object; targets: ``int8_vs_st_onnx_int8`` and ``int8_vs_st_onnx_int8_contended``
>= 1.2, ``fp32_vs_st_onnx_fp32`` >= 1, ``int8_spearman_loss`` (Isoscope fp32 minus int8) <= 0.3.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import logging
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
PEERS_PYTHON = REPO_ROOT / ".venv-peers" / "bin" / "python"
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
TARGET_INT8 = 1.2
TARGET_FP32 = 1.0
TARGET_LOSS = 0.3
QUICK_PAIRS = 250
CONTENDED = ("st_onnx_fp32", "st_onnx_int8", "isoscope_default", "isoscope_int8")
Embed = Callable[[list[str]], "object"]  # texts -> (n, d) array


def _reexec_in_peer_venv() -> None:
    """Run in .venv-peers when started from a python without the peers (``bench/run_all.py`` uses .venv)."""
    if importlib.util.find_spec("optimum") is not None:
        return
    if PEERS_PYTHON.exists() and Path(sys.executable).resolve() != PEERS_PYTHON.resolve():
        os.execv(str(PEERS_PYTHON), [str(PEERS_PYTHON), *sys.argv])
    print("encode_peers: the peer venv is missing; run `make bench-peers` (it builds .venv-peers from bench/peers/)")
    print(json.dumps({"bench": "encode_peers", "skipped": "no .venv-peers: run make bench-peers"}))
    raise SystemExit(0)


@dataclass
class Engine:
    name: str
    label: str
    embed: Embed | None  # None: could not be loaded (``error`` says why)
    error: str = ""


def cpu_flavour() -> str:
    """The sentence-transformers int8 export matching this CPU: arm64, avx512_vnni, avx512 or avx2."""
    if platform.machine().lower() in ("aarch64", "arm64"):
        return "arm64"
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "avx2"
    match = re.search(r"^flags\s*:(.*)$", text, re.M)
    flags = set(match.group(1).split()) if match else set()
    if "avx512_vnni" in flags or "avx512vnni" in flags:
        return "avx512_vnni"
    return "avx512" if "avx512f" in flags else "avx2"


# ---------------------------------------------------------------- the peers


def _atomic_folder(final: Path, make: Callable[[Path], None]) -> Path:
    """``final`` made by ``make(tmp)`` in a temporary folder beside it, then renamed (never a half-made export)."""
    if final.exists():
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=final.parent, prefix=".tmp-"))
    try:
        make(tmp)
        tmp.rename(final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final


def st_exports(model_path: str, folder: Path, flavour: str) -> tuple[Path, str, str]:
    """(folder, fp32 file, int8 file): sentence-transformers' ONNX export of the model and its int8 export."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.backend import export_dynamic_quantized_onnx_model

    def make(tmp: Path) -> None:
        st = SentenceTransformer(model_path, device="cpu", backend="onnx")  # exports with optimum
        st.save_pretrained(str(tmp))
        export_dynamic_quantized_onnx_model(st, flavour, str(tmp))

    out = _atomic_folder(folder / f"st-onnx-{flavour}", make)
    int8 = sorted(p.name for p in (out / "onnx").glob(f"model_*_{flavour}.onnx"))
    return out, "onnx/model.onnx", f"onnx/{int8[0]}"


def fastembed_folder(model_path: str, st_folder: Path, folder: Path) -> Path:
    """A folder fastembed loads (``specific_model_path``): the same ONNX export and the model's tokenizer files."""

    def make(tmp: Path) -> None:
        shutil.copy(st_folder / "onnx" / "model.onnx", tmp / "model.onnx")
        for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "config.json", "vocab.txt"):
            shutil.copy(Path(model_path) / name, tmp / name)

    return _atomic_folder(folder / "fastembed", make)


def peer_engines(model_path: str, batch_size: int, max_length: int, cache: Path) -> list[Engine]:
    import numpy as np
    from sentence_transformers import SentenceTransformer

    flavour = cpu_flavour()
    start = time.perf_counter()
    folder, fp32_file, int8_file = st_exports(model_path, cache, flavour)
    logging.info("sentence-transformers exports ready in %.1f s (%s)", time.perf_counter() - start, folder)

    def st(path: str, **kwargs: object) -> Embed:
        model = SentenceTransformer(path, device="cpu", **kwargs)
        model.max_seq_length = max_length
        return lambda texts: model.encode(texts, batch_size=batch_size, show_progress_bar=False, convert_to_numpy=True)

    engines = [
        Engine("st_torch_fp32", "sentence-transformers, torch fp32", st(model_path)),
        Engine(
            "st_onnx_fp32",
            "sentence-transformers, ONNX fp32",
            st(str(folder), backend="onnx", model_kwargs={"file_name": fp32_file}),
        ),
        Engine(
            "st_onnx_int8",
            f"sentence-transformers, ONNX int8 ({flavour})",
            st(str(folder), backend="onnx", model_kwargs={"file_name": int8_file}),
        ),
    ]
    try:
        from fastembed import TextEmbedding

        fe = TextEmbedding(
            "sentence-transformers/all-MiniLM-L6-v2",
            specific_model_path=str(fastembed_folder(model_path, folder, cache)),
            local_files_only=True,
        )
        engines.append(
            Engine(
                "fastembed",
                "fastembed (same ONNX export)",
                lambda t: np.asarray(list(fe.embed(t, batch_size=batch_size))),
            )
        )
    except Exception as exc:  # fastembed is optional: record why it did not load
        engines.append(
            Engine("fastembed", "fastembed", None, f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}")
        )
    return engines


def isoscope_engines(batch_size: int, max_length: int) -> tuple[list[Engine], dict[str, object]]:
    from isoscope.encode.embed import EmbedConfig, encode
    from isoscope.encode.engines import engine_in_use, fastest_fp32_encoder
    from isoscope.encode.models import load_encoder
    from isoscope.encode.quantize import quantize_encoder

    config = EmbedConfig(batch_size=batch_size, max_length=max_length)
    torch_fp32 = load_encoder()
    start = time.perf_counter()
    default = fastest_fp32_encoder(torch_fp32)
    default_label = engine_in_use(default)  # makes and checks the session now, outside the timing
    int8 = quantize_encoder(torch_fp32)
    engine_in_use(int8)
    build_s = time.perf_counter() - start

    def run(enc) -> Embed:
        return lambda texts: encode(enc, texts, "mean", config=config, cache=None)

    return [
        Engine("isoscope_torch_fp32", "Isoscope, torch fp32", run(torch_fp32)),
        Engine("isoscope_default", f"Isoscope default ({default_label})", run(default)),
        Engine("isoscope_int8", "Isoscope int8 (ONNX Runtime)", run(int8)),
    ], {"isoscope_build_s": round(build_s, 1), "isoscope_default_engine": default_label}


# ---------------------------------------------------------------- timing


@contextlib.contextmanager
def contention(n: int) -> Iterator[None]:
    """``n`` busy processes (a Python loop each) for the duration; ended by their pids."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        time.sleep(1.0)  # let the scheduler see them
        yield
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()


def time_pass(engines: list[Engine], texts: list[str], repeat: int) -> tuple[dict[str, float], dict[str, float], dict]:
    """(best wall seconds, best CPU seconds, outputs) per engine over ``repeat`` rotated rounds."""
    wall = {e.name: float("inf") for e in engines}
    cpu = dict(wall)
    outputs: dict = {}
    for i in range(repeat):
        k = i % len(engines)
        for e in engines[k:] + engines[:k]:
            w, c = time.perf_counter(), time.process_time()
            outputs[e.name] = e.embed(texts)
            wall[e.name] = min(wall[e.name], time.perf_counter() - w)
            cpu[e.name] = min(cpu[e.name], time.process_time() - c)
            logging.info("round %d %-20s %.2f s wall", i, e.name, time.perf_counter() - w)
    return wall, cpu, outputs


# ---------------------------------------------------------------- scoring


def test_pairs(stsb: Path, limit: int | None):
    from isoscope.data import load_pairs

    pairs = load_pairs(stsb / "stsb-en-test.csv")
    n = limit or len(pairs.sentence1)
    return pairs.sentence1[:n], pairs.sentence2[:n], pairs.scores[:n]


def sentences(stsb: Path, quick: bool) -> list[str]:
    from isoscope.data import load_pairs

    if quick:
        a, b, _ = test_pairs(stsb, QUICK_PAIRS)
        return list(dict.fromkeys(a + b))
    seen: dict[str, None] = {}
    for split in ("test", "dev"):
        pairs = load_pairs(stsb / f"stsb-en-{split}.csv")
        for s in pairs.sentence1 + pairs.sentence2:
            seen.setdefault(s, None)
    return list(seen)


def pair_cosines(vectors, texts: list[str], a: list[str], b: list[str]):
    import numpy as np

    from isoscope.geometry.pairs import cosine_pairs

    row = {t: i for i, t in enumerate(texts)}
    v = np.asarray(vectors, np.float32)
    return cosine_pairs(v[[row[s] for s in a]], v[[row[s] for s in b]])  # (pairs,)


def run(quick: bool, repeat: int, batch_size: int, max_length: int, n_contention: int) -> dict[str, object]:
    import numpy as np
    import onnxruntime
    import torch

    from isoscope.cache import default_cache_dir
    from isoscope.encode.models import default_model_path
    from isoscope.geometry.pairs import correlations
    from isoscope.paths import stsb_dir

    stsb = stsb_dir()
    texts = sentences(stsb, quick)
    a, b, gold = test_pairs(stsb, QUICK_PAIRS if quick else None)
    ours, info = isoscope_engines(batch_size, max_length)
    engines = peer_engines(default_model_path(), batch_size, max_length, default_cache_dir() / "bench-peers") + ours
    loaded = [e for e in engines if e.embed is not None]
    for e in loaded:  # warm-up (first-call allocations, sessions, thread pools), not timed
        e.embed(texts[:batch_size])

    load_idle = os.getloadavg()
    wall, cpu, outputs = time_pass(loaded, texts, repeat)
    load_after = os.getloadavg()
    ref = pair_cosines(outputs["st_torch_fp32"], texts, a, b)
    rows: dict[str, dict] = {}
    for e in engines:
        if e.embed is None:
            rows[e.name] = {"label": e.label, "error": e.error}
            continue
        cos = pair_cosines(outputs[e.name], texts, a, b)
        rows[e.name] = {
            "label": e.label,
            "sentences_per_s": round(len(texts) / wall[e.name], 1),
            "cpu_ratio": round(cpu["st_torch_fp32"] / cpu[e.name], 3),
            "spearman": round(correlations(cos, np.asarray(gold, float))["spearman"], 2),
            "max_dcos": float(f"{np.abs(cos - ref).max():.3g}"),
        }
    contended: dict[str, dict] = {}
    load_contended = None
    if n_contention > 0:
        hot = [e for e in loaded if e.name in CONTENDED]
        with contention(n_contention):
            wall_c, cpu_c, _ = time_pass(hot, texts, max(1, repeat - 1) if quick else repeat)
            load_contended = os.getloadavg()
        for e in hot:
            contended[e.name] = {
                "sentences_per_s": round(len(texts) / wall_c[e.name], 1),
                "cpu_s": round(cpu_c[e.name], 2),
            }

    def ratio(x: str, y: str, table: dict) -> float | None:
        if x not in table or y not in table:
            return None
        return round(table[x]["sentences_per_s"] / table[y]["sentences_per_s"], 3)

    loss = rows["isoscope_default"]["spearman"] - rows["isoscope_int8"]["spearman"]
    result = {
        "bench": "encode_peers",
        "mode": "quick" if quick else "full",
        "n_sentences": len(texts),
        "stsb_test_pairs": len(a),
        "batch_size": batch_size,
        "max_length": max_length,
        "repeat": repeat,
        "cpu_flavour": cpu_flavour(),
        "torch_threads": torch.get_num_threads(),
        "onnxruntime": onnxruntime.__version__,
        **info,
        "rows": rows,
        "contention_processes": n_contention,
        "contended": contended,
        "load_avg_idle_pass": [round(x, 2) for x in load_idle],
        "load_avg_after_idle_pass": [round(x, 2) for x in load_after],
        "load_avg_contended_pass": [round(x, 2) for x in load_contended] if load_contended else None,
        "int8_vs_st_onnx_int8": ratio("isoscope_int8", "st_onnx_int8", rows),
        "int8_vs_st_onnx_int8_contended": ratio("isoscope_int8", "st_onnx_int8", contended),
        "fp32_vs_st_onnx_fp32": ratio("isoscope_default", "st_onnx_fp32", rows),
        "fp32_vs_st_onnx_fp32_contended": ratio("isoscope_default", "st_onnx_fp32", contended),
        "default_vs_torch_fp32": ratio("isoscope_default", "isoscope_torch_fp32", rows),
        "int8_spearman_loss": round(loss, 2),
        "st_int8_spearman_loss": round(rows["st_onnx_fp32"]["spearman"] - rows["st_onnx_int8"]["spearman"], 2),
        "fastembed_loaded": "error" not in rows["fastembed"],
    }
    result["meets_targets"] = bool(
        (result["int8_vs_st_onnx_int8"] or 0) >= TARGET_INT8
        and (result["int8_vs_st_onnx_int8_contended"] or 0) >= TARGET_INT8
        and (result["fp32_vs_st_onnx_fp32"] or 0) >= TARGET_FP32
        and loss <= TARGET_LOSS
    )
    return result


def report(result: dict) -> list[str]:
    lines = [
        f"{result['n_sentences']} sentences, batch {result['batch_size']}, max length {result['max_length']}, "
        f"best of {result['repeat']}, {result['cpu_flavour']}, onnxruntime {result['onnxruntime']}",
        f"idle pass: load average {result['load_avg_idle_pass']} at start, {result['load_avg_after_idle_pass']} at the end",
        f"{'engine':48s} {'sent/s':>8s} {'cpu ratio':>9s} {'Spearman':>8s} {'max dcos':>9s} {'contended':>10s}",
    ]
    for name, row in result["rows"].items():
        if "error" in row:
            lines.append(f"{row['label']:48s} not run: {row['error']}")
            continue
        hot = result["contended"].get(name, {}).get("sentences_per_s", "")
        lines.append(
            f"{row['label']:48s} {row['sentences_per_s']:8.1f} {row['cpu_ratio']:9.3f} {row['spearman']:8.2f} "
            f"{row['max_dcos']:9.2e} {hot:>10}"
        )
    lines += [
        f"contended pass: {result['contention_processes']} busy processes, load average {result['load_avg_contended_pass']}",
        f"int8 vs sentence-transformers ONNX int8: {result['int8_vs_st_onnx_int8']} idle, "
        f"{result['int8_vs_st_onnx_int8_contended']} contended (target >= {TARGET_INT8})",
        f"default engine vs sentence-transformers ONNX fp32: {result['fp32_vs_st_onnx_fp32']} (target >= {TARGET_FP32})",
        f"int8 Spearman loss: {result['int8_spearman_loss']} (target <= {TARGET_LOSS}); "
        f"sentence-transformers' int8 loses {result['st_int8_spearman_loss']}",
    ]
    return lines


def main() -> None:
    _reexec_in_peer_venv()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"the sentences of {QUICK_PAIRS} STS-B test pairs")
    parser.add_argument("--repeat", type=int, default=None, help="timed rounds per pass (default 3, 2 with --quick)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--contention", type=int, default=2, help="busy processes during the contended pass (0: none)")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(message)s")
    for noisy in ("sentence_transformers", "optimum", "transformers"):
        logging.getLogger(noisy).setLevel(logging.ERROR)
    repeat = args.repeat if args.repeat is not None else (2 if args.quick else 3)
    result = run(args.quick, repeat, args.batch_size, args.max_length, args.contention)
    print("\n".join(report(result)))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
