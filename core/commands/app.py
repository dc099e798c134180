"""``isoscope app``: start the dashboard, optionally on a data file (``isoscope app corpus.parquet``).

Runs ``streamlit run`` on the installed ``dashboard/app.py`` with the settings of ``dashboard/config.toml``
given as command-line options (so the installed package works from any folder), bound to 127.0.0.1 unless
``--host`` says otherwise. A DATA_FILE is checked here (a bad file gives one line and exit 2) and handed to
the app through ``ISOSCOPE_DATA_FILE`` / ``ISOSCOPE_TEXT_COLUMN``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from importlib import resources
from pathlib import Path

from core.errors import InputError


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("data_file", nargs="?", default=None, metavar="DATA_FILE", help="a corpus or pairs file to open")
    p.add_argument("--text-column", default=None, help="column of DATA_FILE holding the texts (default: text)")
    p.add_argument("--port", type=int, default=8501, help="port to serve on (default: 8501)")
    p.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to bind (default: 127.0.0.1, this machine only; 0.0.0.0 serves the network)",
    )
    p.add_argument("--dry-run", action="store_true", help="print the streamlit command instead of running it")


def config_options() -> list[str]:
    """``--section.key value`` options from the packaged dashboard/config.toml."""
    import tomllib

    text = resources.files("dashboard").joinpath("config.toml").read_text(encoding="utf-8")
    options: list[str] = []
    for section, values in tomllib.loads(text).items():
        for key, value in values.items():
            value = str(value).lower() if isinstance(value, bool) else str(value)
            options += [f"--{section}.{key}", value]
    return options


def streamlit_command(args: argparse.Namespace) -> list[str]:
    app = Path(str(resources.files("dashboard").joinpath("app.py")))
    return [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(app),
        *config_options(),
        "--server.port",
        str(args.port),
        "--server.address",
        args.host,
    ]


def _check_data_file(args: argparse.Namespace) -> dict[str, str]:
    """Environment for the app: the data file (validated now, so a typo fails here, not in the browser)."""
    if args.data_file is None:
        if args.text_column:
            raise InputError("--text-column needs a DATA_FILE")
        return {}
    from core.data import load_corpus

    path = Path(args.data_file).expanduser().resolve()
    load_corpus(path, text_column=args.text_column)  # InputError: one line that says what to fix
    env = {"ISOSCOPE_DATA_FILE": str(path)}
    if args.text_column:
        env["ISOSCOPE_TEXT_COLUMN"] = args.text_column
    return env


def run(args: argparse.Namespace) -> dict:
    if not 1 <= args.port <= 65535:
        raise InputError(f"--port must be between 1 and 65535, got {args.port}")
    env = _check_data_file(args)
    command = streamlit_command(args)
    if args.dry_run:
        print(" ".join(command))
        return {"command": command, "env": env}
    print(f"Isoscope at http://{'localhost' if args.host == '127.0.0.1' else args.host}:{args.port}", file=sys.stderr)
    completed = subprocess.run(command, env={**os.environ, **env})
    return {"command": command, "returncode": completed.returncode}
