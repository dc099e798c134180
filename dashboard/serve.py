"""The dashboard as a Streamlit ``st.App`` with response headers that forbid framing (classroom mode).

``isoscope app --classroom`` runs ``streamlit run dashboard/serve.py``: Streamlit finds ``app`` below and
serves ``app.py`` through Starlette/uvicorn with ``SecurityHeaders`` in front of its own middleware, so
every HTTP response carries ``X-Frame-Options: DENY`` and ``Content-Security-Policy: frame-ancestors 'none'``.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # a checkout that is not installed
    sys.path.insert(0, str(ROOT))

import streamlit as st  # noqa: E402
from starlette.middleware import Middleware  # noqa: E402

from isoscope.dashboard.classroom import SecurityHeaders  # noqa: E402

app = st.App(str(Path(__file__).resolve().parent / "app.py"), middleware=[Middleware(SecurityHeaders)])
