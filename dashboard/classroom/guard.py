"""Classroom mode's server layer: before a session has given the access code, only the code form reaches it.

``dashboard/serve.py`` installs ``ClassroomGuard`` in front of Streamlit's own routes (``classroom.middleware()``).
It sees every HTTP request and every WebSocket message, so what it refuses is never processed, whatever a
client sends:

- a WebSocket session that has not been admitted (``admit``, called by ``classroom.gate`` when the code is
  right) may send only script runs and heartbeats: cache control (``clear_cache``), upload URL requests,
  backend operations and the rest are dropped;
- a file upload (``PUT /_stcore/upload_file/<session>/...``) for a session that has not been admitted is
  refused with 403, before its body is read;
- ``/_stcore/metrics`` (the server's cache statistics, with internal function names) answers 404;
- the script runs of sessions not admitted yet are throttled per client address and for the whole server
  (``Throttle``): a run that presses a button (a code guess) costs a guess, any run costs a run. A client
  over its budget waits; one that would wait longer than ``MAX_WAIT`` seconds is disconnected. Many
  sessions from one address share its budget, so reconnecting does not buy more guesses, and a flood
  of wrong codes cannot take the server's CPU from the students already in.

The session a WebSocket belongs to is learnt from the ``new_session`` message the server sends it.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

# (burst, refill per second) for one client address and for the whole server
GUESSES_PER_CLIENT = (40, 1.0)  # a class behind one address can all enter at once; then one guess a second
GUESSES_OVERALL = (100, 3.0)  # a 40-bit code at 3 guesses a second: over 10,000 years
RUNS_PER_CLIENT = (120, 4.0)  # script runs of the code form (a first visit, a reload)
RUNS_OVERALL = (400, 20.0)
MAX_WAIT = 30.0  # seconds a throttled client may be kept waiting before it is disconnected
ALLOWED_BEFORE_CODE = frozenset({"rerun_script", "app_heartbeat"})  # BackMsg types a session may send before
_TRIGGERS = frozenset({"trigger_value", "json_trigger_value", "string_trigger_value", "chat_input_value"})
MAX_ADMITTED = 100_000  # session ids remembered (the oldest are forgotten first)
MAX_CLIENTS = 10_000  # client addresses with a bucket (idle ones are forgotten first)

_admitted: OrderedDict[str, None] = OrderedDict()
_admitted_lock = threading.Lock()


def admit(session_id: str) -> None:
    """Let ``session_id`` past the guard (it gave the access code)."""
    with _admitted_lock:
        _admitted[session_id] = None
        while len(_admitted) > MAX_ADMITTED:
            _admitted.popitem(last=False)


def is_admitted(session_id: str | None) -> bool:
    return session_id is not None and session_id in _admitted


@dataclass
class _Bucket:
    tokens: float
    stamp: float


class Throttle:
    """Token buckets: one per client address and one for the server, each ``(burst, refill per second)``.

    ``reserve(client)`` takes a token from both and returns how long the caller must wait until the tokens
    it took exist (0 when there were some left); it takes nothing and returns None when that wait would be
    over ``max_wait``. Called from the event loop's thread only.
    """

    def __init__(
        self,
        per_client: tuple[int, float],
        overall: tuple[int, float],
        max_wait: float = MAX_WAIT,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.per_client, self.overall, self.max_wait, self.clock = per_client, overall, max_wait, clock
        self.clients: OrderedDict[str, _Bucket] = OrderedDict()
        self.server = _Bucket(float(overall[0]), clock())

    @staticmethod
    def _refill(bucket: _Bucket, limits: tuple[int, float], now: float) -> None:
        bucket.tokens = min(float(limits[0]), bucket.tokens + (now - bucket.stamp) * limits[1])
        bucket.stamp = now

    def reserve(self, client: str) -> float | None:
        now = self.clock()
        bucket = self.clients.pop(client, None) or _Bucket(float(self.per_client[0]), now)
        self.clients[client] = bucket  # most recently used last
        while len(self.clients) > MAX_CLIENTS:
            self.clients.popitem(last=False)
        self._refill(bucket, self.per_client, now)
        self._refill(self.server, self.overall, now)
        wait = max(
            (1 - bucket.tokens) / self.per_client[1] if bucket.tokens < 1 else 0.0,
            (1 - self.server.tokens) / self.overall[1] if self.server.tokens < 1 else 0.0,
        )
        if wait > self.max_wait:
            return None
        bucket.tokens -= 1
        self.server.tokens -= 1
        return wait


GUESSES = Throttle(GUESSES_PER_CLIENT, GUESSES_OVERALL)
RUNS = Throttle(RUNS_PER_CLIENT, RUNS_OVERALL)


def _route(scope) -> str:
    """The path of a request below Streamlit's base URL, without the leading slash (``_stcore/metrics``)."""
    path = str(scope.get("path", ""))
    root = str(scope.get("root_path", "") or "")
    if root and path.startswith(root):
        path = path[len(root) :]
    return path.lstrip("/")


