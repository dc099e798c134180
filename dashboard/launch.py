"""How the dashboard is started: the streamlit command line, its settings and the environment the server reads.

``isoscope app`` (``isoscope.commands.app``) parses its options into ``ServerOptions`` and runs ``prepare`` then
``start``; the server side (``isoscope.dashboard.classroom``, ``services.data``) reads the ``ENV_*`` variables
named here. Never imports streamlit, so ``isoscope app --help`` answers at once.

- ``streamlit run`` on the installed ``dashboard/serve.py`` (``app.py`` as an ``st.App`` with the Atlas map's
  routes) with the settings of ``dashboard/config.toml`` given as command-line options (so the installed
  package works from any folder), bound to 127.0.0.1 unless ``host`` says otherwise;
- an atlas folder (``isoscope atlas --out DIR``, then ``isoscope app DIR``) is checked to be a finished atlas and
  handed to the Atlas page through ``ENV_ATLAS_DIR``, which offers it first;
- a data file (a corpus, a pairs file or a vectors file: ``isoscope.data.data_kind``) is checked before the
  server starts (under the limits the server will have, so a typo or an oversized file fails at once, not in the
  browser) and handed to the app through ``ENV_DATA_FILE`` and ``ENV_DATA_KIND``: the session's data on every
  page that can use it (a vectors file is the session's space);
- classroom mode binds every interface (unless ``host``), gives the server the SHA-256 of an access code (never
  the code), the teacher's model allowlist, lower upload and decode limits, hides Streamlit's error details,
  and puts the app behind the classroom's server layer (``dashboard/serve.py`` reads ``ENV_CLASSROOM``).

Messages name the ``isoscope app`` options, the one way a user reaches this module.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from isoscope.data.limits import ENV_VARS as LIMIT_ENV_VARS
from isoscope.encode.endpoints import ENV_ALLOW_ENDPOINTS, ENV_CLASSROOM
from isoscope.errors import InputError

CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I: read aloud or from a board
MIN_CODE_CHARS = 6  # letters or digits of an access code
# what the server process reads (dashboard/classroom/, dashboard/services/data.py)
# ENV_CLASSROOM ("1" in classroom mode) and ENV_ALLOW_ENDPOINTS ("1": students may use embeddings endpoints, which
# spend the server's API key) are defined in isoscope.encode.endpoints, whose client enforces them
ENV_CODE_HASH = "ISOSCOPE_ACCESS_CODE_SHA256"  # hex SHA-256 of the access code: the server never holds the code
ENV_MODELS = "ISOSCOPE_ALLOWED_MODELS"  # JSON list of [label, path]
ENV_DATA_FILE = "ISOSCOPE_DATA_FILE"  # the file `isoscope app DATA_FILE` opens
ENV_TEXT_COLUMN = "ISOSCOPE_TEXT_COLUMN"  # its text column (--text-column)
ENV_VECTOR_COLUMN = "ISOSCOPE_VECTOR_COLUMN"  # a vectors file's vector column (--vector-column)
ENV_DATA_KIND = "ISOSCOPE_DATA_KIND"  # what DATA_FILE holds: corpus, pairs or vectors (isoscope.data.data_kind)
ENV_ATLAS_DIR = "ISOSCOPE_ATLAS_DIR"  # a finished atlas folder (isoscope atlas --out DIR; isoscope app DIR) to open
ENV_MAX_BYTES = LIMIT_ENV_VARS["max_bytes"]  # isoscope.data's decode limits (ISOSCOPE_MAX_BYTES, ...)
ENV_MAX_ROWS = LIMIT_ENV_VARS["max_rows"]
# what the command reads
ENV_ACCESS_CODE = "ISOSCOPE_ACCESS_CODE"  # the classroom's access code when --access-code is not given
CLASSROOM_UPLOAD_MB = 20
CLASSROOM_MAX_ROWS = 20_000
DEFAULT_UPLOAD_MB = 200  # dashboard/config.toml's server.maxUploadSize
DEFAULT_PORT = 8501
LOCALHOST = "127.0.0.1"
EVERY_INTERFACE = "0.0.0.0"


@dataclass(frozen=True)
class ServerOptions:
    """What ``isoscope app`` was asked for (None: the default of the mode)."""

    port: int = DEFAULT_PORT
    host: str | None = None  # default: 127.0.0.1, or every interface in classroom mode
    classroom: bool = False
    access_code: str | None = None  # classroom: default ISOSCOPE_ACCESS_CODE, else a random code
    allow_models: tuple[str, ...] = ()  # classroom: model folders besides the embedded one
    max_upload_mb: int | None = None  # default: config.toml's 200, classroom 20
    max_rows: int | None = None  # default: ISOSCOPE_MAX_ROWS or 50,000, classroom 20,000
    data_file: str | None = None
    text_column: str | None = None
    vector_column: str | None = None  # DATA_FILE is a vectors file; this is its vector column
    allow_endpoints: bool = False  # classroom: students may use embeddings endpoints (openai:NAME)

    @property
    def bind_host(self) -> str:
        return self.host or (EVERY_INTERFACE if self.classroom else LOCALHOST)

    @property
    def upload_mb(self) -> int | None:
        """The upload limit to set, or None to keep config.toml's."""
        return self.max_upload_mb or (CLASSROOM_UPLOAD_MB if self.classroom else None)

    @property
    def rows(self) -> int | None:
        """The row limit to set, or None to keep the environment's."""
        return self.max_rows or (CLASSROOM_MAX_ROWS if self.classroom else None)


