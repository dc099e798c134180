"""Locations of data: the demo data shipped inside the package (``isoscope data demo`` copies it into a folder),
and STS-B (not shipped: ``isoscope data stsb`` downloads it, ``ISOSCOPE_STSB_DIR`` names a folder of your own);
the one way files are opened for reading: only regular files, never a FIFO, a device or a socket;
and the one check of a name read from a file (a manifest's entries, a recipe's module folders): ``inside``."""

from __future__ import annotations

import errno
import os
import stat
from importlib import resources
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import BinaryIO

from isoscope.errors import InputError

ROOT = Path(__file__).resolve().parents[1]  # the checkout (or site-packages when installed)
PACKAGE = Path(__file__).resolve().parent  # the isoscope package's own folder (core/ in a checkout)
ASSETS = Path(str(resources.files("isoscope.assets")))  # assets/ at the top of the checkout, package data in a wheel
DEMO_CORPUS = ASSETS / "demo_corpus.csv"
DEMO_PAIRS = ASSETS / "demo_pairs.csv"
DEMO_RETRIEVAL = ASSETS / "demo_retrieval"  # a BEIR folder: 55 queries written for it, 300 demo-corpus texts
DEMO_FILES = (  # what `isoscope data demo` copies into a folder of the user's (relative to ASSETS)
    "demo_corpus.csv",
    "demo_pairs.csv",
    "demo_retrieval/corpus.jsonl",
    "demo_retrieval/queries.jsonl",
    "demo_retrieval/qrels/test.tsv",
)


ENV_STSB_DIR = "ISOSCOPE_STSB_DIR"  # a folder holding stsb-en-train.csv, stsb-en-dev.csv, stsb-en-test.csv
STSB_FILES = tuple(f"stsb-en-{split}.csv" for split in ("train", "dev", "test"))  # no header: s1, s2, score 0-5
CHECKOUT_STSB = ROOT.parent / "shared" / "data" / "stsb"  # beside a development checkout (read, never copied)


def user_stsb_dir() -> Path:
    """Where ``isoscope data stsb`` writes STS-B: ``$ISOSCOPE_CACHE/data/stsb`` (default ``~/.cache/isoscope``)."""
    return Path(os.environ.get("ISOSCOPE_CACHE") or Path.home() / ".cache" / "isoscope") / "data" / "stsb"


def stsb_dir() -> Path:
    """The STS-B folder: ``$ISOSCOPE_STSB_DIR``; else ``../shared/data/stsb`` beside a development checkout when it
    holds the test file; else ``user_stsb_dir()``, where ``isoscope data stsb`` downloads it."""
    if os.environ.get(ENV_STSB_DIR):
        return Path(os.environ[ENV_STSB_DIR]).expanduser()
    if (CHECKOUT_STSB / STSB_FILES[-1]).is_file():
        return CHECKOUT_STSB
    return user_stsb_dir()


class NotRegularFile(OSError):
    """A path that names a FIFO, a device, a socket or a folder: reading it could block or never end."""

    def __init__(self, path: str | Path, kind: str) -> None:
        super().__init__(errno.EINVAL, f"a {kind}, not a regular file", str(path))
        self.kind = kind


def file_kind(mode: int) -> str:
    """What an ``st_mode`` names, in words."""
    for test, kind in (
        (stat.S_ISREG, "file"),
        (stat.S_ISDIR, "folder"),
        (stat.S_ISFIFO, "FIFO (named pipe)"),
        (stat.S_ISSOCK, "socket"),
        (stat.S_ISCHR, "character device"),
        (stat.S_ISBLK, "block device"),
    ):
        if test(mode):
            return kind
    return "special file"


def check_regular(path: str | Path) -> os.stat_result:
    """``os.stat(path)`` (symlinks followed) of a regular file; ``NotRegularFile`` naming what it is otherwise
    (a symbolic link loop included)."""
    try:
        st = os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise NotRegularFile(path, "symbolic link loop") from None
        raise
    if not stat.S_ISREG(st.st_mode):
        raise NotRegularFile(path, file_kind(st.st_mode))
    return st


def open_regular(path: str | Path) -> BinaryIO:
    """``path`` opened for binary reading, after checking (before opening) that it is a regular file.

    Opened without blocking and checked again on the open descriptor, so a path swapped for a FIFO in
    between cannot hang the reader.
    """
    check_regular(path)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(path, file_kind(mode))
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def regular_files(folder: str | Path, pattern: str = "*") -> list[Path]:
    """The entries of ``folder`` matching ``pattern`` that are not folders, in name order, each checked with
    ``check_regular``: a FIFO, socket, device, link loop or dangling link among them raises (``NotRegularFile``,
    ``FileNotFoundError``, naming it), never skipped. Every folder a user names (a model, a shard folder) is
    listed with this before any of its files is opened, by Isoscope or by a library it hands the folder to."""
    found = []
    for path in sorted(Path(folder).glob(pattern)):
        if path.is_dir():  # False for a link loop: checked below, as a file would be
            continue
        check_regular(path)
        found.append(path)
    return found


def inside(folder: str | Path, name: object, *, what: str) -> Path:
    """``folder / name`` when ``name`` (read from a file: a manifest's entry, a recipe's module folder) is a
    relative path that stays inside ``folder``, symlinks resolved; an InputError naming ``what`` otherwise.

    Decided before anything under the name is opened, read or hashed: not a non-empty string, a NUL or a lone
    surrogate, an absolute path (POSIX or Windows: ``/etc``, ``C:``, ``\\\\server``), a ``..`` part, or a path whose
    symlinks lead out of ``folder`` are refused.
    """
    folder = Path(folder)
    shown = str(name)[:80]
    where = folder.name or str(folder)
    if not isinstance(name, str) or not name or "\x00" in name:
        raise InputError(f"{what}: {shown!r} is not a file name in the folder {where}")
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(f"{what}: '{shown}' is not a file name (a lone surrogate)") from None
    posix, windows = PurePosixPath(name), PureWindowsPath(name)
    if posix.is_absolute() or windows.anchor or ".." in posix.parts or ".." in windows.parts:
        raise InputError(f"{what}: '{shown}' is outside the folder {where}; a name must be a relative path in it")
    target = folder / name
    try:
        escapes = not target.resolve().is_relative_to(folder.resolve())
    except (OSError, RuntimeError):  # a link loop (RuntimeError before Python 3.13)
        raise InputError(f"{what}: '{shown}' is a link loop") from None
    if escapes:
        raise InputError(f"{what}: '{shown}' is a link to outside the folder {where}; refused")
    return target
