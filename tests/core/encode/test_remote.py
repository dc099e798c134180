"""The embeddings-endpoint client against a real local HTTP server: batching, retries, the cache, errors."""

from __future__ import annotations

import logging
import socket
from pathlib import Path

import numpy as np
import pytest

from isoscope.encode.endpoints import Endpoint, check_base_url, endpoint_for, is_endpoint_model
from isoscope.encode.remote import EndpointCache, embed_endpoint
from isoscope.errors import InputError
from tests.endpoint_server import Answer, EmbeddingServer, hashed_vectors

TEXTS = [f"text number {i}" for i in range(10)]
SECRET = "sk-test-0123456789-SECRET"
ENV = {"ISOSCOPE_TEST_KEY": SECRET}


def _endpoint(server: EmbeddingServer, batch: int = 4) -> Endpoint:
    return Endpoint("minilm", server.url, "ISOSCOPE_TEST_KEY", batch)


def _embed(server, cache=None, batch: int = 4, texts=TEXTS, sleeps: list | None = None, retries: int = 3, env=ENV):
    sleep = sleeps.append if sleeps is not None else (lambda _s: None)
    return embed_endpoint(
        _endpoint(server, batch),
        texts,
        progress=None,
        cache=cache,
        timeout=10,
        retries=retries,
        sleep=sleep,
        environ=env,
    )


def test_vectors_come_back_in_order_batched_and_with_the_key(tmp_path: Path) -> None:
    with EmbeddingServer() as server:
        out = _embed(server, batch=4)
    np.testing.assert_array_equal(out, hashed_vectors(TEXTS))
    assert [len(b) for b in server.inputs()] == [4, 4, 2]
    assert all(r["headers"]["Authorization"] == f"Bearer {SECRET}" for r in server.requests)
    assert server.requests[0]["body"]["model"] == "minilm"


def test_no_key_no_header_for_a_local_server() -> None:
    with EmbeddingServer() as server:
        _embed(server, env={})
    assert "Authorization" not in server.requests[0]["headers"]


def test_openai_needs_its_key() -> None:
    with pytest.raises(InputError, match="set OPENAI_API_KEY"):
        embed_endpoint(endpoint_for("openai:text-embedding-3-small"), TEXTS, environ={})


def test_second_run_costs_nothing_and_the_key_is_not_cached(tmp_path: Path) -> None:
    cache = EndpointCache(tmp_path / "endpoints.sqlite")
    with EmbeddingServer() as server:
        first = _embed(server, cache)
        sent = len(server.requests)
        again = _embed(server, cache, texts=[*TEXTS[::-1], TEXTS[0]])
    assert len(server.requests) == sent  # nothing sent the second time
    np.testing.assert_array_equal(again, first[[*range(9, -1, -1), 0]])
    assert SECRET.encode() not in (tmp_path / "endpoints.sqlite").read_bytes()


def test_an_interrupted_run_resumes(tmp_path: Path) -> None:
    cache = EndpointCache(tmp_path / "endpoints.sqlite")
    script = [Answer(), Answer(), Answer(400, {"error": {"message": "stop here"}})]
    with EmbeddingServer(script=script) as server:
        with pytest.raises(InputError, match="stop here"):
            _embed(server, cache)
        server.requests.clear()
        out = _embed(server, cache)
    assert server.inputs() == [TEXTS[8:]]  # only the batch that had failed
    np.testing.assert_array_equal(out, hashed_vectors(TEXTS))


def test_a_damaged_cache_row_is_fetched_again(tmp_path: Path) -> None:
    import sqlite3

    cache = EndpointCache(tmp_path / "endpoints.sqlite")
    with EmbeddingServer() as server:
        _embed(server, cache)
        con = sqlite3.connect(tmp_path / "endpoints.sqlite")
        with con:
            con.execute("UPDATE vectors SET data = zeroblob(64) WHERE rowid = 1")
        con.close()
        server.requests.clear()
        out = _embed(server, cache)
    assert sum(len(b) for b in server.inputs()) == 1
    np.testing.assert_array_equal(out, hashed_vectors(TEXTS))


def test_429_then_success_waits_as_told() -> None:
    sleeps: list[float] = []
    with EmbeddingServer(script=[Answer(429, {"error": {"message": "slow down"}}, {"Retry-After": "2"})]) as server:
        out = _embed(server, sleeps=sleeps)
    np.testing.assert_array_equal(out, hashed_vectors(TEXTS))
    assert sleeps == [2.0] and len(server.requests) == 4


