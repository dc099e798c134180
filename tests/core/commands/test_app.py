"""``isoscope app``: safe defaults (this machine only) and ``--classroom`` (issue 17): all interfaces, an access
code printed at start and known to the server only as a hash, a model allowlist, lower limits, response
headers that forbid framing and no server path in the WebSocket's session message, checked on a real server."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from isoscope.dashboard.launch import CODE_ALPHABET, code_hash
from isoscope.encode.models import default_model_path
from tests.core.commands.cli_checks import one_error_line
from tests.hostile.streamlit_ws import run_async

ROOT = Path(__file__).resolve().parents[3]


def _dry(cli, capsys, *argv: str) -> tuple[list[str], dict, str | None]:
    """(streamlit command, server environment, access code) of ``isoscope app ... --dry-run``; the code is the
    one printed."""
    from isoscope.cli import build_parser
    from isoscope.commands import app

    argv = ("app", *argv, "--dry-run")
    result = app.run(build_parser(list(argv)).parse_args(list(argv)))
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == " ".join(result["command"])
    code = result["access_code"]
    assert printed[1:] == ([f"access code: {code}"] if code else [])
    assert cli(list(argv)) == 0  # and through the command line
    capsys.readouterr()
    return result["command"], result["env"], code


def _option(command: list[str], name: str) -> str:
    i = command.index(name)
    return command[i + 1]


def test_default_is_this_machine_only(cli, capsys) -> None:
    command, env, code = _dry(cli, capsys)
    assert _option(command, "--server.address") == "127.0.0.1"
    assert command[4].endswith("dashboard/serve.py") and code is None  # app.py with the Atlas map's routes
    assert "ISOSCOPE_CLASSROOM" not in env and "ISOSCOPE_MAX_BYTES" not in env
    assert command.count("--server.maxUploadSize") == 1


def test_classroom_binds_every_interface_with_a_printed_code(cli, capsys) -> None:
    command, env, code = _dry(cli, capsys, "--classroom")
    assert _option(command, "--server.address") == "0.0.0.0"
    assert command[4].endswith("dashboard/serve.py")  # the app behind the security headers
    assert _option(command, "--client.showErrorDetails") == "none"
    assert _option(command, "--server.maxUploadSize") == "20" and command.count("--server.maxUploadSize") == 1
    assert code is not None and len(code) == 9 and code[4] == "-"
    assert set(code.replace("-", "")) <= set(CODE_ALPHABET)
    assert env["ISOSCOPE_CLASSROOM"] == "1"
    assert env["ISOSCOPE_ACCESS_CODE_SHA256"] == code_hash(code)
    assert code not in json.dumps(env)  # the server gets the hash, not the code
    assert env["ISOSCOPE_MAX_BYTES"] == str(20 * 2**20) and env["ISOSCOPE_MAX_ROWS"] == "20000"
    assert json.loads(env["ISOSCOPE_ALLOWED_MODELS"]) == []


def test_classroom_options(cli, capsys, tmp_path: Path) -> None:
    command, env, code = _dry(
        cli, capsys, "--classroom", "--host", "10.1.2.3", "--access-code", "my-class-42", "--max-upload-mb", "5",
        "--allow-model", default_model_path(),
    )  # fmt: skip
    assert _option(command, "--server.address") == "10.1.2.3" and _option(command, "--server.maxUploadSize") == "5"
    assert code == "my-class-42" and env["ISOSCOPE_ACCESS_CODE_SHA256"] == code_hash("MYCLASS42")
    assert json.loads(env["ISOSCOPE_ALLOWED_MODELS"]) == [[Path(default_model_path()).name, default_model_path()]]
    assert "ISOSCOPE_ALLOW_ENDPOINTS" not in env  # endpoints spend the server's key: off unless the teacher says so
    _, env, _ = _dry(cli, capsys, "--classroom", "--allow-endpoints")
    assert env["ISOSCOPE_ALLOW_ENDPOINTS"] == "1"


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["--classroom", "--allow-model", "/etc"], "not a model folder"),
        (["--classroom", "--allow-model", "/nonexistent"], "not a model folder"),
        (["--classroom", "--access-code", "abc"], "at least 6"),
        (["--access-code", "abcdefgh"], "need --classroom"),
        (["--allow-model", "/etc"], "need --classroom"),
        (["--allow-endpoints"], "need --classroom"),
        (["--max-upload-mb", "0"], "--max-upload-mb"),
    ],
)
def test_bad_classroom_options_are_one_line(cli, capsys, argv: list[str], match: str) -> None:
    assert cli(["app", *argv, "--dry-run"]) == 2
    assert match in one_error_line(capsys)


def test_the_data_file_is_checked_under_the_servers_limits(cli, capsys, tmp_path: Path) -> None:
    corpus = tmp_path / "big.txt"
    corpus.write_text("".join(f"text number {i}\n" for i in range(25_000)))
    assert cli(["app", str(corpus), "--classroom", "--dry-run"]) == 2  # 25,000 rows > the classroom's 20,000
    assert "over the limit" in one_error_line(capsys)
    assert cli(["app", str(corpus), "--classroom", "--max-rows", "30000", "--dry-run"]) == 0


# ---------------------------------------------------------------- a real server


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _headers(url: str, deadline: float) -> dict[str, str]:
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                return {k.lower(): v for k, v in r.headers.items()}
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


async def _session_script_path(port: int) -> str:
    """``new_session.main_script_path`` as a browser receives it over the WebSocket (before any access code)."""
    import websockets
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    async with websockets.connect(f"ws://127.0.0.1:{port}/_stcore/stream", subprotocols=["streamlit"]) as ws:
        msg = BackMsg()
        msg.rerun_script.query_string = ""
        await ws.send(msg.SerializeToString())
        while True:
            fwd = ForwardMsg()
            fwd.ParseFromString(await asyncio.wait_for(ws.recv(), 300))
            if fwd.WhichOneof("type") == "new_session":
                return fwd.new_session.main_script_path


@pytest.mark.parametrize("classroom", [True, False], ids=["classroom", "default"])
def test_served_headers_forbid_framing(tmp_path: Path, classroom: bool) -> None:
    port = _free_port()
    argv = ["app", "--port", str(port), "--host", "127.0.0.1"] + (
        ["--classroom", "--access-code", CODE] if classroom else []
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "ISOSCOPE_CACHE": str(tmp_path / "cache")}
    server = subprocess.Popen(
        [sys.executable, "-m", "isoscope", *argv],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        _headers(f"http://127.0.0.1:{port}/_stcore/health", deadline)
        script_path = run_async(_session_script_path(port))  # a thread of its own: Playwright may hold this one
        assert (script_path == "") if classroom else script_path.endswith("app.py"), script_path
        for path in ("/", "/_stcore/health"):
            headers = _headers(f"http://127.0.0.1:{port}{path}", deadline)
            if classroom:
                assert headers.get("x-frame-options") == "DENY", headers
                assert headers.get("content-security-policy") == "frame-ancestors 'none'", headers
                assert headers.get("x-content-type-options") == "nosniff"
            else:
                assert "x-frame-options" not in headers  # the default app is Streamlit as it is, on 127.0.0.1
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        _, err = server.communicate(timeout=60)
    if classroom:
        assert f"access code {CODE}" in err


CODE = "TEST-CODE-17"


def test_a_busy_port_is_refused_before_an_address_is_printed(cli, capsys) -> None:
    """Issue 26: ``--port P`` printed "Isoscope at http://localhost:P", then Streamlit's "Port P is not
    available", exit 0, and the browser showed whatever else listened there. Now: exit 2, one line, the next
    free port, and nothing started."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert cli(["app", "--port", str(port)]) == 2
        line = one_error_line(capsys)
    assert f"port {port} is already in use" in line and "Isoscope at" not in line
    free = int(line.rsplit("--port ", 1)[1])
    assert free > port
    with socket.socket() as s:  # the port it names can be bound
        s.bind(("127.0.0.1", free))


