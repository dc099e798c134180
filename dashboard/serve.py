"""The dashboard as a Streamlit ``st.App`` behind classroom mode's server layer.

``isoscope app --classroom`` runs ``streamlit run dashboard/serve.py``: Streamlit finds ``app`` below and
serves ``app.py`` through Starlette/uvicorn with two ASGI middlewares in front of its own routes:
``ClassroomGuard`` (``isoscope.dashboard.guard``: before the access code, nothing but the code form reaches a
session; no uploads, no cache control, no metrics; guesses throttled per client address and for the server)
and ``SecurityHeaders`` (every HTTP response carries ``X-Frame-Options: DENY`` and
``Content-Security-Policy: frame-ancestors 'none'``; no server path in the WebSocket's session message).
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st
from starlette.middleware import Middleware

from isoscope.dashboard.classroom import SecurityHeaders
from isoscope.dashboard.guard import ClassroomGuard

app = st.App(
    str(Path(__file__).resolve().parent / "app.py"),
    middleware=[Middleware(ClassroomGuard), Middleware(SecurityHeaders)],
)
