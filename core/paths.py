"""Locations of the demo data shipped in ``assets/``."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ASSETS = ROOT / "assets"
DEMO_CORPUS = ASSETS / "demo_corpus.csv"
DEMO_PAIRS = ASSETS / "demo_pairs.csv"
