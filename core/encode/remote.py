"""An encoder whose forward pass is an HTTP call: texts -> vectors from an OpenAI-compatible endpoint.

vectors = embed_endpoint(endpoint_for("openai:text-embedding-3-small"), texts, progress, EndpointCache())

- Batches of at most ``endpoint.batch_size`` texts and ``MAX_REQUEST_CHARS`` characters; a batch the server
  finds too large (413) is split in two and sent again.
- 429 and 5xx answers and dropped connections are retried with exponential backoff (the server's
  ``Retry-After`` when it gives one), ``retries`` times. Each request has ``timeout`` seconds to connect and per
  read, and ``deadline`` seconds in all, answer included (a server that drips its answer a byte at a time is cut
  off): ``ISOSCOPE_ENDPOINT_TIMEOUT`` (60 s) and ``ISOSCOPE_ENDPOINT_DEADLINE`` (``DEADLINE_READS`` reads, 5
  minutes; ``isoscope.encode.endpoints.endpoint_timeouts``). A missed timeout or deadline is not a transient
  fault: it is retried ``MISSED_RETRIES`` time at most, then one line says what was waited for.
- An answer is bounded by what the batch can need before it is parsed: at most ``answer_limits(n)`` bytes and
  JSON values for n texts of at most ``MAX_DIMS`` dimensions, so a small answer cannot parse into gigabytes.
- Every finished batch is written to the cache at once, keyed by (base URL, model, dimensions, SHA-256 of the
  text): a second run sends nothing, an interrupted run resumes where it stopped, and a text shared by two
  corpora is sent once. The cache is one SQLite file under ``$ISOSCOPE_CACHE``; every row carries the SHA-256
  of its vector and is checked when read (a damaged row is dropped and fetched again).
- The key is read from the environment variable the endpoint names and goes into the Authorization header of
  each request, nowhere else: not into the cache, a log line, an error message or a result.
- Refused in classroom mode unless the teacher allowed endpoints (``check_endpoints_allowed``).

Errors the user can fix (a refused connection, a refused key, a wrong URL, an answer that is not an embeddings
response, vectors of changing dimension, a server that keeps failing) are ``InputError`` with one line.
"""

from __future__ import annotations

import base64
import errno
import hashlib
import http.client
import json
import logging
import socket
import sqlite3
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np

from isoscope.cache import default_cache_dir, warn_once
from isoscope.data.jsonfile import parse_json
from isoscope.encode.endpoints import (
    DEADLINE_READS,
    DEFAULT_BASE_URL,
    ENDPOINT_TIMEOUT_S,
    ENV_ENDPOINT_DEADLINE,
    ENV_ENDPOINT_TIMEOUT,
    MAX_REQUEST_CHARS,
    Endpoint,
    check_endpoints_allowed,
    endpoint_timeouts,
)
from isoscope.errors import InputError

log = logging.getLogger(__name__)

ProgressFn = Callable[[int, int], None]
RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
MAX_RESPONSE = 512 * 2**20  # bytes of one answer (128 vectors of 3,072 floats are about 8 MB of JSON)
MAX_DIMS = 16_384  # dimensions of a vector in an answer at most (the largest embedding models have 4,096)
BYTES_PER_VALUE = 64  # JSON text of one number at most (17 digits, sign, exponent, pretty-printed indentation)
MISSED_RETRIES = 1  # tries after a missed timeout or deadline, at most (a stuck server stays stuck)
MAX_ERROR_BODY = 64 * 2**10
MAX_DELAY = 60.0  # seconds between two tries at most (also caps Retry-After)
USER_AGENT = "isoscope (embeddings client)"


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


# ---------------------------------------------------------------- cache


def row_checksum(space: str, key: str, dims: int, data: bytes) -> bytes:
    """SHA-256 of a cache row's key (endpoint fingerprint, text digest, dimensions) and its vector's bytes."""
    return hashlib.sha256(f"{space}\x1f{key}\x1f{int(dims)}\x1f".encode() + bytes(data)).digest()


