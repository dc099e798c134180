"""The browser tests' run counter (``tests.e2e.browser.RUN_COUNTER_JS``) reads the server's ForwardMsgs: it must
find ``script_finished`` at the top level of a message, and nowhere else.

It replaced a count of the DOM's ``data-test-script-state`` leaving "running", which missed runs whose
"running" status, deltas and end arrived in one burst (React rendered the state once), and the tests then
waited 120 s for a rerun that had finished ("no finished rerun after choosing ...").
"""

from __future__ import annotations

import pytest
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from tests.e2e import browser as b


def _message(**fields) -> bytes:
    msg = ForwardMsg()
    msg.hash = "f" * 32
    msg.metadata.cacheable = False
    for name, value in fields.items():
        if name == "active_script_hash":
            msg.metadata.active_script_hash = value
        elif name == "markdown":
            msg.delta.new_element.markdown.body = value
        elif name == "new_session":
            msg.new_session.name = value
        else:
            setattr(msg, name, value)
    return msg.SerializeToString()


def _finished_status(name: str) -> int:
    return ForwardMsg.ScriptFinishedStatus.Value(name)


CASES = [
    ("finished", _message(script_finished=_finished_status("FINISHED_SUCCESSFULLY")), 0),
    ("compile error", _message(script_finished=_finished_status("FINISHED_WITH_COMPILE_ERROR")), 1),
    ("early for a rerun", _message(script_finished=_finished_status("FINISHED_EARLY_FOR_RERUN")), 2),
    ("fragment", _message(script_finished=_finished_status("FINISHED_FRAGMENT_RUN_SUCCESSFULLY")), 3),
    # a metadata field of more than 127 bytes (a two-byte length) before the status
    ("long metadata", _message(active_script_hash="x" * 300, script_finished=0), 0),
    # the bytes of field 6 = 0 (0x30 0x00) inside a delta's text and inside the metadata: not a finished run
    ("a delta holding the bytes", _message(markdown="0\x00" * 5 + "é" * 200), -1),
    ("nested field 6", _message(active_script_hash="0\x00"), -1),
    ("new session", _message(new_session="0\x00"), -1),
]


@pytest.mark.parametrize("payload, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_the_counter_finds_script_finished_only_at_the_top_level(browser, payload: bytes, expected: int) -> None:
    context = browser.new_context()
    context.add_init_script(b.RUN_COUNTER_JS)
    try:
        page = context.new_page()
        page.goto("about:blank")
        got = page.evaluate("bytes => window.__stScriptFinished(new Uint8Array(bytes))", list(payload))
    finally:
        context.close()
    assert got == expected
