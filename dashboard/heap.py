"""Keep Streamlit's garbage collection cheap on a busy server.

Streamlit runs a full ``gc.collect(2)`` after every script run (``runner.postScriptGC``). With torch,
transformers, plotly and the model loaded, a full collection walks millions of long-lived objects: measured
with ``bench/classroom.py``, those collections were over half of the server's CPU once every page was
cached (0.6 to 1.6 CPU seconds per page view). ``freeze_once`` moves everything alive after the first
complete run (libraries, model, caches so far) into the permanent generation, which collections skip;
what later runs allocate is collected as before.
"""

from __future__ import annotations

import gc
import threading

_lock = threading.Lock()
_frozen = False


def freeze_once() -> None:
    """Collect, then freeze every object alive now out of later collections (once per process)."""
    global _frozen
    if _frozen:
        return
    with _lock:
        if not _frozen:
            gc.collect()
            gc.freeze()
            _frozen = True
