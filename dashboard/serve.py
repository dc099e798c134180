"""The dashboard as a Streamlit ``st.App``: the Atlas map's routes on the app's own server, and in classroom
mode response headers that forbid framing.

``isoscope app`` runs ``streamlit run dashboard/serve.py``: Streamlit finds ``app`` below and serves ``app.py``
through Starlette/uvicorn with
- the routes of ``isoscope.dashboard.tiles`` (map tiles, lit-up points, the point under the cursor), which only
  answer for atlases a page has published (by a random token, so only a session past the access code knows it);
- in classroom mode ``SecurityHeaders`` in front of Streamlit's own middleware, so every HTTP response, the
  routes' included, carries ``X-Frame-Options: DENY`` and ``Content-Security-Policy: frame-ancestors 'none'``.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st
from starlette.middleware import Middleware

from isoscope.dashboard import classroom, tiles
from isoscope.dashboard.classroom import SecurityHeaders

middleware = [Middleware(SecurityHeaders)] if classroom.enabled() else []
app = st.App(str(Path(__file__).resolve().parent / "app.py"), routes=tiles.routes(), middleware=middleware)
