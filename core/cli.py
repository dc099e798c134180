"""Command-line entry point: one sub-command per module in ``core.commands``.

Bad input exits with status 2 and one line on stderr; ``--json`` prints a machine-readable result on stdout.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from typing import NoReturn

from core.errors import first_line

# Each module defines NAME, HELP, add_arguments(parser) and run(args) -> dict.
COMMAND_MODULES: tuple[str, ...] = (
    "core.commands.embed",
    "core.commands.sts",
    "core.commands.calibrate",
    "core.commands.landscape",
    "core.commands.pooling",
    "core.commands.params",
    "core.commands.geometry",
)


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line on stderr (exit status 2), like every other bad input."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m core", description="Isoscope: embedding-space geometry.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module_name in COMMAND_MODULES:
        module = importlib.import_module(module_name)
        p = sub.add_parser(module.NAME, help=module.HELP, description=module.HELP)
        module.add_arguments(p)
        p.set_defaults(_run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(message)s")
    try:
        args._run(args)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except OSError as exc:  # unreadable input, unwritable output folder, full disk
        where = f": {exc.filename}" if getattr(exc, "filename", None) else ""
        print(f"error: {first_line(exc.strerror or exc)}{where}", file=sys.stderr)
        return 2
    except ValueError as exc:  # InputError (bad input), or invalid option values found by core
        print(f"error: {first_line(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted; finished results are cached and the next run resumes from them", file=sys.stderr)
        return 130
    return 0
