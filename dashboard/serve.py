"""The dashboard as a Streamlit ``st.App`` with response headers that forbid framing (classroom mode).

``isoscope app --classroom`` runs ``streamlit run dashboard/serve.py``: Streamlit finds ``app`` below and
serves ``app.py`` through Starlette/uvicorn with ``SecurityHeaders`` in front of its own middleware, so
every HTTP response carries ``X-Frame-Options: DENY`` and ``Content-Security-Policy: frame-ancestors 'none'``.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st
from starlette.middleware import Middleware

from isoscope.dashboard.classroom import SecurityHeaders

app = st.App(str(Path(__file__).resolve().parent / "app.py"), middleware=[Middleware(SecurityHeaders)])
