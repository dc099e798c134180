"""Command-line entry point: one sub-command per module in ``core.commands``.

Bad input exits with status 2 and one line on stderr; ``--json`` prints a machine-readable result on stdout.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys

from core.errors import InputError

# Each module defines NAME, HELP, add_arguments(parser) and run(args) -> dict.
COMMAND_MODULES: tuple[str, ...] = (
    "core.commands.embed",
    "core.commands.sts",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m core", description="Isoscope: embedding-space geometry.")
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
    except (InputError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except ValueError as exc:  # invalid option values found by core (e.g. an unknown pooling)
        print(f"error: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted; finished results are cached and the next run resumes from them", file=sys.stderr)
        return 130
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return 0
