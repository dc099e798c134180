"""Requests to the Hugging Face Hub with timeouts: a server that accepts and never answers ends the command in one
line that says what was waited for, instead of hanging.

huggingface_hub sends some requests with no timeout at all (``repo_info``, the listing of a repository's files:
the first requests of ``snapshot_download``), and a silent server holds them forever. ``bound_hub_requests()``
gives every request it sends without one a connect timeout of ``HUB_CONNECT_TIMEOUT_S`` and a read timeout (no
byte for that long) of ``HUB_READ_TIMEOUT_S``. Requests that name their own keep them (a file's metadata:
``HF_HUB_ETAG_TIMEOUT``; its bytes: ``HF_HUB_DOWNLOAD_TIMEOUT``); ``ISOSCOPE_HUB_TIMEOUT`` (seconds) bounds every
request, theirs too. huggingface_hub >= 1 (httpx): a request hook on its shared client; older (requests): a
default on the adapters of the sessions it makes. ``hub_timeout_message`` says, in one line, which request went
unanswered and for how long.

Used by ``isoscope data stsb`` (``isoscope.data.benchmarks``) and by hub models (``isoscope.encode.models``).
"""

from __future__ import annotations

import logging
import os
from urllib.parse import urlsplit

from isoscope.errors import InputError

log = logging.getLogger(__name__)

HUB_CONNECT_TIMEOUT_S = 10.0  # seconds to open a connection to the Hub, where a request names no timeout
HUB_READ_TIMEOUT_S = 30.0  # seconds without a byte of an answer, where a request names no timeout
ENV_HUB_TIMEOUT = "ISOSCOPE_HUB_TIMEOUT"  # seconds: the most any request to the Hub waits (connect and read)
_MARK = "_isoscope_timeouts"
_TIMEOUTS = frozenset({"TimeoutException", "Timeout", "TimeoutError", "ConnectTimeout", "ReadTimeout"})


def hub_timeouts() -> tuple[float, float, float | None]:
    """(connect, read, cap) seconds: a request to the Hub that names no timeout gets ``connect`` and ``read``; none
    waits more than ``cap`` (``ISOSCOPE_HUB_TIMEOUT``; None when unset)."""
    text = os.environ.get(ENV_HUB_TIMEOUT, "").strip()
    if not text:
        return HUB_CONNECT_TIMEOUT_S, HUB_READ_TIMEOUT_S, None
    try:
        cap = float(text)
    except ValueError:
        cap = float("nan")
    if not 0 < cap < 86_400:  # NaN too
        raise InputError(f"{ENV_HUB_TIMEOUT} must be a number of seconds above 0; got '{text[:40]}'")
    return min(HUB_CONNECT_TIMEOUT_S, cap), min(HUB_READ_TIMEOUT_S, cap), cap


def _bounded(given: float | None, default: float, cap: float | None) -> float:
    value = default if given is None else given
    return value if cap is None else min(value, cap)


def bound_hub_requests() -> None:
    """Give every request huggingface_hub sends the ``hub_timeouts()`` (idempotent; each call reads
    ``ISOSCOPE_HUB_TIMEOUT`` again)."""
    bounds = hub_timeouts()
    import huggingface_hub

    if hasattr(huggingface_hub, "set_client_factory"):  # huggingface_hub >= 1: one shared httpx client
        _bound_httpx(huggingface_hub.get_session(), bounds)
    else:  # huggingface_hub < 1: requests sessions (one per thread), made by its backend factory
        _bound_requests(bounds)


def _bound_httpx(client: object, bounds: tuple[float, float, float | None]) -> None:
    hooks = client.event_hooks  # type: ignore[attr-defined]
    mine = next((h for h in hooks["request"] if getattr(h, _MARK, False)), None)
    if mine is not None:
        mine.bounds = bounds  # type: ignore[attr-defined]
        return

    def fill(request: object) -> None:
        """The request's timeouts, each filled in where it is open (None) and capped: httpx's transport reads them
        from here."""
        connect, read, cap = fill.bounds  # type: ignore[attr-defined]
        given = dict(request.extensions.get("timeout") or {})  # type: ignore[attr-defined]
        for key, default in (("connect", connect), ("read", read), ("write", read), ("pool", connect)):
            given[key] = _bounded(given.get(key), default, cap)
        request.extensions = {**request.extensions, "timeout": given}  # type: ignore[attr-defined]

    fill.bounds = bounds  # type: ignore[attr-defined]
    setattr(fill, _MARK, True)
    hooks["request"].append(fill)


def _bound_requests(bounds: tuple[float, float, float | None]) -> None:
    from huggingface_hub import configure_http_backend
    from huggingface_hub.utils import _http

    default = getattr(_http, "_default_backend_factory", None)
    if default is None:  # a huggingface_hub this module does not know: its requests keep their own timeouts
        log.info("cannot set timeouts on huggingface_hub's requests")
        return
    connect, read, cap = bounds

    def factory():
        session = default()
        for adapter in session.adapters.values():

            def send(request, *args, _send=adapter.send, **kwargs):
                given = kwargs.get("timeout")
                if given is None or isinstance(given, int | float | tuple):  # else urllib3's Timeout: kept
                    c, r = given if isinstance(given, tuple) else (given, given)
                    kwargs["timeout"] = (_bounded(c, connect, cap), _bounded(r, read, cap))
                return _send(request, *args, **kwargs)

            adapter.send = send
        return session

    configure_http_backend(backend_factory=factory)


def _timeout_in(exc: BaseException) -> BaseException | None:
    """The timeout behind ``exc`` (itself, or its cause or context: huggingface_hub re-raises a timeout as "cannot
    find the files in the cache", transformers that as an OSError), or None."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if {c.__name__ for c in type(cur).__mro__} & _TIMEOUTS:
            return cur
        cur = cur.__cause__ or cur.__context__
    return None


def hub_timeout_message(exc: BaseException) -> str | None:
    """One line for a request to the Hub that timed out (``no answer from HOST within 30 s to GET /api/...``), or
    None when ``exc`` is not a timeout."""
    timeout = _timeout_in(exc)
    if timeout is None:
        return None
    connect, read, _cap = hub_timeouts()
    try:
        request = getattr(timeout, "request", None)  # httpx raises RuntimeError when the request is unknown
    except RuntimeError:
        request = None
    parts = urlsplit(str(getattr(request, "url", "") or ""))
    where = parts.netloc or "the Hugging Face Hub"
    asked = f" to {getattr(request, 'method', 'GET')} {parts.path[:120]}" if parts.path else ""
    waited = (getattr(request, "extensions", None) or {}).get("timeout") or {}  # what it waited for (httpx)
    if "connect" in type(timeout).__name__.lower():
        return f"could not connect to {where} within {waited.get('connect') or connect:g} s"
    return f"no answer from {where} within {waited.get('read') or read:g} s{asked}"