@dataclass(frozen=True)
class Launch:
    """A checked server start: the command line, the environment it adds, and the access code to print."""

    command: list[str]
    env: dict[str, str] = field(default_factory=dict)
    access_code: str | None = None
    host: str = LOCALHOST
    port: int = DEFAULT_PORT

    def url(self) -> str:
        """The address to print: localhost, this machine's address on the network, or the host given."""
        shown = "localhost" if self.host == LOCALHOST else lan_address() if self.host == EVERY_INTERFACE else self.host
        return f"http://{shown}:{self.port}"


def prepare(options: ServerOptions, environ: Mapping[str, str] | None = None) -> Launch:
    """Check the options (InputError naming the ``isoscope app`` option to fix) and build the start."""
    environ = os.environ if environ is None else environ
    classroom_env, code = classroom_environment(options, environ)
    env = {**limits_environment(options), **classroom_env}
    env.update(data_file_environment(options, {**environ, **env}))
    return Launch(streamlit_command(options), env, code, options.bind_host, options.port)


def port_taken(host: str, port: int) -> bool:
    """Whether ``port`` cannot be served on ``host``: binding fails (as Streamlit's server would, SO_REUSEADDR
    set like tornado's) or something already answers there on localhost (IPv4 or IPv6, where a browser goes)."""
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return True
    for family, address in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        try:
            with socket.socket(family, socket.SOCK_STREAM) as s:
                s.settimeout(0.5)
                if s.connect_ex((address, port)) == 0:
                    return True
        except OSError:  # no IPv6 on this machine
            continue
    return False


def check_port(host: str, port: int, tries: int = 100) -> None:
    """InputError naming the next free port when ``port`` is taken on ``host`` (``isoscope app`` exits 2 with it
    before printing an address, instead of sending the browser to whatever listens there)."""
    if not port_taken(host, port):
        return
    free = next((p for p in range(port + 1, min(port + 1 + tries, 65536)) if not port_taken(host, p)), None)
    hint = f"; the next free port is {free}: isoscope app --port {free}" if free else "; choose another with --port"
    raise InputError(f"port {port} is already in use on {host} (another program listens there){hint}")


STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGINT", "SIGHUP") if hasattr(signal, name))
STOP_GRACE_S = 3.0  # after a stop signal, the server's time to close before it is killed


