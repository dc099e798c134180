"""Locations of data: the demo data shipped in ``assets/``, and STS-B next to the repository (not shipped)."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ASSETS = ROOT / "assets"
DEMO_CORPUS = ASSETS / "demo_corpus.csv"
DEMO_PAIRS = ASSETS / "demo_pairs.csv"


def stsb_dir() -> Path:
    """``$ISOSCOPE_STSB_DIR`` or ``../shared/data/stsb`` next to the repository (read, never copied)."""
    return Path(os.environ.get("ISOSCOPE_STSB_DIR") or ROOT.parent / "shared" / "data" / "stsb")