def _ends_with(route: str, suffix: str) -> bool:
    return route == suffix or route.endswith("/" + suffix)


def _upload_session(route: str) -> str | None:
    """The session id of an upload URL (``.../_stcore/upload_file/<session>/<file>``), else None."""
    parts = route.split("/")
    for i in range(len(parts) - 2):
        if parts[i] == "_stcore" and parts[i + 1] == "upload_file":
            return parts[i + 2] if i + 2 < len(parts) else ""
    return None


def _client(scope) -> str:
    client = scope.get("client")
    return str(client[0]) if client else "unknown"


def _back_msg(data: bytes):
    """The BackMsg in a WebSocket frame, or None when it is not one (Streamlit then closes the connection)."""
    from streamlit.proto.BackMsg_pb2 import BackMsg

    msg = BackMsg()
    try:
        msg.ParseFromString(data)
    except Exception:
        return None
    return msg


def _presses_a_button(msg) -> bool:
    return any(w.WhichOneof("value") in _TRIGGERS for w in msg.rerun_script.widget_states.widgets)


def _session_of(frame: bytes) -> str | None:
    """The session id a ``new_session`` ForwardMsg announces, else None."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    msg = ForwardMsg()
    try:
        msg.ParseFromString(frame)
    except Exception:
        return None
    if msg.WhichOneof("type") != "new_session":
        return None
    return msg.new_session.initialize.session_id or None


async def _respond(send, status: int, text: str) -> None:
    body = text.encode()
    headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class ClassroomGuard:
    """Pure ASGI middleware enforcing the module docstring's rules."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope.get("type") == "websocket":
            await self._websocket(scope, receive, send)
            return
        if scope.get("type") == "http":
            route = _route(scope)
            if _ends_with(route, "_stcore/metrics"):
                await _respond(send, 404, "Not found")
                return
            session = _upload_session(route)
            if session is not None and not is_admitted(session):
                await _respond(send, 403, "Give the access code first")
                return
        await self.app(scope, receive, send)

    async def _websocket(self, scope, receive, send) -> None:
        state: dict[str, str | None] = {"session": None}
        client = _client(scope)

        async def learn_session(message) -> None:
            if message.get("type") == "websocket.send" and message.get("bytes") and state["session"] is None:
                state["session"] = _session_of(message["bytes"])
            await send(message)

        async def guarded_receive():
            while True:
                message = await receive()
                if message.get("type") != "websocket.receive" or is_admitted(state["session"]):
                    return message
                msg = _back_msg(message.get("bytes") or b"")
                if msg is None:
                    return message  # Streamlit refuses it and closes the connection
                kind = msg.WhichOneof("type")
                if kind not in ALLOWED_BEFORE_CODE:
                    continue  # dropped: nothing but the code form before the code
                if kind == "rerun_script":
                    throttles = [RUNS, GUESSES] if _presses_a_button(msg) else [RUNS]
                    waits = [t.reserve(client) for t in throttles]
                    if any(w is None for w in waits):
                        await _close(send)
                        return {"type": "websocket.disconnect", "code": 1008}
                    wait = max(w for w in waits if w is not None)
                    if wait > 0:
                        await asyncio.sleep(wait)
                return message

        await self.app(scope, guarded_receive, learn_session)


async def _close(send) -> None:
    """Close the client's connection (policy violation: it is over its budget of attempts)."""
    try:
        await send({"type": "websocket.close", "code": 1008, "reason": "too many attempts; wait a minute"})
    except Exception:  # already closed
        pass
