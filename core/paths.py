"""Locations of data: the demo data shipped inside the package (``isoscope data demo`` copies it into a folder),
and STS-B (not shipped: ``isoscope data stsb`` downloads it, ``ISOSCOPE_STSB_DIR`` names a folder of your own);
and the one way files are opened for reading: only regular files, never a FIFO, a device or a socket."""

from __future__ import annotations

import errno
import os
import stat
from importlib import resources
from pathlib import Path
from typing import BinaryIO

ROOT = Path(__file__).resolve().parents[1]  # the checkout (or site-packages when installed)
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
    """``os.stat(path)`` (symlinks followed) of a regular file; ``NotRegularFile`` naming what it is otherwise."""
    st = os.stat(path)
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
