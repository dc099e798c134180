"""Run every benchmark in bench/ and rewrite bench/RESULTS.md with the machine and each bench's figures.

Usage (from the repo root)::

    .venv/bin/python bench/run_all.py                 # every bench/*.py with --quick
    .venv/bin/python bench/run_all.py --full          # the full runs (no --quick; minutes each)
    .venv/bin/python bench/run_all.py --only metrics  # some benches; the other sections of RESULTS.md are kept

Each bench runs as a subprocess with the repository's python (``.venv/bin/python`` when present), offline,
from the repository root; its LAST stdout line must be one JSON object. RESULTS.md gets the machine (CPU
model, cores, RAM, python and torch versions, date, commit) and per bench a table of its figures, the exact
command, its wall time and exit status. Text between ``<!-- notes -->`` and ``<!-- /notes -->`` is kept as
written by hand. Exit status: 0 when every bench succeeded, 1 otherwise (RESULTS.md is written either way).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import os
import platform
import re
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
RESULTS = BENCH_DIR / "RESULTS.md"
NOTES_RE = re.compile(r"<!-- notes -->\n?(.*?)\n?<!-- /notes -->", re.S)
SECTION_RE = re.compile(r"<!-- bench:(?P<name>[\w.-]+) -->\n(?P<body>.*?)<!-- /bench:(?P=name) -->\n?", re.S)
DEFAULT_NOTES = "_Hand-written notes go here; `bench/run_all.py` keeps this block when it rewrites the file._"
ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
MAX_CELL = 120

log = logging.getLogger("run_all")


@dataclass
class BenchRun:
    name: str
    command: list[str]
    seconds: float = 0.0
    returncode: int | None = None
    result: dict | None = None
    error: str = ""
    stderr_tail: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and self.result is not None


# ---------------------------------------------------------------- discovery and running


def repo_python() -> str:
    venv = REPO_ROOT / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def discover(only: list[str] | None = None) -> list[Path]:
    """bench/*.py except this runner and private modules, optionally restricted to ``only`` (names)."""
    scripts = sorted(p for p in BENCH_DIR.glob("*.py") if p.name != Path(__file__).name and not p.name.startswith("_"))
    if only:
        wanted = {o.removesuffix(".py") for o in only}
        unknown = wanted - {p.stem for p in scripts}
        if unknown:
            valid = ", ".join(p.stem for p in scripts)
            raise SystemExit(f"unknown bench(es): {', '.join(sorted(unknown))}; choose from {valid}")
        scripts = [p for p in scripts if p.stem in wanted]
    return scripts


def display_command(command: list[str]) -> str:
    """The command as one would type it from the repository root."""
    parts = []
    for c in command:
        p = Path(c)
        parts.append(str(p.relative_to(REPO_ROOT)) if p.is_absolute() and p.is_relative_to(REPO_ROOT) else c)
    return "HF_HUB_OFFLINE=1 " + shlex.join(parts)


def last_json(stdout: str) -> dict:
    """The last non-empty stdout line, parsed as a JSON object."""
    lines = [x for x in stdout.splitlines() if x.strip()]
    if not lines:
        raise ValueError("no output on stdout")
    value = json.loads(lines[-1])
    if not isinstance(value, dict):
        raise ValueError(f"the last stdout line is JSON but not an object: {lines[-1][:80]}")
    return value


def run_bench(script: Path, python: str, quick: bool, timeout: float | None) -> BenchRun:
    command = [python, str(script)] + (["--quick"] if quick else [])
    run = BenchRun(script.stem, command)
    env = {**os.environ, **ENV}
    start = time.perf_counter()
    try:
        proc = subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        run.seconds = time.perf_counter() - start
        run.error = f"timed out after {timeout:.0f} s"
        stderr = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else exc.stderr or ""
        run.stderr_tail = stderr.splitlines()[-5:]
        return run
    run.seconds = time.perf_counter() - start
    run.returncode = proc.returncode
    run.stderr_tail = [x for x in proc.stderr.splitlines() if x.strip()][-5:]
    try:
        run.result = last_json(proc.stdout)
    except ValueError as exc:  # json.JSONDecodeError is a ValueError
        run.error = f"no JSON result: {str(exc).splitlines()[0]}"
    if proc.returncode != 0:
        run.error = f"exit status {proc.returncode}" + (f"; {run.error}" if run.error else "")
    return run


# ---------------------------------------------------------------- machine


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith(("model name", "hardware", "processor\t: ")) and ":" in line:
                value = line.split(":", 1)[1].strip()
                if value and not value.isdigit():
                    return value
    except OSError:
        pass
    return platform.processor() or platform.machine()


def ram_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / 2**20
    except (OSError, ValueError, IndexError):
        pass
    return None


def package_versions(python: str) -> dict[str, str]:
    """python, torch (and its threads) and numpy versions of the interpreter the benches run with."""
    code = (
        "import json, platform\n"
        "out = {'python': platform.python_version()}\n"
        "try:\n    import torch\n    out['torch'] = torch.__version__; out['torch_threads'] = torch.get_num_threads()\n"
        "except Exception as e:\n    out['torch'] = 'not importable (' + type(e).__name__ + ')'\n"
        "try:\n    import numpy\n    out['numpy'] = numpy.__version__\n"
        "except Exception:\n    pass\n"
        "print(json.dumps(out))\n"
    )
    try:
        proc = subprocess.run(
            [python, "-c", code], capture_output=True, text=True, timeout=120, env={**os.environ, **ENV}
        )
        return {k: str(v) for k, v in json.loads(proc.stdout.strip().splitlines()[-1]).items()}
    except (OSError, ValueError, IndexError, subprocess.TimeoutExpired):
        return {"python": platform.python_version()}


def git_commit() -> str:
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=10
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return (sha or "unknown") + (" (with uncommitted changes)" if dirty else "")


def machine(python: str, now: dt.datetime) -> dict[str, str]:
    versions = package_versions(python)
    ram = ram_gib()
    info = {
        "CPU": cpu_model(),
        "cores (logical)": str(os.cpu_count() or "?"),
        "cores usable": str(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else "?"),
        "RAM": f"{ram:.1f} GiB" if ram else "?",
        "OS": f"{platform.system()} {platform.release()}",
        "python": versions.get("python", "?"),
        "torch": versions.get("torch", "?")
        + (f" ({versions['torch_threads']} threads)" if "torch_threads" in versions else ""),
        "numpy": versions.get("numpy", "?"),
        "date": now.strftime("%Y-%m-%d %H:%M UTC"),
        "commit": git_commit(),
    }
    try:
        info["load average (1, 5, 15 min)"] = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        pass
    return info


# ---------------------------------------------------------------- markdown


def flatten(obj: object, prefix: str = "") -> list[tuple[str, object]]:
    """Nested dicts become dotted keys; lists of scalars stay one value."""
    if isinstance(obj, dict):
        out: list[tuple[str, object]] = []
        for k, v in obj.items():
            out.extend(flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    return [(prefix, obj)]


def cell(value: object) -> str:
    if isinstance(value, float):
        text = f"{value:.6g}"
    elif isinstance(value, bool) or value is None:
        text = json.dumps(value)
    elif isinstance(value, list | tuple):
        text = json.dumps(value, separators=(", ", ": "))
    else:
        text = str(value)
    text = text.replace("|", "\\|").replace("\n", " ")
    return text if len(text) <= MAX_CELL else text[: MAX_CELL - 1] + "…"


def bench_section(run: BenchRun, mode: str, now: dt.datetime) -> str:
    status = "ok" if run.ok else f"**FAILED** ({run.error})"
    lines = [
        f"## {run.name}",
        "",
        f"Ran {now.strftime('%Y-%m-%d %H:%M UTC')}, mode {mode}, {run.seconds:.1f} s wall, {status}.",
        "",
        "```",
        display_command(run.command),
        "```",
        "",
    ]
    if run.result:
        lines += ["| figure | value |", "|---|---|"]
        lines += [f"| {cell(k)} | {cell(v)} |" for k, v in flatten(run.result)]
        lines.append("")
    if not run.ok and run.stderr_tail:
        lines += ["Last lines on stderr:", "", "```", *run.stderr_tail, "```", ""]
    return "\n".join(lines)


def render(
    machine_info: dict[str, str], sections: dict[str, str], order: list[str], notes: str, mode: str, ran: list[str]
) -> str:
    out = [
        "# Benchmark results",
        "",
        "Written by `bench/run_all.py` (`make bench`); rerun it rather than editing by hand. Only the notes block "
        "below is kept as written.",
        "",
        "<!-- notes -->",
        notes.strip("\n") or DEFAULT_NOTES,
        "<!-- /notes -->",
        "",
        "## Machine",
        "",
        f"Last run: mode {mode}, benches {', '.join(ran)}.",
        "",
        "| | |",
        "|---|---|",
        *[f"| {k} | {cell(v)} |" for k, v in machine_info.items()],
        "",
    ]
    for name in order:
        out += [f"<!-- bench:{name} -->", sections[name].rstrip("\n"), "", f"<!-- /bench:{name} -->", ""]
    return "\n".join(out).rstrip("\n") + "\n"


def read_existing(path: Path) -> tuple[str, dict[str, str]]:
    """(notes, sections by bench name) of an existing RESULTS.md."""
    if not path.exists():
        return "", {}
    text = path.read_text(encoding="utf-8")
    m = NOTES_RE.search(text)
    notes = m.group(1) if m else ""
    sections = {s.group("name"): s.group("body") for s in SECTION_RE.finditer(text)}
    return notes, sections


def write_results(path: Path, runs: list[BenchRun], machine_info: dict[str, str], mode: str, now: dt.datetime) -> None:
    notes, sections = read_existing(path)
    for r in runs:
        sections[r.name] = bench_section(r, mode, now)
    present = {p.stem for p in BENCH_DIR.glob("*.py")}
    order = sorted(n for n in sections if n in present or n in {r.name for r in runs})
    text = render(machine_info, sections, order, notes, mode, [r.name for r in runs])
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


# ---------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", dest="quick", action="store_true", default=True, help="each bench --quick (default)")
    mode.add_argument("--full", dest="quick", action="store_false", help="the full runs (each bench without --quick)")
    parser.add_argument(
        "--only", action="append", metavar="NAME", help="run only this bench (repeatable), e.g. metrics"
    )
    parser.add_argument("--timeout", type=float, default=None, help="seconds per bench (default: 900 quick, none full)")
    parser.add_argument("--output", type=Path, default=RESULTS, help="results file (default: bench/RESULTS.md)")
    parser.add_argument("--python", default=None, help="interpreter for the benches (default: .venv/bin/python)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")

    python = args.python or repo_python()
    timeout = args.timeout if args.timeout is not None else (900.0 if args.quick else None)
    mode_name = "quick" if args.quick else "full"
    scripts = discover(args.only)
    now = dt.datetime.now(dt.UTC)
    runs = []
    for script in scripts:
        log.info("%s ...", display_command([python, str(script)] + (["--quick"] if args.quick else [])))
        run = run_bench(script, python, args.quick, timeout)
        log.info("  %s in %.1f s%s", "ok" if run.ok else "FAILED", run.seconds, f": {run.error}" if run.error else "")
        runs.append(run)
    write_results(args.output, runs, machine(python, now), mode_name, now)
    log.info("wrote %s", args.output)
    failed = [r.name for r in runs if not r.ok]
    if failed:
        log.error("failed: %s", ", ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
