"""Classroom rules that do not need a server (issue 28): the throttle's arithmetic on a fake clock, the guard
as a pure ASGI middleware, no server path on the Loss surfaces page, and the README's example code."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from isoscope.dashboard.classroom import guard
from isoscope.dashboard.launch import code_hash
from tests.dashboard.conftest import APP
from tests.hostile.streamlit_ws import run_async

# ---------------------------------------------------------------- the throttle


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_throttle_budget_is_per_client_and_shared_by_its_sessions() -> None:
    clock = _Clock()
    t = guard.Throttle(per_client=(3, 1.0), overall=(100, 50.0), max_wait=10, clock=clock)
    assert [t.reserve("10.0.0.1") for _ in range(3)] == [0.0, 0.0, 0.0]  # the burst
    assert t.reserve("10.0.0.1") == pytest.approx(1.0)  # then one a second: the caller waits
    assert t.reserve("10.0.0.1") == pytest.approx(2.0)
    assert t.reserve("10.0.0.2") == 0.0  # another address has its own budget
    clock.now += 10
    assert t.reserve("10.0.0.1") == 0.0  # refilled


def test_throttle_budget_for_the_whole_server() -> None:
    clock = _Clock()
    t = guard.Throttle(per_client=(100, 10.0), overall=(4, 2.0), max_wait=10, clock=clock)
    waits = [t.reserve(f"10.0.0.{i}") for i in range(6)]  # six addresses, each far from its own limit
    assert waits[:4] == [0.0] * 4 and waits[4:] == [pytest.approx(0.5), pytest.approx(1.0)]


def test_throttle_refuses_a_wait_longer_than_allowed() -> None:
    clock = _Clock()
    t = guard.Throttle(per_client=(1, 1.0), overall=(100, 100.0), max_wait=2.5, clock=clock)
    assert [t.reserve("a") for _ in range(4)] == [0.0, pytest.approx(1.0), pytest.approx(2.0), None]
    clock.now += 3.0  # the refused attempt took nothing: the budget is back where the waits left it
    assert t.reserve("a") == pytest.approx(0.0)


# ---------------------------------------------------------------- the guard as ASGI middleware


def _http(path: str) -> tuple[int, bool]:
    """(status, whether the app behind the guard was reached) of a GET of ``path``."""
    reached = []

    async def app(scope, receive, send) -> None:
        reached.append(scope["path"])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    sent: list[dict] = []

    async def send(message) -> None:
        sent.append(message)

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    scope = {"type": "http", "path": path, "root_path": "", "method": "PUT", "headers": [], "client": ("1.2.3.4", 5)}
    run_async(guard.ClassroomGuard(app)(scope, receive, send))
    return sent[0]["status"], bool(reached)


def test_guard_routes() -> None:
    assert _http("/_stcore/metrics") == (404, False)
    assert _http("/base/_stcore/metrics") == (404, False)
    assert _http("/_stcore/upload_file/not-admitted/f1") == (403, False)
    guard.admit("admitted-session")
    assert _http("/_stcore/upload_file/admitted-session/f1") == (200, True)
    assert _http("/_stcore/health") == (200, True)
    assert _http("/") == (200, True)


def test_guard_drops_every_message_but_the_form_before_the_code() -> None:
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    def back(**kind) -> bytes:
        msg = BackMsg()
        for k, v in kind.items():
            if k == "rerun_script":
                msg.rerun_script.query_string = ""
            else:
                setattr(msg, k, v)
        return msg.SerializeToString()

    incoming = [back(clear_cache=True), back(rerun_script=True), back(stop_script=True), back(app_heartbeat=True)]
    hello = ForwardMsg()
    hello.new_session.initialize.session_id = "s-28"
    passed: list[str] = []

    async def app(scope, receive, send) -> None:
        await send({"type": "websocket.send", "bytes": hello.SerializeToString()})
        for _ in range(2):
            msg = BackMsg()
            msg.ParseFromString((await receive())["bytes"])
            passed.append(msg.WhichOneof("type"))
        guard.admit("s-28")
        msg = BackMsg()
        msg.ParseFromString((await receive())["bytes"])
        passed.append(msg.WhichOneof("type"))

    queue = iter(
        [{"type": "websocket.receive", "bytes": b} for b in incoming]
        + [{"type": "websocket.receive", "bytes": back(clear_cache=True)}]
    )

    async def receive():
        return next(queue)

    async def send(message) -> None:
        pass

    scope = {"type": "websocket", "path": "/_stcore/stream", "client": ("9.9.9.9", 1)}
    run_async(guard.ClassroomGuard(app)(scope, receive, send))
    assert passed == ["rerun_script", "app_heartbeat", "clear_cache"]  # stop and clear dropped, until admitted


# ---------------------------------------------------------------- no server path on the Loss surfaces page

CODE = "K7QM-3XHD"


def _all_text(at: AppTest) -> str:
    kinds = ("markdown", "caption", "error", "warning", "info", "title", "text", "selectbox", "code", "success")
    parts = []
    for kind in kinds:
        for el in at.get(kind):  # a selectbox's value stays on the server: the browser gets its formatted options
            shown = ("label", "options", "help") if kind == "selectbox" else ("value", "label", "options", "help")
            parts += [str(getattr(el, a, "")) for a in shown]
    return " ".join(parts).replace("\\", "")


@pytest.mark.parametrize("with_result", [False, True], ids=["no_results_yet", "a_result"])
def test_loss_surfaces_page_shows_no_server_path(monkeypatch, tmp_path: Path, with_result: bool) -> None:
    """Issue 28: the Loss surfaces page showed the server's cache path (and a result's model path)."""
    cache = tmp_path / "srv-cache-secret"
    monkeypatch.setenv("ISOSCOPE_CACHE", str(cache))
    monkeypatch.setenv("ISOSCOPE_CLASSROOM", "1")
    monkeypatch.setenv("ISOSCOPE_ACCESS_CODE_SHA256", code_hash(CODE))
    monkeypatch.setenv("ISOSCOPE_ALLOWED_MODELS", "[]")
    if with_result:  # a finished run's summary, as a CLI run by the teacher leaves it, naming a model folder
        run = cache / "landscape" / "run1"
        run.mkdir(parents=True)
        summary = {"model": "/home/teacher/models/secret-bert", "task": "/home/teacher/data/labels.csv"}
        (run / "summary.json").write_text(json.dumps({**summary, "task2": "demo-topic", "inits": []}))
    at = AppTest.from_file(APP, default_timeout=600).run()
    at.text_input(key="classroom_code").input(CODE)
    at.button[0].click().run()
    at.switch_page("views/landscape.py").run()
    assert not at.exception, at.exception
    shown = _all_text(at)
    for secret in (str(cache), "srv-cache-secret", "/home/teacher"):
        assert secret not in shown, f"{secret} shown on the page"
    if with_result:
        assert "secret-bert" in shown and "labels.csv" in shown  # named by their last part


# ---------------------------------------------------------------- the documentation's examples


def test_readme_classroom_example_code_is_valid(cli_main, capsys) -> None:
    """Issue 28: the README's example `--access-code tulip` was refused by the 6-character rule (the examples
    are in README.md and docs/classroom.md since issue 36)."""
    from tests.docs.documents import all_text

    codes = re.findall(r"isoscope app --classroom[^\n`]*--access-code (\S+)", all_text())
    assert len(codes) >= 2, "the README and docs/classroom.md show an access code"
    for code in codes:
        assert cli_main(["app", "--classroom", "--access-code", code, "--dry-run"]) == 0, capsys.readouterr().err
        assert f"access code: {code}" in capsys.readouterr().out
