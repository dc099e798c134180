"""Peak resident memory of code run in a child process (``VmHWM``), for the promise that a refused file costs
little: the child's address space is capped, so code that does expand a hostile file fails instead of
taking the machine."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GiB = 2**30


def child_peak(
    argv: list[str], tmp_path: Path, env: dict[str, str] | None = None, limit: int = 6 * GiB, timeout: float = 600
) -> tuple[int, str, int]:
    """Run ``python -c`` with ``argv[0]`` executed (``sys.argv[1:]`` the rest) in a child whose address space is
    capped at ``limit``; returns (exit status, stderr, peak resident bytes of the child).

    The fixed loaders need a fraction of the default 6 GiB cap (torch alone maps about 2 GiB).
    """
    out = tmp_path / f"peak-{os.getpid()}-{len(list(tmp_path.glob('peak-*')))}.txt"
    code = (
        "import sys, runpy\n"
        "try:\n    exec(sys.argv[1])\n"
        "finally:\n"
        "    hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM:')][0].split()[1]\n"
        f"    open({str(out)!r}, 'w').write(hwm)\n"
    )

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    run_env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "ISOSCOPE_CACHE": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", code, *argv],
        capture_output=True,
        text=True,
        env={**run_env, **(env or {})},
        preexec_fn=cap,
        cwd=ROOT,
        timeout=timeout,
    )
    return done.returncode, done.stderr, int(out.read_text()) * 1024
