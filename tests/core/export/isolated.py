"""Run Python in a subprocess where Isoscope cannot be imported: the editable install's finder and the
repository's folders are dropped, and the script asserts ``find_spec('isoscope') is None`` before it runs.
What it does with an exported model is then done with the exported files and the outside libraries alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

PRELUDE = """
import importlib.util, json, sys
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in getattr(f, "__module__", "")]
sys.path_hooks[:] = [h for h in sys.path_hooks if "editable" not in getattr(h, "__module__", "")]
sys.path_importer_cache.clear()
sys.path[:] = [p for p in sys.path if p and ("site-packages" in p or p.startswith(sys.base_prefix))]  # no repository folder
assert importlib.util.find_spec("isoscope") is None, "isoscope is importable"
ARGS = json.loads(sys.argv[1])
"""
EPILOGUE = """
assert not [m for m in sys.modules if m.split(".")[0] == "isoscope"], "isoscope was imported"
"""


def run_without_isoscope(code: str, args: dict, cwd: Path) -> None:
    """Run ``code`` (with ``ARGS`` = ``args``) in a fresh interpreter that cannot import Isoscope; raise with its
    stderr when it fails."""
    env = {**os.environ, "PYTHONPATH": "", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", PRELUDE + code + EPILOGUE, json.dumps(args)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
