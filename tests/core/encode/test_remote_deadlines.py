"""A stuck endpoint (issue 51 item 8): a server that drips its answer, or accepts and never answers, is cut at the
request's deadline or read timeout and tried once more, not six times; one line says what was waited for.

The deadline and the timeout come from ``ISOSCOPE_ENDPOINT_DEADLINE`` / ``ISOSCOPE_ENDPOINT_TIMEOUT`` (seconds), set
small here; before, a missed deadline was a transient fault retried ``retries`` times with backoff (35 minutes for
the defaults before the error)."""

from __future__ import annotations

import pytest

from isoscope.encode.endpoints import (
    DEADLINE_READS,
    ENDPOINT_TIMEOUT_S,
    ENV_ENDPOINT_DEADLINE,
    ENV_ENDPOINT_TIMEOUT,
    Endpoint,
    endpoint_timeouts,
)
from isoscope.encode.remote import MISSED_RETRIES, embed_endpoint
from isoscope.errors import InputError
from tests.core.commands.cli_checks import one_error_line
from tests.endpoint_server import StallingServer


def _stuck(server: StallingServer, environ: dict[str, str], sleeps: list[float]) -> str:
    """The InputError of embedding two texts at ``server`` with the default 6 retries."""
    with pytest.raises(InputError) as info:
        embed_endpoint(
            Endpoint("m", server.url, "ISOSCOPE_NO_KEY", 4), ["a", "b"], sleep=sleeps.append, environ=environ
        )
    return str(info.value)


@pytest.mark.timeout(60, method="signal")
def test_a_dripping_server_is_cut_at_the_deadline_and_tried_once_more() -> None:
    """One byte every 0.2 s keeps every read within its timeout; the 1 s deadline cuts each try."""
    sleeps: list[float] = []
    with StallingServer(drip=0.2) as server:
        message = _stuck(server, {ENV_ENDPOINT_DEADLINE: "1"}, sleeps)
        tries = server.connections
    assert tries == 1 + MISSED_RETRIES == 2, tries  # 7 before: a missed deadline was retried like a 503
    assert sleeps == []  # no backoff: a stuck server is not busy
    assert "\n" not in message and len(message) < 300, message
    assert "no complete answer within 1 s (the request's deadline) (in each of 2 tries)" in message, message
    assert "waiting for POST /v1/embeddings to embed 2 text(s)" in message, message
    assert ENV_ENDPOINT_DEADLINE in message and server.address.split("//")[1] in message  # the host, the setting


@pytest.mark.timeout(60, method="signal")
def test_a_silent_server_is_cut_at_the_read_timeout_and_tried_once_more() -> None:
    sleeps: list[float] = []
    with StallingServer() as server:
        message = _stuck(server, {ENV_ENDPOINT_TIMEOUT: "0.5"}, sleeps)
        tries = server.connections
    assert tries == 2 and sleeps == [], (tries, sleeps)
    assert "nothing of the answer for 0.5 s (in each of 2 tries)" in message, message
    assert ENV_ENDPOINT_TIMEOUT in message and "\n" not in message


def test_a_missed_deadline_is_not_retried_past_retries() -> None:
    with StallingServer() as server:
        with pytest.raises(InputError, match=r"for 0.5 s \(once\)"):
            embed_endpoint(Endpoint("m", server.url, "ISOSCOPE_NO_KEY"), ["a"], timeout=0.5, retries=0, environ={})
        assert server.connections == 1


def test_timeouts_come_from_the_arguments_then_the_variables_then_the_defaults() -> None:
    assert endpoint_timeouts(environ={}) == (ENDPOINT_TIMEOUT_S, DEADLINE_READS * ENDPOINT_TIMEOUT_S) == (60, 300)
    assert endpoint_timeouts(environ={ENV_ENDPOINT_TIMEOUT: "2"}) == (2, 10)  # the deadline follows the reads
    assert endpoint_timeouts(environ={ENV_ENDPOINT_TIMEOUT: "2", ENV_ENDPOINT_DEADLINE: "3"}) == (2, 3)
    assert endpoint_timeouts(4, 5, environ={ENV_ENDPOINT_TIMEOUT: "2", ENV_ENDPOINT_DEADLINE: "3"}) == (4, 5)
    for bad in ("0", "-1", "soon", "nan", "1e9"):
        with pytest.raises(InputError, match=ENV_ENDPOINT_DEADLINE):
            endpoint_timeouts(environ={ENV_ENDPOINT_DEADLINE: bad})


@pytest.mark.timeout(60, method="signal")
def test_the_command_line_ends_a_stuck_endpoint_in_one_line(capsys, tmp_path, monkeypatch) -> None:
    from isoscope.cli import main  # no model is loaded: the endpoint embeds

    corpus = tmp_path / "c.txt"
    corpus.write_text("one text\nanother text\n")
    monkeypatch.setenv(ENV_ENDPOINT_DEADLINE, "1")
    with StallingServer(drip=0.2) as server:
        capsys.readouterr()
        argv = ["embed", "--input", str(corpus), "--out", str(tmp_path / "v.npy"), "--model", "openai:m"]
        code = main([*argv, "--base-url", server.url, "--no-cache", "--quiet"])
    assert code == 2
    line = one_error_line(capsys)
    assert "(the request's deadline) (in each of 2 tries)" in line and "POST /v1/embeddings" in line, line
    assert not (tmp_path / "v.npy").exists()