def start(launch: Launch) -> int:
    """Run the server in the foreground until it exits; returns 0 when a stop signal sent to this process ended
    it (the server stopped as asked), else the server's own exit status (128 + the signal's number when a signal
    killed it, as a shell reports it: 135 for SIGBUS), which ``isoscope app`` exits with.

    The server is a child process: a stop signal sent to this one (``kill PID``: SIGTERM; Ctrl-C: SIGINT; a closed
    terminal: SIGHUP) is passed on to it, and one still running ``STOP_GRACE_S`` later is killed, so both exit
    together and the port is free. On Linux the child is also told to stop if this process dies without a word
    (SIGKILL)."""
    proc = subprocess.Popen(launch.command, env={**os.environ, **launch.env}, preexec_fn=_stop_with_parent())
    stop: dict[str, float] = {}  # the first stop signal and when it came

    def forward(signum: int, _frame: object) -> None:
        stop.setdefault("signal", signum)
        stop.setdefault("at", time.monotonic())
        if proc.poll() is None:
            proc.send_signal(signum)

    previous = {sig: signal.signal(sig, forward) for sig in STOP_SIGNALS}
    try:
        while True:
            try:
                code = proc.wait(timeout=0.2)
                break
            except subprocess.TimeoutExpired:
                if stop and time.monotonic() - stop["at"] > STOP_GRACE_S:
                    proc.kill()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if stop:
        return 0
    return 128 - code if code < 0 else code


def _stop_with_parent():
    """A ``preexec_fn`` that asks Linux to send the child SIGTERM when this process dies (``prctl``
    PR_SET_PDEATHSIG); None elsewhere."""
    if not sys.platform.startswith("linux"):
        return None

    def ask() -> None:
        import ctypes

        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM))  # 1: PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass

    return ask


def config_options() -> list[str]:
    """``--section.key value`` options from the packaged dashboard/config.toml."""
    import tomllib

    text = resources.files("isoscope.dashboard").joinpath("config.toml").read_text(encoding="utf-8")
    options: list[str] = []
    for section, values in tomllib.loads(text).items():
        for key, value in values.items():
            value = str(value).lower() if isinstance(value, bool) else str(value)
            options += [f"--{section}.{key}", value]
    return options


def streamlit_command(options: ServerOptions) -> list[str]:
    """``python -m streamlit run`` on the packaged app (serve.py: the router with the Atlas map's routes) with
    every setting."""
    app = Path(str(resources.files("isoscope.dashboard").joinpath("serve.py")))
    settings = dict(zip(config_options()[::2], config_options()[1::2], strict=True))
    settings.update({"--server.port": str(options.port), "--server.address": options.bind_host})
    if options.upload_mb:
        settings["--server.maxUploadSize"] = str(options.upload_mb)
    if options.classroom:  # Streamlit's own error box would show tracebacks, which name server files
        settings.update({"--client.showErrorDetails": "none", "--server.enableXsrfProtection": "true"})
    return [sys.executable, "-m", "streamlit", "run", str(app), *(x for kv in settings.items() for x in kv)]


def limits_environment(options: ServerOptions) -> dict[str, str]:
    """Decode limits for the server: the upload size bounds what a file may hold; rows as given."""
    env: dict[str, str] = {}
    if options.upload_mb:
        env[ENV_MAX_BYTES] = str(options.upload_mb * 2**20)
    if options.rows:
        env[ENV_MAX_ROWS] = str(options.rows)
    return env