def test_a_port_taken_on_every_interface_is_busy_for_localhost_too() -> None:
    from isoscope.dashboard.launch import port_taken

    with socket.socket() as busy:
        busy.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        busy.bind(("0.0.0.0", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert port_taken("127.0.0.1", port) and port_taken("0.0.0.0", port)
    assert not port_taken("127.0.0.1", port)


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) != 0


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["kill", "ctrl-c"])
def test_a_signal_to_the_apps_pid_stops_the_server_too(tmp_path: Path, sig: signal.Signals) -> None:
    """Issue 41: ``kill PID`` of ``isoscope app`` left the Streamlit child serving. The signal is passed on: the
    port is free within 5 s, the command exits, and no child is left."""
    port = _free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "ISOSCOPE_CACHE": str(tmp_path / "cache")}
    app = subprocess.Popen(
        [sys.executable, "-m", "isoscope", "app", "--port", str(port)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own group: the signal goes to the PID only, as `kill PID` does
    )
    try:
        _headers(f"http://127.0.0.1:{port}/_stcore/health", time.monotonic() + 120)
        children = _children(app.pid)
        assert children, "isoscope app runs the server as a child process"
        os.kill(app.pid, sig)
        deadline = time.monotonic() + 5
        while not _port_free(port) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _port_free(port), f"port {port} still served 5 s after the signal"
        assert app.wait(timeout=5) == 0  # the command's exit status (the server's own status is in the result)
        assert not [pid for pid in children if Path(f"/proc/{pid}").exists()], "the server outlived the command"
    finally:
        with contextlib.suppress(ProcessLookupError):  # whatever is left of its group, even when the test failed
            os.killpg(app.pid, signal.SIGKILL)
        app.communicate(timeout=30)


def _children(pid: int) -> list[int]:
    """The child processes of ``pid`` (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found
