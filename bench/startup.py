"""Start-up time of the command line: ``isoscope --help`` and ``isoscope COMMAND --help`` against ``python -c pass``.

Every command is timed as a whole process, several times, interleaved with the baseline (this machine is noisy:
the figure is the ratio and the difference of the minima, measured side by side in one run). Target: every help
answers in well under a second (< 1 s wall, minimum over runs), because command modules import torch,
transformers and faiss only inside ``run``.

Usage::

    .venv/bin/python bench/startup.py           # 9 runs of each
    .venv/bin/python bench/startup.py --quick   # 3 runs of each

The last stdout line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from isoscope.cli import COMMANDS as REGISTERED  # light: the registry imports no command module

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = ("", *REGISTERED)  # every command, sweep included
TARGET_SECONDS = 1.0


def timed(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, cwd=ROOT, env={**os.environ, "HF_HUB_OFFLINE": "1"}, capture_output=True, check=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 runs of each command instead of 9")
    args = parser.parse_args()
    runs = 3 if args.quick else 9
    baseline = [sys.executable, "-c", "pass"]
    helps = {c or "isoscope": [sys.executable, "-m", "isoscope", *([c] if c else []), "--help"] for c in COMMANDS}
    times: dict[str, list[float]] = {"python -c pass": [], **{name: [] for name in helps}}
    for _ in range(runs):  # interleaved, so load changes hit every command alike
        times["python -c pass"].append(timed(baseline))
        for name, argv in helps.items():
            times[name].append(timed(argv))
    best = {name: min(t) for name, t in times.items()}
    base = best.pop("python -c pass")
    slowest = max(best, key=best.get)
    for name, t in sorted(best.items(), key=lambda kv: kv[1]):
        print(f"{name + ' --help':<22} {t:6.3f} s  ({t / base:5.1f}x python -c pass, +{t - base:.3f} s)")
    result = {
        "bench": "startup",
        "mode": "quick" if args.quick else "full",
        "runs": runs,
        "python_pass_seconds": round(base, 4),
        "help_seconds": {name: round(t, 4) for name, t in best.items()},
        "slowest_help": slowest,
        "slowest_help_seconds": round(best[slowest], 4),
        "slowest_ratio_to_python_pass": round(best[slowest] / base, 2),
        "target_seconds": TARGET_SECONDS,
        "meets_target": best[slowest] < TARGET_SECONDS,
        "load_average": os.getloadavg()[0],
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
