"""A real HTTP server on 127.0.0.1 speaking OpenAI's ``POST /v1/embeddings``, started by a test in a thread.

Its vectors come from a function of the texts (the real model, or a fixed one); ``script`` answers the first
requests in another way (an error status, a malformed body, vectors of the wrong size) to drive the client's
error paths. Every request's body and headers are recorded.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np


@dataclass
class Answer:
    """One scripted answer: a status with a body (bytes, or a JSON-able value); ``Answer()`` is the normal answer,
    ``Answer(dims=k)`` the normal answer with vectors of length k."""

    status: int = 200
    body: object = None
    headers: dict[str, str] = field(default_factory=dict)
    dims: int | None = None
    reason: str | None = None  # the status line's reason phrase (default: the standard one)


def hashed_vectors(texts: Sequence[str], dims: int = 16) -> np.ndarray:
    """A fixed vector per text (seeded by its bytes), so answers are reproducible."""
    out = []
    for t in texts:
        seed = int.from_bytes(t.encode()[:16].ljust(16, b"\0"), "little") ^ len(t)
        out.append(np.random.default_rng(seed).standard_normal(dims))
    return np.asarray(out, np.float32)


class EmbeddingServer:
    def __init__(
        self,
        embed: Callable[[list[str]], np.ndarray] = hashed_vectors,
        script: Sequence[Answer] = (),
        max_inputs: int | None = None,
    ) -> None:
        self.embed, self.script, self.max_inputs = embed, list(script), max_inputs
        self.requests: list[dict] = []  # {"body": ..., "headers": {...}}
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = None
                with server.lock:
                    server.requests.append({"path": self.path, "body": body, "headers": dict(self.headers)})
                    answer = server.script.pop(0) if server.script else None
                if self.path != "/v1/embeddings":
                    return self._send(404, {"error": {"message": f"no route {self.path}"}})
                inputs = body.get("input") if isinstance(body, dict) else None
                if answer is not None and (answer.status != 200 or answer.body is not None):
                    return self._send(answer.status, answer.body, answer.headers, answer.reason)
                if server.max_inputs is not None and len(inputs) > server.max_inputs:
                    return self._send(413, {"error": {"message": "too many inputs"}})
                vectors = server.embed(list(inputs))
                if answer is not None and answer.dims is not None:
                    vectors = hashed_vectors(inputs, answer.dims)
                data = [{"object": "embedding", "index": i, "embedding": v.tolist()} for i, v in enumerate(vectors)]
                data.reverse()  # the index, not the order, says which text a vector is
                self._send(200, {"object": "list", "data": data, "model": body.get("model"), "usage": {}})

            def _send(
                self, status: int, body: object, headers: dict[str, str] | None = None, reason: str | None = None
            ) -> None:
                payload = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status, reason)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(payload)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def inputs(self) -> list[list[str]]:
        return [r["body"]["input"] for r in self.requests if isinstance(r["body"], dict)]

    def __enter__(self) -> EmbeddingServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)


class StallingServer:
    """A TCP server on 127.0.0.1 that accepts every connection and then stalls: ``drip=None`` never sends a byte
    (a silent server: a Hub mirror or an endpoint that hung), ``drip=s`` sends an HTTP answer one byte every ``s``
    seconds (its status line and headers too), so every read is within its timeout and the answer takes hours.
    ``connections`` counts the connections accepted (each a try of the client), ``requests`` holds their request
    lines."""

    def __init__(self, drip: float | None = None) -> None:
        import socket

        self.drip = drip
        self.connections = 0
        self.stop = threading.Event()
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.1)
        self.port = self.sock.getsockname()[1]
        self.open: list = []
        self.requests: list[str] = []  # the request line of each connection (``POST /v1/embeddings HTTP/1.1``)
        self.threads: list[threading.Thread] = [threading.Thread(target=self._accept, daemon=True)]

    @property
    def address(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        """The address as an embeddings endpoint's base URL."""
        return f"{self.address}/v1"

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:  # the accept timeout (to look at stop), or the socket closed
                continue
            self.connections += 1  # only this thread counts
            self.open.append(conn)
            thread = threading.Thread(target=self._stall, args=(conn,), daemon=True)
            self.threads.append(thread)
            thread.start()

    def _stall(self, conn) -> None:
        body = b'{"data": [' + b" " * 100_000 + b"]}"
        answer = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body
        try:
            conn.settimeout(5)
            self.requests.append(conn.recv(65536).split(b"\r\n", 1)[0].decode("latin-1"))
            if self.drip is None:
                return
            for i in range(len(answer)):
                if self.stop.wait(self.drip):
                    return
                conn.sendall(answer[i : i + 1])
        except OSError:  # the client hung up: what the test wants
            return

    def __enter__(self) -> StallingServer:
        self.threads[0].start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(5)
        for conn in self.open:
            conn.close()
        self.sock.close()
