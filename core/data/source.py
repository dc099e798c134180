"""Where a user file comes from (a path, uploaded bytes, or ``-``: standard input), opened as a stream that
never reads past the limit.

A path must name a regular file: a FIFO, a device or a socket could block the reader or never end, so it is
refused before it is opened. Standard input is read once (at most ``max_bytes``) and then treated like an
upload; as it has no extension, its format is told from its content (Parquet by its magic bytes, JSON Lines
by a first ``{``; otherwise one text per line for a corpus, CSV or TSV for pairs). Names in messages go
through ``isoscope.errors.printable``: a file name cannot send escape sequences to a terminal.
"""

from __future__ import annotations

import io
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from isoscope.data.limits import DecodeLimits, MiB, current_limits
from isoscope.errors import InputError, printable
from isoscope.paths import NotRegularFile, check_regular, open_regular

TABLE_FORMATS = ("csv", "tsv", "jsonl", "parquet")
CORPUS_FORMATS = (*TABLE_FORMATS, "txt")
_ALIASES = {"tab": "tsv", "json": "jsonl", "ndjson": "jsonl", "pq": "parquet", "text": "txt"}
STDIN = "-"  # the path that means standard input
STDIN_NAME = "stdin"
_stdin_read: tuple[object, bytes] | None = None  # (the stream, what was read from it): stdin is read once


def _size(n: int) -> str:
    return f"{n / MiB:,.0f} MiB" if n >= MiB else f"{n:,} bytes"


@dataclass(frozen=True)
class Source:
    """A file on disk or uploaded bytes, with the name messages use."""

    name: str
    path: Path | None = None
    data: bytes | None = None
    max_bytes: int = 0
    stdin: bool = False

    def open(self) -> BinaryIO:
        """A binary stream that raises InputError once more than ``max_bytes`` have been read."""
        raw: BinaryIO = _open_file(self.path, self.name) if self.path is not None else io.BytesIO(self.data or b"")
        return _Bounded(raw, self.max_bytes, self.name)  # type: ignore[return-value]

    def format(self, allowed: tuple[str, ...]) -> str:
        """The file's format: from its extension, or for standard input from its content."""
        if not self.stdin:
            return file_format(self.name, allowed)
        head = (self.data or b"")[:4096]
        if head.startswith(b"PAR1") and "parquet" in allowed:
            return "parquet"
        if head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{") and "jsonl" in allowed:
            return "jsonl"
        return "txt" if "txt" in allowed else "csv"

    def read_all(self) -> bytes:
        """Every byte (at most ``max_bytes``)."""
        if self.data is not None:
            return self.data
        with self.open() as f:
            return f.read()

    def is_blank(self) -> bool:
        """True when the file holds nothing but ASCII whitespace (read until the first other byte)."""
        with self.open() as f:
            while block := f.read(MiB):
                if block.strip():
                    return False
        return True


class _Bounded(io.RawIOBase):
    """Read-only wrapper counting bytes: past ``limit`` reading raises InputError (a pipe or /proc file
    can hold more than its size said)."""

    def __init__(self, raw: BinaryIO, limit: int, name: str) -> None:
        self._raw, self._limit, self._name, self._read = raw, limit, name, 0

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        want = self._limit + 1 - self._read if size is None or size < 0 else min(size, self._limit + 1 - self._read)
        data = self._raw.read(max(want, 0))
        self._read += len(data)
        if self._read > self._limit:
            raise InputError(f"{self._name} is larger than {_size(self._limit)}; split it or sample it")
        return data

    def read_to_limit(self) -> bytes:
        """Everything up to the end, or ``limit + 1`` bytes when there is more (the caller refuses it)."""
        parts, got = [], 0
        while got <= self._limit:
            block = self._raw.read(min(MiB, self._limit + 1 - got))
            if not block:
                break
            parts.append(block)
            got += len(block)
        return b"".join(parts)

    def readinto(self, b) -> int:  # io.RawIOBase protocol
        data = self.read(len(b))
        b[: len(data)] = data
        return len(data)

    def close(self) -> None:
        self._raw.close()
        super().close()


def _not_regular(name: str, exc: NotRegularFile) -> InputError:
    return InputError(f"{name} is a {exc.kind}, not a regular file; give a file, or {STDIN} to read standard input")


def _open_file(path: Path, name: str) -> BinaryIO:
    try:
        return open_regular(path)
    except NotRegularFile as exc:  # replaced by a FIFO or a device since it was checked
        raise _not_regular(name, exc) from None


def _read_stdin(limit: int) -> bytes:
    """Standard input, read once per stream (a command may load its input more than once); at most ``limit``."""
    global _stdin_read
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:
        raise InputError(f"{STDIN}: standard input is not available here; give a file")
    if _stdin_read is None or _stdin_read[0] is not stream:
        _stdin_read = (stream, _Bounded(stream, limit, STDIN_NAME).read_to_limit())
    data = _stdin_read[1]
    if len(data) > limit:
        raise InputError(f"{STDIN_NAME} is larger than {_size(limit)}; split it or sample it")
    return data


def as_source(source: str | Path | bytes | Source, name: str | None, limits: DecodeLimits | None = None) -> Source:
    """A ``Source`` for a path, bytes or ``-`` (standard input); missing files, folders, FIFOs, devices and
    oversized files are InputErrors."""
    limit = (limits or current_limits()).max_bytes
    if isinstance(source, Source):
        return source
    if isinstance(source, bytes | bytearray | memoryview):
        data = bytes(source)
        name = printable(name or "upload")
        if len(data) > limit:
            raise InputError(f"{name} is larger than {_size(limit)}; split it or sample it")
        return Source(name, data=data, max_bytes=limit)
    if str(source) == STDIN:
        return Source(printable(name or STDIN_NAME), data=_read_stdin(limit), max_bytes=limit, stdin=True)
    path = Path(source)
    shown = printable(path)
    if not path.exists():
        raise InputError(f"file not found: {shown}")
    try:
        st = check_regular(path)
    except NotRegularFile as exc:
        if exc.kind == "folder":
            raise InputError(f"{shown} is a folder; give a file") from None
        raise _not_regular(shown, exc) from None
    if st.st_size > limit:
        raise InputError(f"{printable(path.name)} is larger than {_size(limit)}; split it or sample it")
    return Source(printable(name or path.name), path=path, max_bytes=limit)


def read_source(source: str | Path | bytes, name: str | None = None) -> tuple[bytes, str]:
    """Return (raw bytes, file name) from a path or from uploaded bytes (at most ``max_bytes``)."""
    src = as_source(source, name)
    return src.read_all(), src.name


def file_format(name: str, allowed: tuple[str, ...]) -> str:
    """Format from the file extension; InputError listing the allowed ones."""
    ext = Path(name).suffix.lower().lstrip(".")
    ext = _ALIASES.get(ext, ext)
    if ext not in allowed:
        raise InputError(f"'{name}': unsupported file type; use one of {', '.join('.' + a for a in allowed)}")
    return ext
