"""The figure modules are pure: importing them (and the user-text helpers) never imports Streamlit."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

FIGURES = Path(__file__).resolve().parents[3] / "dashboard" / "figures"


def test_figures_do_not_import_streamlit():
    modules = ["isoscope.dashboard.text", *(f"isoscope.dashboard.figures.{p.stem}" for p in FIGURES.glob("[!_]*.py"))]
    assert len(modules) > 3
    code = f"import sys; import {', '.join(modules)}; print('streamlit' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"
