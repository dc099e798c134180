"""Classroom mode (``isoscope app --classroom``): one server, a class of students on the network.

What it changes, read from the environment the ``app`` command sets (so it holds for every session):

- an access code before any page (``gate``); the server only knows the code's SHA-256; until the code is
  given, the server layer (``isoscope.dashboard.guard``, installed by ``dashboard/serve.py``) passes nothing
  but the code form's runs to the session, and throttles guesses per client address and for the server;
- the model box offers the embedded model and the teacher's allowlist, nothing else on disk (``allowed_models``);
  a model that fails to load is named by its label, never by its path;
- a bug is shown without its traceback (which names server files) and logged on the server (``bug_report``);
- lower upload and decode limits (``ISOSCOPE_MAX_*``, set by the command);
- response headers that forbid framing and sniffing, and no server path in the WebSocket's session message
  (``SecurityHeaders``, an ASGI middleware that ``dashboard/serve.py`` installs through Streamlit's ``st.App``).
"""

from __future__ import annotations

import hmac
import json
import logging
import os
import re

import streamlit as st

from isoscope.dashboard import guard
from isoscope.dashboard.bugs import log_bug
from isoscope.dashboard.launch import ENV_CLASSROOM, ENV_CODE_HASH, ENV_MODELS, code_hash

log = logging.getLogger("isoscope.dashboard")

MAX_ATTEMPTS = 20  # wrong codes per session before its form stops answering (guesses are throttled per
# client address and for the whole server by isoscope.dashboard.guard, which a new session does not reset)
_OK = "_classroom_admitted"
_TRIES = "_classroom_attempts"


def enabled() -> bool:
    return os.environ.get(ENV_CLASSROOM, "") == "1"


def check_code(code: str) -> bool:
    expected = os.environ.get(ENV_CODE_HASH, "")
    return bool(expected) and hmac.compare_digest(code_hash(code), expected)


def allowed_models() -> list[tuple[str, str]]:
    """(label, path) of every model the teacher allowed, in the order given."""
    try:
        items = json.loads(os.environ.get(ENV_MODELS, "") or "[]")
        return [(str(label), str(path)) for label, path in items]
    except (ValueError, TypeError):
        log.error("%s is not a JSON list of [label, path]; offering the embedded model only", ENV_MODELS)
        return []


def gate() -> None:
    """In classroom mode, stop the script here until this session has given the access code."""
    if not enabled():
        return
    if st.session_state.get(_OK):
        _admit_this_session()
        return
    st.title("Isoscope")
    st.caption("This dashboard is shared with a class. Type the access code your teacher gave you.")
    tries = st.session_state.get(_TRIES, 0)
    with st.form("classroom_gate"):
        code = st.text_input("Access code", type="password", key="classroom_code", max_chars=64)
        submitted = st.form_submit_button("Enter")
    if submitted and tries < MAX_ATTEMPTS:
        if check_code(code):
            st.session_state[_OK] = True
            st.session_state.pop(_TRIES, None)
            _admit_this_session()
            st.rerun()
        st.session_state[_TRIES] = tries + 1
        st.error("That is not the access code.", icon=":material/lock:")
    if tries >= MAX_ATTEMPTS:
        st.error("Too many wrong codes in this session; ask your teacher for the code.", icon=":material/lock:")
    st.stop()


_ABSOLUTE_PATH = re.compile(r"""(?<![\w.])(?:~|[A-Za-z]:)?(?:[/\\][^\s/\\'"`:;,()]+){2,}[/\\]?""")


def shown_path(path: object, what: str = "the server's results folder") -> str:
    """``path`` for a message, or in classroom mode ``what`` (students never see where the server keeps files)."""
    return what if enabled() else str(path)


def shown_name(name: str) -> str:
    """A model's or a task's name for a message: in classroom mode an allowed model folder is named by its
    label, and any other path by its last part."""
    if not enabled():
        return name
    labels = {path: label for label, path in allowed_models()}
    if name in labels:
        return labels[name]
    return os.path.basename(name.rstrip("/\\")) if _ABSOLUTE_PATH.fullmatch(name) else name


def without_server_paths(text: str) -> str:
    """``text`` with every absolute path replaced by its last part, in classroom mode (messages that name a
    result folder or a file on the server)."""
    if not enabled():
        return text
    return _ABSOLUTE_PATH.sub(lambda m: "…/" + os.path.basename(m.group().rstrip("/\\")), text)


def _admit_this_session() -> None:
    """Tell the server layer that this session gave the code (its uploads and other messages now pass)."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    if ctx is not None:
        guard.admit(ctx.session_id)


def bug_report(exc: BaseException) -> None:
    """A bug box without the traceback (it names server paths); the traceback goes to the server log."""
    log_bug(exc)
    st.error(
        f"Something went wrong on the server ({type(exc).__name__}); this is a bug in Isoscope, not a problem "
        "with your input. What you loaded is kept. Please tell your teacher.",
        icon=":material/bug_report:",
    )


# ---------------------------------------------------------------- HTTP headers

SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"x-frame-options", b"DENY"),
    (b"content-security-policy", b"frame-ancestors 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
)


def without_script_path(frame: bytes) -> bytes:
    """A ForwardMsg frame with ``new_session.main_script_path`` blanked (Streamlit sends every browser the
    absolute path of the app on the server; the frontend does not need it)."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    msg = ForwardMsg()
    try:
        msg.ParseFromString(frame)
    except Exception:  # not a ForwardMsg: pass it on untouched
        return frame
    if msg.WhichOneof("type") != "new_session" or not msg.new_session.main_script_path:
        return frame
    msg.new_session.main_script_path = ""
    return msg.SerializeToString()


class SecurityHeaders:
    """Pure ASGI middleware: adds ``SECURITY_HEADERS`` to every HTTP response, and removes the server's script
    path from the messages sent over the WebSocket."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope.get("type") == "websocket":

            async def send_without_paths(message) -> None:
                if message.get("type") == "websocket.send" and message.get("bytes"):
                    message = {**message, "bytes": without_script_path(message["bytes"])}
                await send(message)

            await self.app(scope, receive, send_without_paths)
            return
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message) -> None:
            if message.get("type") == "http.response.start":
                names = {k.lower() for k, _ in message.get("headers", [])}
                extra = [(k, v) for k, v in SECURITY_HEADERS if k not in names]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await self.app(scope, receive, send_with_headers)