def data_file_environment(options: ServerOptions, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The data file for the app, loaded now under the limits of ``environ`` (the server's environment)."""
    if options.data_file is None:
        given = [f"--{o}" for o in ("text-column", "vector-column") if getattr(options, o.replace("-", "_"))]
        if given:
            raise InputError(f"{' and '.join(given)} need{'s' if len(given) == 1 else ''} a DATA_FILE")
        return {}
    from isoscope.data import DecodeLimits, data_kind, load_corpus, load_pairs, load_vector_file

    path = Path(options.data_file).expanduser().resolve()
    if not path.exists():
        raise InputError(f"DATA_FILE not found: {options.data_file}")
    from isoscope.atlas.folder import finished_atlas, is_atlas_folder

    if is_atlas_folder(path):  # isoscope atlas --out DIR: the Atlas page opens it
        given = [f"--{o}" for o in ("text-column", "vector-column") if getattr(options, o.replace("-", "_"))]
        if given:
            raise InputError(f"{options.data_file} is an atlas folder: {' and '.join(given)} do not apply to it")
        return {ENV_ATLAS_DIR: str(finished_atlas(options.data_file))}
    limits = DecodeLimits.from_env(os.environ if environ is None else environ)
    kind = data_kind(path, options.vector_column, options.text_column)
    # InputError: one line that says what to fix
    if kind == "vectors":
        load_vector_file(path, options.vector_column, text_column=options.text_column, limits=limits)
    elif kind == "pairs":
        load_pairs(path, limits=limits)
    else:
        load_corpus(path, text_column=options.text_column, limits=limits)
    env = {ENV_DATA_FILE: str(path), ENV_DATA_KIND: kind}
    if options.text_column:
        env[ENV_TEXT_COLUMN] = options.text_column
    if options.vector_column:
        env[ENV_VECTOR_COLUMN] = options.vector_column
    return env


def classroom_environment(
    options: ServerOptions, environ: Mapping[str, str] | None = None
) -> tuple[dict[str, str], str | None]:
    """(environment for the server, the access code to print) in classroom mode; ({}, None) otherwise."""
    if not options.classroom:
        if options.access_code or options.allow_models or options.allow_endpoints:
            raise InputError("--access-code, --allow-model and --allow-endpoints need --classroom")
        return {}, None
    environ = os.environ if environ is None else environ
    code = options.access_code or environ.get(ENV_ACCESS_CODE) or new_access_code()
    if len("".join(ch for ch in code if ch.isalnum())) < MIN_CODE_CHARS:
        raise InputError(f"--access-code must have at least {MIN_CODE_CHARS} letters or digits")
    env = {
        ENV_CLASSROOM: "1",
        ENV_CODE_HASH: code_hash(code),
        ENV_MODELS: json.dumps(allowed_models(options.allow_models)),
    }
    if options.allow_endpoints:
        env[ENV_ALLOW_ENDPOINTS] = "1"
    return env, code


def code_hash(code: str) -> str:
    """What the server keeps of an access code (spaces, dashes and case do not matter)."""
    canonical = "".join(ch for ch in code.upper() if ch.isalnum())
    return hashlib.sha256(canonical.encode()).hexdigest()


def new_access_code() -> str:
    """Eight characters in two groups, e.g. ``K7QM-3XHD`` (40 bits; guesses are throttled per client address and
    for the whole server)."""
    raw = "".join(secrets.choice(CODE_ALPHABET) for _ in range(8))
    return f"{raw[:4]}-{raw[4:]}"


def allowed_models(paths: tuple[str, ...] | list[str]) -> list[list[str]]:
    """[label, absolute path] for each --allow-model folder; a folder that is not a model is an InputError."""
    out: list[list[str]] = []
    labels: set[str] = set()
    for given in paths:
        path = Path(given).expanduser().resolve()
        if not path.is_dir() or not (path / "config.json").is_file():
            raise InputError(
                f"--allow-model {given}: not a model folder (no config.json); give a save_pretrained folder"
            )
        label = path.name
        if label in labels:  # two folders of the same name: add the parent's name
            label = f"{path.parent.name}/{path.name}"
        labels.add(label)
        out.append([label, str(path)])
    return out


def lan_address() -> str:
    """This machine's address on the network (no packet is sent), for the line printed at start."""
    import socket

    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("10.255.255.255", 1))
            return s.getsockname()[0]
    except OSError:
        return "this-machine"
