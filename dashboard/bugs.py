"""How the dashboard records a bug on the server: one marker to grep the log for, and the whole traceback."""

from __future__ import annotations

import logging
import traceback

BUG_MARKER = "Uncaught app execution (a bug in Isoscope)"  # in the server log, like Streamlit's own

log = logging.getLogger("isoscope.dashboard")


def log_bug(exc: BaseException) -> None:
    log.error("%s: %s", BUG_MARKER, "".join(traceback.format_exception(exc)))
