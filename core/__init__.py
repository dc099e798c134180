"""Isoscope core: a library for seeing and fixing the geometry of sentence-embedding spaces.

Never imports streamlit; the dashboard is a thin layer over this package.
"""

from __future__ import annotations

__version__ = "0.2.0"
