"""A silent network (issue 50 item 4): the Hub (``HF_ENDPOINT``) accepts the connection and never answers.

``isoscope data stsb`` ran past 90 s with no output (``repo_info``, the first request of ``snapshot_download``,
has no timeout in huggingface_hub), and a hub model never finished loading. Now every request to the Hub has a
connect and a read timeout (``isoscope.data.hub``; ``ISOSCOPE_HUB_TIMEOUT`` sets them small here) and the command
ends with exit status 2 and one line that says what it waited for. The commands run in a child process with
``HF_HUB_OFFLINE`` unset (huggingface_hub reads it once, on import).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from isoscope.data.hub import ENV_HUB_TIMEOUT, HUB_READ_TIMEOUT_S, bound_hub_requests, hub_timeout_message, hub_timeouts
from isoscope.errors import InputError
from tests.endpoint_server import StallingServer

LIMIT_S = 120  # the child's own limit: a hang fails the test (the two requests wait 2 s each)


def _isoscope(argv: list[str], server: StallingServer, tmp_path: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    env.update(HF_ENDPOINT=server.address, HF_HOME=str(tmp_path / "hf"), ISOSCOPE_CACHE=str(tmp_path / "cache"))
    env[ENV_HUB_TIMEOUT] = "2"
    code = "import sys; from isoscope.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run(
        [sys.executable, "-c", code, *argv], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=LIMIT_S
    )


def _one_line(run: subprocess.CompletedProcess) -> str:
    assert run.returncode == 2, run.stderr[-3000:]
    assert run.stdout == "" and run.stderr.count("\n") == 1 and run.stderr.startswith("error: "), run.stderr[-3000:]
    return run.stderr.strip()


@pytest.mark.timeout(LIMIT_S + 30, method="signal")
def test_data_stsb_against_a_silent_hub_ends_in_one_line(tmp_path: Path) -> None:
    with StallingServer() as server:
        run = _isoscope(["data", "stsb", "--out", str(tmp_path / "stsb"), "--quiet"], server, tmp_path)
    line = _one_line(run)
    host = server.address.split("//")[1]
    assert f"cannot download STS-B: no answer from {host} within 2 s to GET /api/datasets/" in line, line
    assert ENV_HUB_TIMEOUT in line and "ISOSCOPE_STSB_DIR" in line and len(line) < 300, line
    assert not (tmp_path / "stsb").exists()


@pytest.mark.slow  # a child that imports torch and transformers
@pytest.mark.timeout(LIMIT_S + 30, method="signal")
def test_a_hub_model_against_a_silent_hub_ends_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "c.txt").write_text("one text\n")
    with StallingServer() as server:
        argv = ["embed", "--model", "someone/some-model", "--input", "c.txt", "--out", "v.npy", "--quiet"]
        run = _isoscope(argv, server, tmp_path)
        asked = list(server.requests)
    line = _one_line(run)
    host = server.address.split("//")[1]
    assert f"could not load 'someone/some-model' from the Hugging Face hub: no answer from {host} within 2 s" in line
    # the hub that let one request time out is not asked again (its cache, or this line)
    assert [r for r in asked if "some-model" in r] == ["GET /api/models/someone/some-model/revision/main HTTP/1.1"]
    assert not (tmp_path / "v.npy").exists()


def test_requests_without_a_timeout_get_one(monkeypatch) -> None:
    """In-process: the shared client's request that names no timeout (as ``repo_info`` sends it) times out."""
    import huggingface_hub
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)  # as the tests run: offline
    monkeypatch.setenv(ENV_HUB_TIMEOUT, "0.5")
    bound_hub_requests()
    bound_hub_requests()  # idempotent: one hook
    session = huggingface_hub.get_session()
    with StallingServer() as server:
        with pytest.raises(Exception) as info:
            session.get(f"{server.address}/api/datasets/x/y", timeout=None)
    host = server.address.split("//")[1]
    assert hub_timeout_message(info.value) == f"no answer from {host} within 0.5 s to GET /api/datasets/x/y"
    monkeypatch.delenv(ENV_HUB_TIMEOUT)
    bound_hub_requests()  # the variable is read again: the defaults for the rest of the session
    if hasattr(session, "event_hooks"):  # huggingface_hub >= 1 (httpx; < 1 makes requests sessions afresh)
        assert sum(getattr(h, "_isoscope_timeouts", False) for h in session.event_hooks["request"]) == 1


def test_hub_timeouts_read_the_variable(monkeypatch) -> None:
    monkeypatch.delenv(ENV_HUB_TIMEOUT, raising=False)
    assert hub_timeouts() == (10, HUB_READ_TIMEOUT_S, None)
    monkeypatch.setenv(ENV_HUB_TIMEOUT, "3")
    assert hub_timeouts() == (3, 3, 3)
    for bad in ("0", "-2", "never", "nan"):
        monkeypatch.setenv(ENV_HUB_TIMEOUT, bad)
        with pytest.raises(InputError, match=ENV_HUB_TIMEOUT):
            hub_timeouts()


def test_an_error_that_is_not_a_timeout_is_not_described_as_one(monkeypatch) -> None:
    monkeypatch.delenv(ENV_HUB_TIMEOUT, raising=False)
    assert hub_timeout_message(OSError("name or service not known")) is None
    try:
        try:
            raise TimeoutError("timed out")
        except TimeoutError as exc:
            raise OSError("We couldn't connect to the Hub") from exc
    except OSError as wrapped:
        assert hub_timeout_message(wrapped) == f"no answer from the Hugging Face Hub within {HUB_READ_TIMEOUT_S:g} s"