class EndpointCache:
    """Vectors of single texts from endpoints, in one SQLite file (``$ISOSCOPE_CACHE/endpoints.sqlite``).

    Rows: (endpoint fingerprint, SHA-256 of the text, dimensions, float32 bytes, checksum). The checksum names the
    row's key (``row_checksum``: fingerprint, text digest and dimensions with the bytes), so the data of one row
    moved into another row, checksum and all, is dropped and fetched again, never served for the other text.
    A file that cannot be opened or written is skipped with one warning: the vectors are fetched anyway.
    """

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_cache_dir() / "endpoints.sqlite"

    def _connect(self) -> sqlite3.Connection:
        """The file, never through a link: a link in its place is an error (the cache is skipped), so the cache
        never writes its table into another database."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.path.is_symlink():
            raise OSError(errno.ELOOP, "a symbolic link, not the cache file", str(self.path))
        con = sqlite3.connect(self.path, timeout=30)
        con.execute(
            "CREATE TABLE IF NOT EXISTS vectors (space TEXT NOT NULL, text TEXT NOT NULL, dims INTEGER NOT NULL, "
            "data BLOB NOT NULL, checksum BLOB NOT NULL, PRIMARY KEY (space, text))"
        )
        return con

    def _unusable(self, exc: BaseException) -> None:
        warn_once(self.path, "unusable", "cannot use the endpoint cache %s (%s); fetching without it", self.path, exc)

    def get_many(self, space: str, keys: Sequence[str]) -> dict[str, np.ndarray]:
        """key -> (d,) float32 for the keys held; damaged rows are deleted (and fetched again by the caller)."""
        found: dict[str, np.ndarray] = {}
        bad: list[str] = []
        try:
            con = self._connect()
            try:
                for i in range(0, len(keys), 500):
                    part = list(keys[i : i + 500])
                    marks = ",".join("?" * len(part))
                    rows = con.execute(
                        f"SELECT text, dims, data, checksum FROM vectors WHERE space = ? AND text IN ({marks})",
                        [space, *part],
                    )
                    for key, dims, data, checksum in rows:
                        vec = np.frombuffer(data, "<f4") if len(data) == 4 * dims else None
                        if (
                            vec is None
                            or row_checksum(space, key, dims, data) != checksum
                            or not np.isfinite(vec).all()
                        ):
                            bad.append(key)
                        else:
                            found[key] = vec.astype(np.float32)
                if bad:
                    log.warning("dropping %d damaged row(s) of the endpoint cache %s", len(bad), self.path)
                    con.executemany("DELETE FROM vectors WHERE space = ? AND text = ?", [(space, k) for k in bad])
                    con.commit()
            finally:
                con.close()
        except (sqlite3.Error, OSError) as exc:
            self._unusable(exc)
            return {}
        return found

    def put_many(self, space: str, items: Mapping[str, np.ndarray]) -> None:
        rows = []
        for key, vec in items.items():
            data = np.ascontiguousarray(vec, "<f4").tobytes()
            rows.append((space, key, len(vec), data, row_checksum(space, key, len(vec), data)))
        try:
            con = self._connect()
            try:
                with con:
                    con.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?, ?)", rows)
            finally:
                con.close()
        except (sqlite3.Error, OSError) as exc:
            self._unusable(exc)


# ---------------------------------------------------------------- one request


class _Retry(Exception):
    """A failure worth another try: a status in RETRY_STATUS, a timeout, a dropped connection."""

    def __init__(self, what: str, delay: float | None = None) -> None:
        super().__init__(what)
        self.what, self.delay = what, delay


class _Missed(Exception):
    """A request that missed a timeout (no connection, no byte of the answer) or its deadline: ``what`` was
    waited for, and ``setting`` names the variable that sets the wait."""

    def __init__(self, what: str, setting: str) -> None:
        super().__init__(what)
        self.what, self.setting = what, setting


class _TooLarge(Exception):
    """413: the batch is larger than the server takes."""


def masked(text: object, secret: str | None) -> str:
    """``text`` from a response (a reason phrase, a message, an exception) with the key replaced by ``***``: the
    one way any string a server sent reaches a log line or a message."""
    text = str(text)
    return text.replace(secret, "***") if secret else text


class _SameOrigin(urllib.request.HTTPRedirectHandler):
    """Follows a redirect only within the request's origin (scheme, host, port): the Authorization header must
    never reach another address, so a redirect elsewhere is refused with one line."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        if _origin(newurl) != _origin(req.full_url):
            there = urlsplit(newurl)
            raise InputError(
                f"{_origin(req.full_url)[1]}: the server redirected the request to another address "
                f"({there.scheme}://{there.netloc}); the key is never sent elsewhere: if you trust that server, give "
                "its address as --base-url"
            )
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def _origin(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.scheme.lower(), parts.netloc.lower().rsplit("@", 1)[-1]


def _server_message(body: bytes, secret: str | None) -> str:
    """The server's own error message, one line, at most 200 characters, the key masked."""
    text = body.decode("utf-8", "replace")
    try:
        data = parse_json(text, what="the answer", expect=None)  # isoscope.data.jsonfile: depth first
        if isinstance(data, dict):
            err = data.get("error", data.get("detail", data.get("message", data)))
            if isinstance(err, dict):
                err = err.get("message", err)
            text = err if isinstance(err, str) else json.dumps(err)
    except ValueError:
        pass
    text = " ".join(masked(text, secret).split())
    return text[:200] or "no message"


def _retry_after(headers) -> float | None:
    value = headers.get("Retry-After") if headers is not None else None
    try:
        return min(max(float(value), 0.0), MAX_DELAY) if value is not None else None
    except ValueError:
        return None


def answer_limits(n: int) -> tuple[int, int]:
    """(bytes, JSON values) an answer for ``n`` texts may hold: ``MAX_DIMS`` numbers per text, a few fields per
    item, and the list around them."""
    values = n * (MAX_DIMS + 16) + 1024
    return min(MAX_RESPONSE, values * BYTES_PER_VALUE + 2**20), values


class _Watch:
    """A request's total deadline: the sockets the request opens (``_Watched`` connections register them) are
    shut down when it passes, which ends any read blocked on them; ``expired`` says that it happened."""

    local = threading.local()

    def __init__(self, seconds: float) -> None:
        self.socks: list[socket.socket] = []
        self.expired = False
        self.lock = threading.Lock()
        self.timer = threading.Timer(seconds, self._expire)
        self.timer.daemon = True

    def add(self, sock: socket.socket) -> None:
        with self.lock:
            self.socks.append(sock)
            if self.expired:
                _shut(sock)

    def _expire(self) -> None:
        with self.lock:
            self.expired = True
            for sock in self.socks:
                _shut(sock)

    def __enter__(self) -> _Watch:
        _Watch.local.watch = self
        self.timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.timer.cancel()
        _Watch.local.watch = None


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def _watched(base: type[http.client.HTTPConnection]) -> type[http.client.HTTPConnection]:
    class Watched(base):  # type: ignore[valid-type, misc]
        def connect(self) -> None:
            super().connect()
            watch = getattr(_Watch.local, "watch", None)
            if watch is not None and self.sock is not None:
                watch.add(self.sock)

    return Watched


_HTTP, _HTTPS = _watched(http.client.HTTPConnection), _watched(http.client.HTTPSConnection)


class _WatchedHTTP(urllib.request.HTTPHandler):
    def http_open(self, req):
        return self.do_open(_HTTP, req)


class _WatchedHTTPS(urllib.request.HTTPSHandler):
    def https_open(self, req):
        return self.do_open(_HTTPS, req, context=self._context)


_OPENER = urllib.request.build_opener(_SameOrigin, _WatchedHTTP, _WatchedHTTPS)


def _post(
    endpoint: Endpoint,
    texts: Sequence[str],
    key: str | None,
    timeout: float,
    deadline: float | None = None,
) -> bytes:
    """One POST within ``deadline`` seconds (default ``DEADLINE_READS * timeout``); the answer's bytes (at most
    ``answer_limits``). Raises _Retry, _Missed, _TooLarge or InputError."""
    deadline = DEADLINE_READS * timeout if deadline is None else deadline
    watch = _Watch(deadline)
    late = _Missed(f"no complete answer within {deadline:g} s (the request's deadline)", ENV_ENDPOINT_DEADLINE)
    try:
        with watch:
            data = _send(endpoint, texts, key, timeout, answer_limits(len(texts))[0])
    except (_Retry, _Missed, _TooLarge, InputError):
        if watch.expired:
            raise late from None
        raise
    if watch.expired:  # an answer without a length ends where the connection was cut
        raise late
    return data


def _timed_out(timeout: float) -> _Missed:
    """A timeout of the request under way: before its connection was made, or while waiting for its answer."""
    watch = getattr(_Watch.local, "watch", None)
    if watch is not None and not watch.socks:
        return _Missed(f"no connection within {timeout:g} s", ENV_ENDPOINT_TIMEOUT)
    return _Missed(f"nothing of the answer for {timeout:g} s", ENV_ENDPOINT_TIMEOUT)


def _send(endpoint: Endpoint, texts: Sequence[str], key: str | None, timeout: float, cap: int) -> bytes:
    """The POST itself; the answer's bytes (at most ``cap``). Raises _Retry, _TooLarge or InputError."""
    body: dict[str, object] = {"model": endpoint.model, "input": list(texts), "encoding_format": "float"}
    if endpoint.dimensions is not None:
        body["dimensions"] = endpoint.dimensions
    headers = {"Content-Type": "application/json", "Accept": "application/json", "User-Agent": USER_AGENT}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    request = urllib.request.Request(endpoint.url, json.dumps(body).encode(), headers, method="POST")
    name = endpoint.name
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            data = response.read(cap + 1)
    except urllib.error.HTTPError as exc:
        status, message = exc.code, _server_message(exc.read(MAX_ERROR_BODY), key)
        reason = " ".join(masked(exc.reason, key).split())[:200]
        exc.close()
        if status in RETRY_STATUS or status >= 500:
            raise _Retry(f"{status} {reason}: {message}", _retry_after(exc.headers)) from None
        if status == 413:
            raise _TooLarge(message) from None
        if status in (401, 403):
            where = f"${endpoint.api_key_env}" if key else f"no key: ${endpoint.api_key_env} is not set"
            raise InputError(
                f"{name}: the server refused the request ({status} {reason}: {message}); check the key ({where})"
            ) from None
        if status == 404:
            raise InputError(
                f"{name}: {endpoint.url} answered 404 ({message}); check --base-url (it usually ends in /v1) and the model"
            ) from None
        raise InputError(f"{name}: the server refused the request ({status} {reason}: {message})") from None
    except urllib.error.URLError as exc:
        reason = exc.reason
        if isinstance(reason, TimeoutError | socket.timeout):
            raise _timed_out(timeout) from None
        if isinstance(reason, ConnectionResetError):
            raise _Retry(f"{type(reason).__name__}") from None
        text = masked(getattr(reason, "strerror", None) or reason, key)
        raise InputError(
            f"{name}: cannot connect to {endpoint.base_url} ({text}); is the server running, and is --base-url right?"
        ) from None
    except TimeoutError:  # socket.timeout too
        raise _timed_out(timeout) from None
    except (ConnectionResetError, http.client.RemoteDisconnected) as exc:
        raise _Retry(type(exc).__name__) from None
    except http.client.HTTPException as exc:
        raise InputError(f"{name}: {endpoint.base_url} does not speak HTTP properly ({type(exc).__name__})") from None
    except OSError as exc:  # a socket shut at the deadline, a connection reset mid-answer
        raise _Retry(type(exc).__name__) from None
    if len(data) > cap:
        raise InputError(
            f"{name}: the answer is larger than {cap / 2**20:,.1f} MiB, more than {len(texts)} vectors can need; "
            "lower the batch size"
        )
    return data


def _not_embeddings(endpoint: Endpoint, what: str) -> InputError:
    return InputError(
        f"{endpoint.name}: the answer from {endpoint.url} is not an embeddings response ({what}); "
        "is --base-url an OpenAI-compatible /v1 address?"
    )


def parse_embeddings(data: bytes, n: int, endpoint: Endpoint) -> np.ndarray:
    """The (n, d) float32 vectors of an answer ``{"data": [{"index": i, "embedding": [...]}, ...]}``.

    Before parsing, the JSON values the answer can hold (its commas, brackets and braces bound them) are
    checked against ``answer_limits(n)``; every vector must have at most ``MAX_DIMS`` values.
    """
    values = data.count(b",") + data.count(b"[") + data.count(b"{")
    if values > answer_limits(n)[1]:
        raise _not_embeddings(endpoint, f"more values than {n} vectors of at most {MAX_DIMS:,} dimensions")
    try:
        answer = parse_json(data, what="the answer", expect=None, max_depth=8)  # isoscope.data.jsonfile
    except ValueError:  # InputError: nested too deep, not UTF-8, not JSON
        raise _not_embeddings(endpoint, "not JSON") from None
    items = answer.get("data") if isinstance(answer, dict) else None
    if not isinstance(items, list):
        raise _not_embeddings(endpoint, "no 'data' list")
    if len(items) != n:
        raise _not_embeddings(endpoint, f"{len(items)} vectors for {n} texts")
    rows: list[np.ndarray | None] = [None] * n
    for pos, item in enumerate(items):
        if not isinstance(item, dict) or "embedding" not in item:
            raise _not_embeddings(endpoint, "an item without 'embedding'")
        index = item.get("index", pos)
        if not isinstance(index, int) or not 0 <= index < n or rows[index] is not None:
            what = f"a bad or repeated index {index}" if isinstance(index, int) else "an index that is not a number"
            raise _not_embeddings(endpoint, what)  # never the server's text: it may echo the key
        emb = item["embedding"]
        try:
            if isinstance(emb, str):  # encoding_format=base64, which some servers answer anyway
                vec = np.frombuffer(base64.b64decode(emb, validate=True), "<f4")
            elif isinstance(emb, list) and all(isinstance(v, int | float) and not isinstance(v, bool) for v in emb):
                vec = np.asarray(emb, np.float64)
            else:
                raise ValueError
        except ValueError:
            raise _not_embeddings(endpoint, "an embedding that is not a list of numbers") from None
        if len(vec) > MAX_DIMS:
            raise _not_embeddings(endpoint, f"a vector of {len(vec):,} values, more than {MAX_DIMS:,}")
        rows[index] = vec
    dims = {len(v) for v in rows if v is not None}
    if len(dims) != 1 or 0 in dims:
        raise InputError(
            f"{endpoint.name}: the server returned vectors of different lengths ({sorted(dims)[:4]}) in one answer"
        )
    with np.errstate(over="ignore"):
        out = np.stack(rows).astype(np.float32)  # type: ignore[arg-type]  # (n, d)
    if not np.isfinite(out).all():
        raise InputError(f"{endpoint.name}: the server returned NaN or infinite values")
    return out


def _batches(texts: Sequence[str], size: int, max_chars: int) -> Iterator[list[str]]:
    batch: list[str] = []
    chars = 0
    for t in texts:
        if batch and (len(batch) >= size or chars + len(t) > max_chars):
            yield batch
            batch, chars = [], 0
        batch.append(t)
        chars += len(t)
    if batch:
        yield batch


def fetch_batch(
    endpoint: Endpoint,
    texts: Sequence[str],
    key: str | None,
    *,
    timeout: float = ENDPOINT_TIMEOUT_S,
    retries: int = 6,
    sleep: Callable[[float], None] = time.sleep,
    deadline: float | None = None,
) -> np.ndarray:
    """(len(texts), d) from the endpoint: retried on 429/5xx with backoff, split in two on 413; a missed timeout or
    deadline is retried ``MISSED_RETRIES`` time at most (never more than ``retries``)."""
    missed = 0
    for attempt in range(retries + 1):
        try:
            return parse_embeddings(_post(endpoint, texts, key, timeout, deadline), len(texts), endpoint)
        except _Missed as exc:
            missed += 1
            if missed > MISSED_RETRIES or attempt == retries:
                raise _missed_error(endpoint, exc, n=len(texts), tries=missed) from None
            log.info("%s: %s (%d texts); trying once more", endpoint.name, exc.what, len(texts))
        except _TooLarge as exc:
            if len(texts) == 1:
                raise InputError(
                    f"{endpoint.name}: the server finds one text too large ({exc}); shorten the texts"
                ) from None
            half = len(texts) // 2
            a = fetch_batch(
                endpoint, texts[:half], key, timeout=timeout, retries=retries, sleep=sleep, deadline=deadline
            )
            b = fetch_batch(
                endpoint, texts[half:], key, timeout=timeout, retries=retries, sleep=sleep, deadline=deadline
            )
            return np.concatenate([a, b])
        except _Retry as exc:
            if attempt == retries:
                raise InputError(
                    f"{endpoint.name}: the server still failed after {retries + 1} tries ({exc.what}); try again later "
                    "(the batches already fetched are cached)"
                ) from None
            delay = exc.delay if exc.delay is not None else min(MAX_DELAY, 0.5 * 2**attempt)
            log.info("%s: %s; retrying in %.1f s", endpoint.name, exc.what, delay)
            sleep(delay)
    raise AssertionError("unreachable")


def _missed_error(endpoint: Endpoint, exc: _Missed, *, n: int, tries: int) -> InputError:
    """One line: what the request waited for, how often, and what to change."""
    times = "once" if tries == 1 else f"in each of {tries} tries"
    return InputError(
        f"{endpoint.name}: {exc.what} ({times}), waiting for POST {urlsplit(endpoint.url).path} to embed {n} "
        f"text(s); the server is stuck or too slow: try later, a smaller batch, or a longer {exc.setting}"
    )


def embed_endpoint(
    endpoint: Endpoint,
    texts: Sequence[str],
    *,
    progress: ProgressFn | None = None,
    cache: EndpointCache | None = None,
    timeout: float | None = None,
    retries: int = 6,
    sleep: Callable[[float], None] = time.sleep,
    environ: Mapping[str, str] | None = None,
    deadline: float | None = None,
) -> np.ndarray:
    """The (n, d) float32 vectors of ``texts`` from ``endpoint`` (see the module docstring).

    ``progress(done, total)`` counts distinct texts (cached ones are done at once); ``timeout``: seconds to
    connect and per read, ``deadline``: seconds per request in all (defaults: ``endpoint_timeouts(environ)``,
    ``ISOSCOPE_ENDPOINT_TIMEOUT`` or 60 s, ``ISOSCOPE_ENDPOINT_DEADLINE`` or ``DEADLINE_READS * timeout``).
    """
    check_endpoints_allowed(environ)
    timeout, deadline = endpoint_timeouts(timeout, deadline, environ)
    key = endpoint.api_key(environ)
    if key is None and endpoint.base_url == DEFAULT_BASE_URL:
        raise InputError(f"set {endpoint.api_key_env} to your OpenAI API key (or name another variable: --api-key-env)")
    if any(not t.strip() for t in texts):
        raise InputError(f"{endpoint.name}: an endpoint cannot embed an empty text; drop empty rows first")
    distinct = list(dict.fromkeys(texts))
    keys = {t: text_key(t) for t in distinct}
    space = endpoint.fingerprint
    have = cache.get_many(space, list(keys.values())) if cache is not None else {}
    dims = {len(v) for v in have.values()}
    if len(dims) > 1:  # a cache written while the server changed models under the same name
        have = {}
    done = {t: have[keys[t]] for t in distinct if keys[t] in have}
    todo = [t for t in distinct if t not in done]
    total = len(distinct)
    if progress is not None:
        progress(len(done), total)
    expected = next(iter(dims)) if len(dims) == 1 else endpoint.dimensions
    for batch in _batches(todo, endpoint.batch_size, MAX_REQUEST_CHARS):
        vecs = fetch_batch(
            endpoint, batch, key, timeout=timeout, retries=retries, sleep=sleep, deadline=deadline
        )  # (b, d)
        if expected is not None and vecs.shape[1] != expected:
            raise InputError(
                f"{endpoint.name}: the server returned {vecs.shape[1]}-dimensional vectors where {expected} were "
                "expected (earlier answers, or --dimensions); is it serving another model under this name?"
            )
        expected = vecs.shape[1]
        fresh = dict(zip(batch, vecs, strict=True))
        if cache is not None:
            cache.put_many(space, {keys[t]: v for t, v in fresh.items()})
        done.update(fresh)
        if progress is not None:
            progress(len(done), total)
    if not texts:
        return np.zeros((0, expected or 0), np.float32)
    return np.stack([done[t] for t in texts]).astype(np.float32, copy=False)  # (n, d)
