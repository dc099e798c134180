"""Reading finished landscape results back (for the dashboard and for re-runs).

Layout of a result folder (default ``~/.cache/isoscope/landscape/<key>``)::

    summary.json                    what ``python -m core landscape`` printed, plus paths
    <init>/results.json             axes, coordinates, trajectories, rollback, flatness, metrics
    <init>/curve_1d.npz             alpha, train_loss, train_acc, heldout_loss, heldout_acc, heldout_error
    <init>/surface.npz              alpha (n_a,), beta (n_b,), the same metrics as (n_a, n_b) grids
    checkpoints/<run>/epoch_*.safetensors   flat parameter vectors (+ JSON sidecars)

``<init>`` is ``pretrained`` or ``scratch``. Everything is JSON, npz or safetensors: nothing is unpickled.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from core.cache import default_cache_dir
from core.errors import InputError
from core.landscape.store import read_arrays, read_json

SUMMARY = "summary.json"
RESULTS = "results.json"
CURVE = "curve_1d.npz"
SURFACE = "surface.npz"


def default_root() -> Path:
    """Folder holding one sub-folder per landscape experiment."""
    return default_cache_dir() / "landscape"


@dataclass
class InitResults:
    """Everything computed for one initialisation (pre-trained or scratch)."""

    init: str
    results: dict
    curve: dict[str, np.ndarray] = field(default_factory=dict)
    surface: dict[str, np.ndarray] = field(default_factory=dict)

    def trajectory_frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.results.get("trajectory", []))

    def rollback_frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.results.get("rollback", []))


@dataclass
class LandscapeResults:
    out_dir: Path
    summary: dict
    inits: dict[str, InitResults]


def load_results(out_dir: str | Path) -> LandscapeResults:
    """Results of a finished run; InputError when the folder holds none."""
    out_dir = Path(out_dir).expanduser()
    summary = read_json(out_dir / SUMMARY)
    if summary is None:
        raise InputError(f"{out_dir}: no landscape results here; run `python -m core landscape` first")
    inits: dict[str, InitResults] = {}
    for init in summary.get("inits", []):
        results = read_json(out_dir / init / RESULTS)
        if results is None:
            continue
        inits[init] = InitResults(
            init,
            results,
            read_arrays(out_dir / init / CURVE) or {},
            read_arrays(out_dir / init / SURFACE) or {},
        )
    return LandscapeResults(out_dir, summary, inits)


def list_results(root: str | Path | None = None) -> list[dict]:
    """Summaries of the finished runs under ``root`` (newest first), each with its ``out_dir``."""
    root = Path(root) if root is not None else default_root()
    found = []
    for path in root.glob(f"*/{SUMMARY}") if root.exists() else []:
        summary = read_json(path)
        if summary is not None:
            found.append({**summary, "out_dir": str(path.parent), "mtime": path.stat().st_mtime})
    return sorted(found, key=lambda s: -s["mtime"])
