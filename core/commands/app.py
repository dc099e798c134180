"""``isoscope app``: start the dashboard, optionally on a data file (``isoscope app corpus.parquet``).

Runs ``streamlit run`` on the installed ``dashboard/app.py`` with the settings of ``dashboard/config.toml``
given as command-line options (so the installed package works from any folder), bound to 127.0.0.1 unless
``--host`` says otherwise. A DATA_FILE is checked here (a bad file gives one line and exit 2) and handed to
the app through ``ISOSCOPE_DATA_FILE`` / ``ISOSCOPE_TEXT_COLUMN``.

``--classroom`` serves a class on the network: it binds all interfaces (unless ``--host``), asks every
session for an access code (given with ``--access-code`` or generated and printed), offers only the
embedded model and the ``--allow-model`` folders, hides tracebacks and server paths, lowers the upload and
decode limits, and serves ``dashboard/serve.py`` (the app behind headers that forbid framing).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import secrets
import subprocess
import sys
from importlib import resources
from pathlib import Path

from isoscope.errors import InputError

CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I: read aloud or from a board
# what the server process reads (dashboard/classroom.py)
ENV_CLASSROOM = "ISOSCOPE_CLASSROOM"  # "1" in classroom mode
ENV_CODE_HASH = "ISOSCOPE_ACCESS_CODE_SHA256"  # hex SHA-256 of the access code: the server never holds the code
ENV_MODELS = "ISOSCOPE_ALLOWED_MODELS"  # JSON list of [label, path]
CLASSROOM_UPLOAD_MB = 20
CLASSROOM_MAX_ROWS = 20_000
DEFAULT_UPLOAD_MB = 200  # dashboard/config.toml's server.maxUploadSize


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("data_file", nargs="?", default=None, metavar="DATA_FILE", help="a corpus or pairs file to open")
    p.add_argument("--text-column", default=None, help="column of DATA_FILE holding the texts (default: text)")
    p.add_argument("--port", type=int, default=8501, help="port to serve on (default: 8501)")
    p.add_argument(
        "--host",
        default=None,
        help="address to bind (default: 127.0.0.1, this machine only; with --classroom 0.0.0.0, every interface)",
    )
    p.add_argument(
        "--classroom",
        action="store_true",
        help="serve a class on the network: an access code, no server paths, lower limits, no framing",
    )
    p.add_argument(
        "--access-code",
        default=None,
        help="classroom: the code students type (default: a random one, printed at start; or ISOSCOPE_ACCESS_CODE)",
    )
    p.add_argument(
        "--allow-model",
        action="append",
        default=[],
        metavar="PATH",
        help="classroom: a model folder students may choose besides the embedded one (repeat for more)",
    )
    p.add_argument(
        "--max-upload-mb",
        type=int,
        default=None,
        help=f"largest upload, in MB (default: {DEFAULT_UPLOAD_MB}; classroom {CLASSROOM_UPLOAD_MB})",
    )
    p.add_argument(
        "--max-rows",
        type=int,
        default=None,
        help=f"rows a file may hold (default: ISOSCOPE_MAX_ROWS or 50,000; classroom {CLASSROOM_MAX_ROWS:,})",
    )
    p.add_argument("--dry-run", action="store_true", help="print the streamlit command instead of running it")


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


def _host(args: argparse.Namespace) -> str:
    return args.host or ("0.0.0.0" if args.classroom else "127.0.0.1")


def streamlit_command(args: argparse.Namespace) -> list[str]:
    script = "serve.py" if args.classroom else "app.py"
    app = Path(str(resources.files("isoscope.dashboard").joinpath(script)))
    options = dict(zip(config_options()[::2], config_options()[1::2], strict=True))
    options.update({"--server.port": str(args.port), "--server.address": _host(args)})
    upload_mb = args.max_upload_mb or (CLASSROOM_UPLOAD_MB if args.classroom else None)
    if upload_mb:
        options["--server.maxUploadSize"] = str(upload_mb)
    if args.classroom:  # Streamlit's own error box would show tracebacks, which name server files
        options.update({"--client.showErrorDetails": "none", "--server.enableXsrfProtection": "true"})
    return [sys.executable, "-m", "streamlit", "run", str(app), *(x for kv in options.items() for x in kv)]


def _check_data_file(args: argparse.Namespace, limits_env: dict[str, str] | None = None) -> dict[str, str]:
    """Environment for the app: the data file (validated now, under the limits the server will have, so a
    typo or an oversized file fails here, not in the browser)."""
    if args.data_file is None:
        if args.text_column:
            raise InputError("--text-column needs a DATA_FILE")
        return {}
    from isoscope.data import DecodeLimits, load_corpus

    path = Path(args.data_file).expanduser().resolve()
    limits = DecodeLimits.from_env({**os.environ, **(limits_env or {})})
    load_corpus(path, text_column=args.text_column, limits=limits)  # InputError: one line that says what to fix
    env = {"ISOSCOPE_DATA_FILE": str(path)}
    if args.text_column:
        env["ISOSCOPE_TEXT_COLUMN"] = args.text_column
    return env


def code_hash(code: str) -> str:
    """What the server keeps of an access code (spaces, dashes and case do not matter)."""
    canonical = "".join(ch for ch in code.upper() if ch.isalnum())
    return hashlib.sha256(canonical.encode()).hexdigest()


def new_access_code() -> str:
    """Eight characters in two groups, e.g. ``K7QM-3XHD`` (40 bits; guesses are throttled per client address and for the server)."""
    raw = "".join(secrets.choice(CODE_ALPHABET) for _ in range(8))
    return f"{raw[:4]}-{raw[4:]}"


def _allowed_models(paths: list[str]) -> list[list[str]]:
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


def _limits_env(args: argparse.Namespace) -> dict[str, str]:
    """Decode limits for the server: the upload size bounds what a file may hold; rows as given."""
    env: dict[str, str] = {}
    upload_mb = args.max_upload_mb or (CLASSROOM_UPLOAD_MB if args.classroom else None)
    if upload_mb:
        env["ISOSCOPE_MAX_BYTES"] = str(upload_mb * 2**20)
    rows = args.max_rows or (CLASSROOM_MAX_ROWS if args.classroom else None)
    if rows:
        env["ISOSCOPE_MAX_ROWS"] = str(rows)
    return env


def _classroom_env(args: argparse.Namespace) -> tuple[dict[str, str], str | None]:
    """(environment for the server, the access code to print) in classroom mode; ({}, None) otherwise."""
    if not args.classroom:
        if args.access_code or args.allow_model:
            raise InputError("--access-code and --allow-model need --classroom")
        return {}, None
    code = args.access_code or os.environ.get("ISOSCOPE_ACCESS_CODE") or new_access_code()
    if len("".join(ch for ch in code if ch.isalnum())) < 6:
        raise InputError("--access-code must have at least 6 letters or digits")
    env = {
        ENV_CLASSROOM: "1",
        ENV_CODE_HASH: code_hash(code),
        ENV_MODELS: json.dumps(_allowed_models(args.allow_model)),
    }
    return env, code


def _lan_address() -> str:
    """This machine's address on the network (no packet is sent), for the line printed at start."""
    import socket

    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("10.255.255.255", 1))
            return s.getsockname()[0]
    except OSError:
        return "this-machine"


def run(args: argparse.Namespace) -> dict:
    if not 1 <= args.port <= 65535:
        raise InputError(f"--port must be between 1 and 65535, got {args.port}")
    for option in ("max_upload_mb", "max_rows"):
        if getattr(args, option) is not None and getattr(args, option) < 1:
            raise InputError(f"--{option.replace('_', '-')} must be at least 1")
    classroom_env, code = _classroom_env(args)
    env = {**_limits_env(args), **classroom_env}
    env.update(_check_data_file(args, env))
    command = streamlit_command(args)
    host = _host(args)
    if args.dry_run:
        print(" ".join(command))
        if code is not None:
            print(f"access code: {code}")
        return {"command": command, "env": env, "access_code": code}
    shown = "localhost" if host == "127.0.0.1" else _lan_address() if host == "0.0.0.0" else host
    print(f"Isoscope at http://{shown}:{args.port}", file=sys.stderr)
    if code is not None:
        print(f"classroom mode: students open that address and type the access code {code}", file=sys.stderr)
    completed = subprocess.run(command, env={**os.environ, **env})
    return {"command": command, "returncode": completed.returncode}
