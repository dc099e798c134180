"""The dashboard as a Streamlit ``st.App``: the Atlas map's routes on the app's own server, and in classroom
mode the server layer in front of everything.

``isoscope app`` runs ``streamlit run dashboard/serve.py``: Streamlit finds ``app`` below and serves ``app.py``
through Starlette/uvicorn with
- the routes of ``isoscope.dashboard.tiles`` (map tiles, lit-up points, the point under the cursor), which only
  answer for atlases a page has published (by a random token, so only a session past the access code knows it);
- ``isoscope.dashboard.base_url.BaseUrl``: every HTML page says the server's base URL, so a page opened by its
  own URL (``/atlas``) does not probe ``/atlas/_stcore/health`` first;
- in classroom mode two ASGI middlewares in front of Streamlit's own routes and the map's
  (``isoscope.dashboard.classroom.middleware()``): ``ClassroomGuard`` (``classroom.guard``: before the access
  code, nothing but the code form reaches a session; no uploads, no cache control, no metrics; guesses
  throttled per client address and for the server) and, outside it, ``SecurityHeaders`` (``classroom.headers``:
  every HTTP response, the routes' and the guard's own included, carries ``X-Frame-Options: DENY`` and
  ``Content-Security-Policy: frame-ancestors 'none'``; no server path in the WebSocket's session message).

At start the server imports, in a background thread, what every page's first run imports (the sidebar's
model loader: torch, transformers, scikit-learn; the Atlas services), then opens the atlas folder it was launched
on (``ISOSCOPE_ATLAS_DIR``: ``services.atlas.warm``, the Atlas page's first view into the shared caches): seconds
on two cores that a fresh server's first visit otherwise waits for (bench/RESULTS.md, issue 42's cold first view).
"""

from __future__ import annotations

import importlib
import logging
import threading
from pathlib import Path

import streamlit as st
from starlette.middleware import Middleware

from isoscope.dashboard import classroom, tiles
from isoscope.dashboard.base_url import BaseUrl

middleware = [Middleware(BaseUrl), *classroom.middleware()]  # the base URL outermost: every page, guard's included
app = st.App(str(Path(__file__).resolve().parent / "app.py"), routes=tiles.routes(), middleware=middleware)


WARM_MODULES = ("isoscope.dashboard.ui", "isoscope.dashboard.services.atlas", "isoscope.dashboard.figures.atlas")


def _warm() -> None:
    log = logging.getLogger("isoscope.dashboard")
    for name in WARM_MODULES:  # a page importing one meanwhile waits on the module's import lock, as it would
        try:
            importlib.import_module(name)
        except Exception:  # the page's own import then reports it where it is seen
            log.debug("warm-up import of %s failed", name, exc_info=True)
            return
    try:  # the launched atlas's first view, into the caches every session reads
        from isoscope.dashboard.services import atlas

        if (path := atlas.launched_atlas()) is not None:
            atlas.warm(path)
    except Exception:  # the page opens it again and reports what is wrong where it is seen
        log.debug("warm-up of the launched atlas failed", exc_info=True)


threading.Thread(target=_warm, name="isoscope-warm-imports", daemon=True).start()  # Streamlit loads this module once