def test_5xx_is_retried_with_backoff_then_given_up() -> None:
    sleeps: list[float] = []
    with EmbeddingServer(script=[Answer(503, {"error": "busy"}), Answer(502, b"bad gateway")]) as server:
        out = _embed(server, sleeps=sleeps)
    np.testing.assert_array_equal(out, hashed_vectors(TEXTS))
    assert sleeps == [0.5, 1.0]
    with EmbeddingServer(script=[Answer(500, {"error": "down"})] * 4) as server:
        with pytest.raises(InputError, match=r"still failed after 3 tries \(500"):
            _embed(server, retries=2)


def test_too_large_batches_are_split() -> None:
    with EmbeddingServer(max_inputs=2) as server:
        out = _embed(server, batch=8)
    np.testing.assert_array_equal(out, hashed_vectors(TEXTS))
    assert max(len(b) for b in server.inputs() if len(b) <= 2) == 2


def test_refused_connection() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    endpoint = Endpoint("m", f"http://127.0.0.1:{port}/v1", "ISOSCOPE_TEST_KEY")
    with pytest.raises(InputError, match=r"cannot connect to http://127.0.0.1:\d+/v1 .*is the server running"):
        embed_endpoint(endpoint, TEXTS, retries=0, environ=ENV)


def test_401_names_the_variable_never_the_key(caplog) -> None:
    caplog.set_level(logging.DEBUG)
    body = {"error": {"message": f"Incorrect API key provided: {SECRET}"}}
    with EmbeddingServer(script=[Answer(401, body)]) as server:
        with pytest.raises(InputError) as err:
            _embed(server)
    msg = str(err.value)
    assert "401" in msg and "check the key ($ISOSCOPE_TEST_KEY)" in msg and "\n" not in msg
    assert SECRET not in msg and SECRET not in caplog.text


@pytest.mark.parametrize(
    ("answer", "fragment"),
    [
        (Answer(200, b"<html>hello</html>"), "not JSON"),
        (Answer(200, {"object": "list"}), "no 'data' list"),
        (Answer(200, {"data": [{"index": 0, "embedding": [0.1]}]}), "1 vectors for 4 texts"),
        (Answer(200, {"data": [{"index": i, "embedding": ["a", "b"]} for i in range(4)]}), "not a list of numbers"),
    ],
)
def test_malformed_answers(answer: Answer, fragment: str) -> None:
    with EmbeddingServer(script=[answer]) as server:
        with pytest.raises(InputError) as err:
            _embed(server)
    assert fragment in str(err.value) and "not an embeddings response" in str(err.value)


def test_wrong_dimension_between_batches() -> None:
    with EmbeddingServer(script=[Answer(), Answer(dims=20)]) as server:
        with pytest.raises(InputError, match="20-dimensional vectors where 16 were expected"):
            _embed(server)


def test_404_points_at_the_base_url() -> None:
    with EmbeddingServer() as server:
        endpoint = Endpoint("m", server.url.removesuffix("/v1"), "ISOSCOPE_TEST_KEY")
        with pytest.raises(InputError, match=r"404 .*check --base-url"):
            embed_endpoint(endpoint, TEXTS, environ=ENV)


def test_classroom_mode_refuses_unless_allowed() -> None:
    with EmbeddingServer() as server:
        with pytest.raises(InputError, match="off in this classroom"):
            _embed(server, env={**ENV, "ISOSCOPE_CLASSROOM": "1"})
        _embed(server, env={**ENV, "ISOSCOPE_CLASSROOM": "1", "ISOSCOPE_ALLOW_ENDPOINTS": "1"})


def test_names_and_urls() -> None:
    assert is_endpoint_model("openai:text-embedding-3-small") and not is_endpoint_model("sentence-transformers/x")
    e = endpoint_for("openai:nomic-embed-text", base_url="http://localhost:11434/v1/")
    assert e.base_url == "http://localhost:11434/v1" and e.url == "http://localhost:11434/v1/embeddings"
    assert e.name == "openai:nomic-embed-text at localhost:11434"
    assert (
        endpoint_for("openai:a").fingerprint != endpoint_for("openai:a", base_url="http://localhost:1/v1").fingerprint
    )
    assert endpoint_for("openai:a").fingerprint == endpoint_for("openai:a", api_key_env="OTHER").fingerprint
    for bad in ("ftp://x/v1", "http://user:pw@host/v1", "localhost:8000", "http://h/v1?key=1"):
        with pytest.raises(InputError):
            check_base_url(bad)
