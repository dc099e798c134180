"""Secrets (issue 40): the API key in a server's reason phrase or answer, a redirect to another host, and local
paths in a report made from Python.

- Every string we print or log from a response has the key masked: the reason phrase of a 401 or a 429 (the
  body was masked, the reason was not), an index the server made up.
- A redirect to another origin is refused with one line, before the Authorization header goes anywhere.
- A report made from Python (a script, a Jupyter kernel) names the script, never its folder: a report meant to
  be mailed carries no local path or user name.
"""

from __future__ import annotations

import logging
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from isoscope.encode.endpoints import Endpoint
from isoscope.encode.remote import embed_endpoint
from isoscope.errors import InputError
from tests.endpoint_server import Answer, EmbeddingServer
from tests.hostile.conftest import assert_cli_refused, assert_one_line

SECRET = "sk-hostile-0123456789abcdef-SECRET"
ENV = {"ISOSCOPE_TEST_KEY": SECRET}
TEXTS = ["one text", "another text", "a third"]


def leaks(text: str) -> bool:
    """Whether ``text`` holds the key or any 8 characters of it in a row (a cut key is still a leak)."""
    return any(SECRET[i : i + 8] in text for i in range(len(SECRET) - 7))


def _embed(server: EmbeddingServer, retries: int = 1):
    endpoint = Endpoint("m", server.url, "ISOSCOPE_TEST_KEY", 8)
    return embed_endpoint(endpoint, TEXTS, timeout=10, retries=retries, sleep=lambda _s: None, environ=ENV)


def _refused(server: EmbeddingServer, caplog) -> str:
    with caplog.at_level(logging.DEBUG), pytest.raises(InputError) as info:
        _embed(server)
    message = str(info.value)
    assert_one_line(message)
    assert not leaks(message), message
    assert not [r.getMessage() for r in caplog.records if leaks(r.getMessage())]
    return message


@pytest.mark.parametrize("status", [401, 403, 429, 500, 418])
def test_a_key_echoed_in_the_reason_phrase_is_masked(status: int, caplog) -> None:
    """Issue 40: the 401 and 429 messages printed the reason phrase as the server sent it."""
    answer = Answer(status, {"error": {"message": f"bad key {SECRET}"}}, reason=f"Denied for Bearer {SECRET}")
    with EmbeddingServer(script=[answer] * 3) as server:
        message = _refused(server, caplog)
    assert "***" in message and str(status) in message


def test_a_key_echoed_as_an_index_is_not_shown(caplog) -> None:
    body = {"data": [{"index": SECRET, "embedding": [0.1, 0.2]} for _ in TEXTS]}
    with EmbeddingServer(script=[Answer(200, body)]) as server:
        message = _refused(server, caplog)
    assert "index" in message


def test_the_command_line_never_prints_the_key(cli, tmp_path, monkeypatch) -> None:
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(TEXTS) + "\n")
    monkeypatch.setenv("ISOSCOPE_TEST_KEY", SECRET)
    answer = Answer(401, {"error": {"message": SECRET}}, reason=f"Unauthorized {SECRET}")
    with EmbeddingServer(script=[answer]) as server:
        argv = ["--model", "openai:m", "--base-url", server.url, "--api-key-env", "ISOSCOPE_TEST_KEY"]
        r = cli("embed", "--input", str(corpus), "--out", str(tmp_path / "v.npy"), *argv)
    assert not leaks(r.err + r.out), r.err
    assert_cli_refused(r, "401", "ISOSCOPE_TEST_KEY")


class Recorder:
    """Any HTTP server on another port: records the headers of every request it gets."""

    def __init__(self) -> None:
        self.headers: list[dict[str, str]] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def _answer(self) -> None:
                recorder.headers.append(dict(self.headers))
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_POST = _answer

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1/embeddings"

    def __enter__(self) -> Recorder:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_to_another_origin_is_refused_before_the_key_leaves(status: int) -> None:
    """Issue 40: urllib followed a 302 to another host with the Authorization header."""
    with Recorder() as elsewhere:
        hop = Answer(status, b"", {"Location": elsewhere.url})
        with EmbeddingServer(script=[hop] * 8) as server, pytest.raises(InputError) as info:
            _embed(server, retries=2)
    assert not [h for h in elsewhere.headers if "Authorization" in h], "the key was sent to the other host"
    message = str(info.value)
    assert_one_line(message)
    assert not leaks(message)
    if status in (301, 302, 303):  # urllib follows these for a POST (307 and 308 it refuses itself)
        assert "redirected" in message and "--base-url" in message, message


def test_a_report_made_from_python_carries_no_local_path(tmp_path, monkeypatch) -> None:
    """Issue 40: a report made in Jupyter recorded the kernel launcher's absolute path (the user's home)."""
    import isoscope

    home = "/home/alice-7f3e"
    launcher = f"{home}/.venv/lib/python3.11/site-packages/ipykernel_launcher.py"
    monkeypatch.setattr(sys, "argv", [launcher, "-f", f"{home}/.local/share/jupyter/runtime/kernel-1.json"])
    rng = np.random.default_rng(0)
    texts = [f"text {i}" for i in range(40)]
    space = isoscope.Space(rng.normal(size=(40, 8)).astype(np.float32), texts, name="mine")
    out = Path(space.report(tmp_path / "r.html", k=5, map="pca"))
    html = out.read_text(encoding="utf-8")
    assert "alice-7f3e" not in html and "site-packages" not in html
    assert "ipykernel_launcher.py" in html  # what made it is still said
