"""Locations of data: the demo data shipped inside the package, and STS-B next to the checkout (not shipped)."""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]  # the checkout (or site-packages when installed)
ASSETS = Path(str(resources.files("isoscope.assets")))  # assets/ at the top of the checkout, package data in a wheel
DEMO_CORPUS = ASSETS / "demo_corpus.csv"
DEMO_PAIRS = ASSETS / "demo_pairs.csv"


def stsb_dir() -> Path:
    """``$ISOSCOPE_STSB_DIR`` or ``../shared/data/stsb`` next to the checkout (read, never copied)."""
    return Path(os.environ.get("ISOSCOPE_STSB_DIR") or ROOT.parent / "shared" / "data" / "stsb")
