"""The app's one base URL, told to Streamlit's page before its scripts run (issue 41).

A page opened by its own URL (``/atlas``) made Streamlit's frontend guess its server's base path from the
address: ``/atlas`` first (``GET /atlas/_stcore/health``: 404 in the log and the browser's console), then ``/``.
The server knows its base path (``server.baseUrlPath``), so ``BaseUrl`` (an ASGI middleware, outermost in
serve.py) writes it into every HTML page it serves as ``window.__streamlit.BACKEND_BASE_URL``, the setting
Streamlit's frontend reads before guessing: one health check, at the right address.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def base_path(configured: str) -> str:
    """``server.baseUrlPath`` as a path that starts and ends with one slash: "" -> "/", "lab/x" -> "/lab/x/"."""
    inner = configured.strip("/")
    return f"/{inner}/" if inner else "/"


def script(path: str) -> bytes:
    """The inline script that sets the base URL (the page's own origin, the server's base path)."""
    value = f"window.location.origin + {json.dumps(path)}"
    return (
        f"<script>window.__streamlit = Object.assign({{}}, window.__streamlit, {{BACKEND_BASE_URL: {value}}});</script>"
    ).encode()


def inject(html: bytes, path: str) -> bytes:
    """``html`` with the script right after ``<head>`` (before every other script); unchanged without a head."""
    at = html.find(b"<head>")
    if at < 0:
        return html
    at += len(b"<head>")
    return html[:at] + script(path) + html[at:]


class BaseUrl:
    """Sets the base URL in the HTML pages (the index Streamlit serves for every page's URL); everything else
    passes untouched. A page's request is sent on without Accept-Encoding, so its HTML comes back uncompressed."""

    def __init__(self, app: ASGIApp, *, configured: str | None = None) -> None:
        self.app = app
        self.configured = configured

    def path(self) -> str:
        if self.configured is not None:
            return base_path(self.configured)
        from streamlit import config

        return base_path(str(config.get_option("server.baseUrlPath") or ""))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "GET" or not wants_html(scope):
            await self.app(scope, receive, send)
            return
        scope = {**scope, "headers": [(k, v) for k, v in scope["headers"] if k.lower() != b"accept-encoding"]}
        path = self.path()
        start: Message = {}
        passing = False  # a response that is not an HTML page goes out as it comes
        body = bytearray()

        async def capture(message: Message) -> None:
            nonlocal start, passing
            if message["type"] == "http.response.start":
                start, passing = message, not is_html(message)
                if passing:
                    await send(message)
                return
            if passing:
                await send(message)
                return
            body.extend(message.get("body", b""))
            if not message.get("more_body", False):
                page = inject(bytes(body), path)
                headers = [(k, v) for k, v in start["headers"] if k.lower() != b"content-length"]
                await send({**start, "headers": [*headers, (b"content-length", str(len(page)).encode())]})
                await send({"type": "http.response.body", "body": page})

        await self.app(scope, receive, capture)


def wants_html(scope: Scope) -> bool:
    """A browser's navigation to a page (Accept: text/html), not a script's request to an API or a file."""
    accept = next((v for k, v in scope.get("headers", []) if k.lower() == b"accept"), b"")
    return b"text/html" in accept


def is_html(start: Message) -> bool:
    """An uncompressed HTML page (a compressed one passes untouched)."""
    headers = {k.lower(): v for k, v in start.get("headers", [])}
    return headers.get(b"content-type", b"").startswith(b"text/html") and b"content-encoding" not in headers
