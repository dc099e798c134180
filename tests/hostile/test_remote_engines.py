"""Remote engines (issue 51, class 8): Ray addresses that are malformed, closed, silent or need an extra.

A bad address ends in exit status 2 and one line naming ``--ray-address`` and what was tried, within the
connection deadline (``ISOSCOPE_RAY_CONNECT_TIMEOUT``) rather than Ray's minutes of waiting, and nothing is
written. (That a real cluster's GCS passes the check: tests/core/atlas/test_distributed.py, on its cluster.)
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from isoscope.encode.ray_address import H2_PREFACE, parse_ray_address, probe
from isoscope.errors import InputError
from tests.hostile.conftest import assert_cli_refused, assert_one_line

HANG_GUARD_S = 240  # seconds: a run still going this long hangs (Ray waited minutes on a silent address)


@contextlib.contextmanager
def listening(host: str, answer: bytes | None, close: bool = False) -> Iterator[int]:
    """A TCP server on ``host`` that accepts and then sends ``answer`` (None: never a byte; ``close``: hangs up at
    once); yields its port."""
    server = socket.socket()
    server.bind((host, 0))
    server.listen(16)
    server.settimeout(0.2)
    held: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            if close:
                conn.close()
                continue
            if answer is not None:
                conn.recv(len(H2_PREFACE))
                conn.sendall(answer)
            held.append(conn)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        thread.join()
        for conn in held:
            conn.close()
        server.close()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize(
    "text", ["not a url", "ray://", "ray://head", "head:0", "head:65536", "http://head:10001", "head:port", "a b:1"]
)
def test_malformed_addresses_are_refused_naming_the_forms(text: str) -> None:
    with pytest.raises(InputError) as err:
        parse_ray_address(text)
    assert_one_line(str(err.value))
    assert "--ray-address" in str(err.value) and "ray://HOST:PORT" in str(err.value)


@pytest.mark.parametrize("text", ["local", "auto", "head:6379", "10.0.0.1:6379", "ray://head.example.org:10001"])
def test_the_forms_ray_takes_are_accepted(text: str) -> None:
    assert parse_ray_address(text).text == text


def test_the_probe_says_what_each_kind_of_wrong_server_did() -> None:
    assert probe("127.0.0.1", closed_port(), 2) == "connection refused"
    with listening("127.0.0.1", None) as port:
        assert probe("127.0.0.1", port, 0.5) == "no answer within 0.5 s"
    with listening("127.0.0.1", None, close=True) as port:
        assert probe("127.0.0.1", port, 2) == "it closed the connection without answering"
    with listening("127.0.0.1", b"HTTP/1.1 400 Bad Request\r\n\r\n") as port:
        assert probe("127.0.0.1", port, 2) == "it answered, but not as a Ray (gRPC) server"
    settings = bytes([0, 0, 6, 4, 0, 0, 0, 0, 0]) + bytes(6)  # an HTTP/2 server's SETTINGS frame
    with listening("127.0.0.1", settings) as port:
        assert probe("127.0.0.1", port, 2) is None


def test_a_malformed_address_is_one_line_before_any_work(cli, tmp_path: Path) -> None:
    corpus = tmp_path / "c.txt"
    corpus.write_text("a\nb\nc\n")
    argv = ["embed", "--input", str(corpus), "--engine", "ray", "--shard-dir", str(tmp_path / "s")]
    assert_cli_refused(cli(*argv, "--ray-address", "not a url"), "--ray-address", "not a url")
    np.save(tmp_path / "v.npy", np.ones((3, 4), np.float32))
    argv = ["atlas", "--input", str(corpus), "--vectors", str(tmp_path / "v.npy"), "--engine", "ray"]
    argv += ["--out", str(tmp_path / "a")]
    assert_cli_refused(cli(*argv, "--ray-address", "not a url"), "--ray-address", "not a url")
    assert not (tmp_path / "a").exists() and not (tmp_path / "s").exists()


@pytest.fixture()
def atlas_on_ray(cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """``isoscope atlas --engine ray --ray-address ADDRESS`` (in-process; the connection deadline 2 s, a hang
    bounded by the test's timeout); returns the refusal's one line."""
    pytest.importorskip("ray.data")
    monkeypatch.setenv("ISOSCOPE_RAY_CONNECT_TIMEOUT", "2")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    np.save(tmp_path / "v.npy", np.random.default_rng(0).normal(size=(50, 8)).astype(np.float32))
    (tmp_path / "c.txt").write_text("".join(f"text {i}\n" for i in range(50)))
    argv = ["atlas", "--input", str(tmp_path / "c.txt"), "--vectors", str(tmp_path / "v.npy"), "--layout", "pca"]
    argv += ["--engine", "ray", "--quiet", "--out", str(tmp_path / "atlas")]

    def run(address: str, *fragments: str) -> str:
        line = assert_cli_refused(cli(*argv, "--ray-address", address), "--ray-address", *fragments)
        assert not (tmp_path / "atlas").exists()
        return line

    return run


@pytest.mark.timeout(HANG_GUARD_S)
def test_a_closed_gcs_address_is_one_line_in_bounded_time(atlas_on_ray) -> None:
    port = closed_port()
    line = atlas_on_ray(f"127.0.0.1:{port}", f":{port}", "connection refused", "tried a gRPC handshake")
    assert "Ray's address for 127.0.0.1" in line or "at 127.0.0.1" in line


@pytest.mark.timeout(HANG_GUARD_S)
def test_a_silent_gcs_address_is_one_line_in_bounded_time(atlas_on_ray) -> None:
    # every interface: Ray rewrites 127.0.0.1 to this machine's address, and the check connects where Ray would
    with listening("0.0.0.0", None) as port:
        atlas_on_ray(f"127.0.0.1:{port}", f":{port}", "no answer within 2 s")


@pytest.mark.timeout(HANG_GUARD_S)
def test_a_ray_client_address_names_what_it_needs(atlas_on_ray) -> None:
    line = atlas_on_ray(f"ray://127.0.0.1:{closed_port()}", "ray://")
    assert "ray[client]" in line or "connection refused" in line  # without the extra, or with it: nobody there
