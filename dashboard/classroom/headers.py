"""Classroom mode's response headers: an ASGI middleware that forbids framing and sniffing on every HTTP response
and removes the server's script path from the session message sent over the WebSocket.
"""

from __future__ import annotations

SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"x-frame-options", b"DENY"),
    (b"content-security-policy", b"frame-ancestors 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
)


def without_script_path(frame: bytes) -> bytes:
    """A ForwardMsg frame with ``new_session.main_script_path`` blanked (Streamlit sends every browser the
    absolute path of the app on the server; the frontend does not need it)."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    msg = ForwardMsg()
    try:
        msg.ParseFromString(frame)
    except Exception:  # not a ForwardMsg: pass it on untouched
        return frame
    if msg.WhichOneof("type") != "new_session" or not msg.new_session.main_script_path:
        return frame
    msg.new_session.main_script_path = ""
    return msg.SerializeToString()


class SecurityHeaders:
    """Pure ASGI middleware: adds ``SECURITY_HEADERS`` to every HTTP response, and removes the server's script
    path from the messages sent over the WebSocket."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope.get("type") == "websocket":

            async def send_without_paths(message) -> None:
                if message.get("type") == "websocket.send" and message.get("bytes"):
                    message = {**message, "bytes": without_script_path(message["bytes"])}
                await send(message)

            await self.app(scope, receive, send_without_paths)
            return
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message) -> None:
            if message.get("type") == "http.response.start":
                names = {k.lower() for k, _ in message.get("headers", [])}
                extra = [(k, v) for k, v in SECURITY_HEADERS if k not in names]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await self.app(scope, receive, send_with_headers)
