"""The ``isoscope`` command (also ``python -m isoscope``): one sub-command per module in ``isoscope.commands``.

Only the chosen command's module is imported, and command modules import torch, transformers, faiss and
pandas inside ``run``, so ``isoscope --help`` and ``isoscope COMMAND --help`` answer at once.

Exit status: 0 on success; 2 with one line on stderr for the user's mistakes (``InputError``, unreadable
or unwritable files, bad options); 1 for anything else, which is a bug in Isoscope: one line that says so,
and the traceback with ``-v``; 130 on Ctrl-C. A command that gates a deployment sets ``args.exit_status`` (1 when
its check fails, with one ``gate:`` line on stderr: ``isoscope migrate --threshold``).
"""

from __future__ import annotations

import argparse
import ast
import importlib
import logging
import os
import re
import sys
import traceback
from pathlib import Path
from typing import NoReturn

from isoscope.errors import InputError, first_line, printable

PROG = "isoscope"

COMMANDS_FOLDER = Path(__file__).resolve().parent / "commands"
_DECLARATION = re.compile(r"^COMMAND = (\{.*?\})\n", re.M | re.S)


def _declared(path: Path) -> dict | None:
    """A command module's ``COMMAND = {"order": N, "help": "..."}``, read as a literal (the module is not imported:
    ``isoscope --help`` stays instant), or None for a helper module."""
    found = _DECLARATION.search(path.read_text(encoding="utf-8"))
    return None if found is None else ast.literal_eval(found.group(1))


def _commands(*folders: Path) -> dict[str, tuple[str, str]]:
    """name -> (its module, its one-line help), in ``order``: every module of ``isoscope/commands/`` (or of
    ``folders``, on the package's path) that declares ``COMMAND``; a command is its file."""
    paths = (path for folder in folders or (COMMANDS_FOLDER,) for path in sorted(folder.glob("*.py")))
    found = {path.stem: _declared(path) for path in paths}
    ranked = sorted((d["order"], name, d["help"]) for name, d in found.items() if d is not None)
    return {name.replace("_", "-"): (f"isoscope.commands.{name}", help_) for _, name, help_ in ranked}


# name -> (module defining add_arguments(parser) and run(args) -> dict, one-line help)
COMMANDS: dict[str, tuple[str, str]] = _commands()


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line on stderr (exit status 2), like every other bad input."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {message} (see {self.prog} --help)\n")


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser; only the command named in ``argv`` gets its module imported and its options added
    (all of them when ``argv`` is None)."""
    parser = _Parser(prog=PROG, description="Isoscope: see the geometry of embedding spaces, and fix it.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details; tracebacks for bugs")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)
    chosen = _chosen(argv)
    for name, (module_name, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        if argv is None or name == chosen:
            module = importlib.import_module(module_name)
            module.add_arguments(p)
            p.set_defaults(_run=module.run)
    return parser


def _chosen(argv: list[str] | None) -> str | None:
    """The first argument that names a command (options like -v may come before it)."""
    return next((a for a in argv or [] if a in COMMANDS), None)


def _end_progress() -> None:
    """Close the progress bars an error interrupted (each clears its line), so the error line that follows starts
    a line of its own instead of being glued to a half-drawn bar."""
    std = sys.modules.get("tqdm.std")  # never imported here: only bars that exist are closed
    if std is None:
        return
    for bar in list(getattr(std.tqdm, "_instances", ())):
        try:
            bar.close()
        except Exception:  # a bar of another thread, closed meanwhile: the error still gets printed
            pass


def main(argv: list[str] | None = None, encoder: object | None = None) -> int:
    """Run one command; returns the exit status.

    ``encoder``: an already loaded ``isoscope.encode.models.Encoder`` that commands use instead of loading the default
    model (tests and notebooks load it once); ``--model`` naming another model still loads that one.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    args.preloaded_encoder = encoder
    args.argv = argv  # the command line as given (the report records how it was made)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(message)s")
    try:
        args._run(args)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except InputError as exc:  # the user's mistake: one line that says what to fix
        _end_progress()
        print(f"error: {printable(first_line(exc))}", file=sys.stderr)
        return 2
    except OSError as exc:  # unreadable input, unwritable output folder, full disk
        _end_progress()
        where = f": {exc.filename}" if getattr(exc, "filename", None) else ""
        print(f"error: {printable(first_line(exc.strerror or exc) + where)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        _end_progress()
        print(f"interrupted; {getattr(args, 'interrupt_note', 'nothing was written')}", file=sys.stderr)
        return 130
    except Exception as exc:  # anything else is a bug in Isoscope, and must look like one
        _end_progress()
        if args.verbose:
            traceback.print_exc()
        print(
            f"error: internal error, a bug in Isoscope ({type(exc).__name__}: {printable(first_line(exc))})"
            + ("" if args.verbose else "; run with -v for the traceback"),
            file=sys.stderr,
        )
        return 1
    return int(getattr(args, "exit_status", 0))
