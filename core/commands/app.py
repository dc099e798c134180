"""``isoscope app``: start the dashboard, optionally on a data file (``isoscope app corpus.parquet``).

Parses the options into ``isoscope.dashboard.launch.ServerOptions``; ``launch.prepare`` checks them (a bad data
file, model folder or access code gives one line and exit 2) and builds the ``streamlit run`` command and the
environment the server reads; ``--dry-run`` prints the command, otherwise ``launch.start`` runs it. See
``isoscope.dashboard.launch`` for what ``--classroom`` changes.
"""

from __future__ import annotations

import argparse
import sys

from isoscope.dashboard.launch import (
    CLASSROOM_MAX_ROWS,
    CLASSROOM_UPLOAD_MB,
    DEFAULT_PORT,
    DEFAULT_UPLOAD_MB,
    ServerOptions,
)
from isoscope.errors import InputError

# isoscope --help's line for this command, read from the file (isoscope.cli imports only the chosen command)
COMMAND = {"order": 160, "help": "start the dashboard (optionally on a data file, like `isoscope app corpus.parquet`)"}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "data_file",
        nargs="?",
        default=None,
        metavar="DATA_FILE",
        help="a corpus, a pairs file or a vectors file (.npy, .parquet, .feather, .safetensors, a datasets folder) to "
        "open: the data of every page; or an atlas folder (isoscope atlas --out DIR), which the Atlas page opens",
    )
    p.add_argument("--text-column", default=None, help="column of DATA_FILE holding the texts (default: text)")
    p.add_argument(
        "--vector-column",
        default=None,
        help="DATA_FILE is a vectors file and this is its vector column (default: its only list column)",
    )
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port to serve on (default: {DEFAULT_PORT})")
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
        "--allow-endpoints",
        action="store_true",
        help="classroom: let students use embeddings endpoints (openai:NAME models), which spend this server's API "
        "key (off by default)",
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


def options_from_args(args: argparse.Namespace) -> ServerOptions:
    """The ServerOptions the arguments describe; InputError for a value out of range."""
    if not 1 <= args.port <= 65535:
        raise InputError(f"--port must be between 1 and 65535, got {args.port}")
    for option in ("max_upload_mb", "max_rows"):
        if getattr(args, option) is not None and getattr(args, option) < 1:
            raise InputError(f"--{option.replace('_', '-')} must be at least 1")
    return ServerOptions(
        port=args.port,
        host=args.host,
        classroom=args.classroom,
        access_code=args.access_code,
        allow_models=tuple(args.allow_model),
        max_upload_mb=args.max_upload_mb,
        max_rows=args.max_rows,
        data_file=args.data_file,
        text_column=args.text_column,
        vector_column=args.vector_column,
        allow_endpoints=args.allow_endpoints,
    )


def run(args: argparse.Namespace) -> dict:
    from isoscope.dashboard import launch

    plan = launch.prepare(options_from_args(args))
    if args.dry_run:
        print(" ".join(plan.command))
        if plan.access_code is not None:
            print(f"access code: {plan.access_code}")
        return {"command": plan.command, "env": plan.env, "access_code": plan.access_code}
    launch.check_port(plan.host, plan.port)  # before the address is printed: exit 2, not someone else's app
    print(f"Isoscope at {plan.url()}", file=sys.stderr)
    if plan.access_code is not None:
        print(
            f"classroom mode: students open that address and type the access code {plan.access_code}", file=sys.stderr
        )
    code = launch.start(plan)
    if code != 0:  # the server died on its own (a crash, a signal from elsewhere): not a clean stop
        import signal

        names = {int(sig): sig.name for sig in signal.Signals}
        died = f"killed by {names.get(code - 128, f'signal {code - 128}')}" if code > 128 else f"exit status {code}"
        print(f"error: the app's server stopped unexpectedly ({died}); its messages are above", file=sys.stderr)
        raise SystemExit(code)
    return {"command": plan.command, "returncode": code}
