"""Classroom mode (``isoscope app --classroom``): one server, a class of students on the network.

What it changes, read from the environment the ``app`` command sets (so it holds for every session):

- an access code before any page (``gate``); the server only knows the code's SHA-256; until the code is
  given, the server layer (``guard``, installed by ``dashboard/serve.py``) passes nothing but the code form's
  runs to the session, and throttles guesses per client address and for the server;
- the model box offers the embedded model and the teacher's allowlist, nothing else on disk (``allowed_models``);
  a model that fails to load is named by its label, never by its path;
- a bug is shown without its traceback (which names server files) and logged on the server (``bug_report``);
- lower upload and decode limits (``ISOSCOPE_MAX_*``, set by the command);
- response headers that forbid framing and sniffing, and no server path in the WebSocket's session message
  (``headers.SecurityHeaders``, an ASGI middleware that ``dashboard/serve.py`` installs through Streamlit's
  ``st.App``).

One concern per module: ``session`` (what a student's session sees: the code form, the allowlist, messages
without server paths), ``guard`` (the ASGI server layer before the code: ``ClassroomGuard``, ``Throttle``) and
``headers`` (``SecurityHeaders``). ``middleware()`` is what ``dashboard/serve.py`` puts in front of the app.
"""

from __future__ import annotations

from typing import Any

from isoscope.dashboard.classroom.session import (
    allowed_models,
    bug_report,
    check_code,
    enabled,
    gate,
    shown_name,
    shown_path,
    without_server_paths,
)

__all__ = [
    "allowed_models",
    "bug_report",
    "check_code",
    "enabled",
    "gate",
    "middleware",
    "shown_name",
    "shown_path",
    "without_server_paths",
]


def middleware() -> list[Any]:
    """The ASGI middlewares ``dashboard/serve.py`` puts in front of Streamlit's routes and the Atlas map's: in
    classroom mode ``SecurityHeaders`` (outermost, so the guard's own 404 and 403 carry the headers too) then
    ``ClassroomGuard``; none otherwise."""
    from starlette.middleware import Middleware

    from isoscope.dashboard.classroom.guard import ClassroomGuard
    from isoscope.dashboard.classroom.headers import SecurityHeaders

    return [Middleware(SecurityHeaders), Middleware(ClassroomGuard)] if enabled() else []
