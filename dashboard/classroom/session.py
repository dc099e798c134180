"""Classroom mode in a student's session: the access code before any page, what the model box offers, and
messages and bug reports that name no server path. Read from the environment the ``app`` command sets
(``isoscope.dashboard.launch.ENV_*``), so it holds for every session.

- ``gate``: until this session has given the code, stop the script at the code form; the server only knows
  the code's SHA-256 (``check_code``), and a right code admits the session to the server layer
  (``isoscope.dashboard.classroom.guard.admit``);
- ``allowed_models``: the embedded model and the teacher's allowlist, nothing else on disk;
- ``shown_path``, ``shown_name``, ``without_server_paths``: messages without the server's paths;
- ``bug_report``: a bug without its traceback (which names server files), logged on the server.
"""

from __future__ import annotations

import hmac
import json
import logging
import os
import re

import streamlit as st

from isoscope.dashboard.bugs import log_bug
from isoscope.dashboard.classroom.guard import admit
from isoscope.dashboard.launch import ENV_CLASSROOM, ENV_CODE_HASH, ENV_MODELS, code_hash

log = logging.getLogger("isoscope.dashboard")

MAX_ATTEMPTS = 20  # wrong codes per session before its form stops answering (guesses are throttled per
# client address and for the whole server by isoscope.dashboard.classroom.guard, which a new session does not reset)
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
        admit(ctx.session_id)


def bug_report(exc: BaseException) -> None:
    """A bug box without the traceback (it names server paths); the traceback goes to the server log."""
    log_bug(exc)
    st.error(
        f"Something went wrong on the server ({type(exc).__name__}); this is a bug in Isoscope, not a problem "
        "with your input. What you loaded is kept. Please tell your teacher.",
        icon=":material/bug_report:",
    )
