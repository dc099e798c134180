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
