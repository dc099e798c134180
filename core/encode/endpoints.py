"""Embeddings endpoints as models, without heavy imports: the ``openai:NAME`` model names, the endpoint a name
and the command-line options describe, and the classroom rule (the client is ``isoscope.encode.remote``).

Any server that speaks OpenAI's ``POST {base_url}/embeddings`` answers (OpenAI, Azure OpenAI, Ollama, vLLM,
text-embeddings-inference, infinity, ...). The API key is read from an environment variable when a request is
sent (``OPENAI_API_KEY``, or the one ``api_key_env`` names) and is never stored in an ``Endpoint``, a cache,
a log line, a message or a result: only the variable's name is.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from isoscope.errors import InputError

ENDPOINT_PREFIX = "openai:"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_KEY_ENV = "OPENAI_API_KEY"
DEFAULT_BATCH = 128  # texts per request (OpenAI takes up to 2048)
MAX_REQUEST_CHARS = 400_000  # characters of input per request (~100k tokens; OpenAI allows 300k tokens)
ENDPOINT_TIMEOUT_S = 60.0  # seconds to connect, and without a byte of an answer
DEADLINE_READS = 5  # one request's total deadline, in read timeouts (5 minutes for the default 60 s)
ENV_ENDPOINT_TIMEOUT = "ISOSCOPE_ENDPOINT_TIMEOUT"  # seconds: ENDPOINT_TIMEOUT_S, for every endpoint request
ENV_ENDPOINT_DEADLINE = "ISOSCOPE_ENDPOINT_DEADLINE"  # seconds: a request's deadline (default: DEADLINE_READS reads)
ENV_CLASSROOM = "ISOSCOPE_CLASSROOM"  # "1" in classroom mode (set by isoscope.dashboard.launch)
ENV_ALLOW_ENDPOINTS = "ISOSCOPE_ALLOW_ENDPOINTS"  # "1": `isoscope app --classroom --allow-endpoints`
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def is_endpoint_model(model: str | None) -> bool:
    """True for ``openai:NAME``."""
    return bool(model) and str(model).strip().startswith(ENDPOINT_PREFIX)


def check_base_url(url: str) -> str:
    """The base URL without a trailing slash; InputError for a URL that is not http(s) or carries credentials."""
    url = (url or "").strip().rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InputError(
            f"--base-url must be an http:// or https:// address, e.g. {DEFAULT_BASE_URL}; got '{url[:80]}'"
        )
    if parts.username or parts.password:
        raise InputError("--base-url must not hold a user name or password; put the key in an environment variable")
    if parts.query or parts.fragment:
        raise InputError("--base-url must not have a query (?...) or fragment (#...)")
    return url


@dataclass(frozen=True)
class Endpoint:
    """An OpenAI-compatible embeddings endpoint serving one model. Holds no secret: the key is read from the
    environment variable ``api_key_env`` when a request is sent."""

    model: str  # the server's model name (NAME of openai:NAME)
    base_url: str = DEFAULT_BASE_URL
    api_key_env: str = DEFAULT_KEY_ENV
    batch_size: int = DEFAULT_BATCH
    dimensions: int | None = None  # ask for shorter vectors (OpenAI's text-embedding-3 models)

    def __post_init__(self) -> None:
        if not self.model.strip():
            raise InputError("give the endpoint's model name: openai:NAME, e.g. openai:text-embedding-3-small")
        object.__setattr__(self, "base_url", check_base_url(self.base_url))
        if not _ENV_NAME.fullmatch(self.api_key_env):
            raise InputError(f"--api-key-env must name an environment variable, e.g. {DEFAULT_KEY_ENV}")
        if self.batch_size < 1:
            raise InputError("the endpoint's batch size must be at least 1")
        if self.dimensions is not None and self.dimensions < 1:
            raise InputError("--dimensions must be at least 1")

    @property
    def name(self) -> str:
        """``openai:NAME``, with the host when it is not OpenAI's."""
        host = urlsplit(self.base_url).netloc
        return f"{ENDPOINT_PREFIX}{self.model}" + ("" if self.base_url == DEFAULT_BASE_URL else f" at {host}")

    @property
    def url(self) -> str:
        return f"{self.base_url}/embeddings"

    @property
    def fingerprint(self) -> str:
        """What the vectors depend on (never the key): base URL, model and requested dimensions."""
        import hashlib

        text = "\x1f".join(("endpoint", self.base_url, self.model, str(self.dimensions or "")))
        return "endpoint-" + hashlib.sha256(text.encode()).hexdigest()[:32]

    def api_key(self, environ: Mapping[str, str] | None = None) -> str | None:
        """The key from the environment now (None when the variable is unset or empty)."""
        key = (os.environ if environ is None else environ).get(self.api_key_env, "").strip()
        return key or None


def endpoint_for(
    model: str,
    *,
    base_url: str | None = None,
    api_key_env: str | None = None,
    batch_size: int | None = None,
    dimensions: int | None = None,
) -> Endpoint:
    """The Endpoint of a model name ``openai:NAME`` (InputError for any other name)."""
    if not is_endpoint_model(model):
        raise InputError(f"'{model}' is not an endpoint model; give openai:NAME")
    return Endpoint(
        model.strip()[len(ENDPOINT_PREFIX) :].strip(),
        base_url or DEFAULT_BASE_URL,
        api_key_env or DEFAULT_KEY_ENV,
        batch_size or DEFAULT_BATCH,
        dimensions,
    )


def endpoint_timeouts(
    timeout: float | None = None, deadline: float | None = None, environ: Mapping[str, str] | None = None
) -> tuple[float, float]:
    """(read timeout, request deadline) in seconds: ``timeout`` and ``deadline`` where given, else
    ``ISOSCOPE_ENDPOINT_TIMEOUT`` (default ``ENDPOINT_TIMEOUT_S``) and ``ISOSCOPE_ENDPOINT_DEADLINE`` (default
    ``DEADLINE_READS`` read timeouts). InputError for a value that is not a number of seconds above 0."""
    env = os.environ if environ is None else environ
    if timeout is None:
        timeout = _seconds(env, ENV_ENDPOINT_TIMEOUT) or ENDPOINT_TIMEOUT_S
    if deadline is None:
        deadline = _seconds(env, ENV_ENDPOINT_DEADLINE) or DEADLINE_READS * timeout
    return float(timeout), float(deadline)


def _seconds(env: Mapping[str, str], name: str) -> float | None:
    text = env.get(name, "").strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < 86_400:  # NaN too
        raise InputError(f"{name} must be a number of seconds above 0 (and below a day); got '{text[:40]}'")
    return value


def check_endpoints_allowed(environ: Mapping[str, str] | None = None) -> None:
    """InputError in classroom mode unless the teacher allowed endpoints (they spend the server's key)."""
    env = os.environ if environ is None else environ
    if env.get(ENV_CLASSROOM) == "1" and env.get(ENV_ALLOW_ENDPOINTS) != "1":
        raise InputError(
            "embeddings endpoints (openai:NAME) are off in this classroom; the teacher can allow them with "
            "isoscope app --classroom --allow-endpoints"
        )
