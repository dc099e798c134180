"""Where a user file comes from (a path or uploaded bytes), opened as a stream that never reads past the limit."""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from isoscope.data.limits import DecodeLimits, MiB, current_limits
from isoscope.errors import InputError

TABLE_FORMATS = ("csv", "tsv", "jsonl", "parquet")
CORPUS_FORMATS = (*TABLE_FORMATS, "txt")
_ALIASES = {"tab": "tsv", "json": "jsonl", "ndjson": "jsonl", "pq": "parquet", "text": "txt"}


def _size(n: int) -> str:
    return f"{n / MiB:,.0f} MiB" if n >= MiB else f"{n:,} bytes"


@dataclass(frozen=True)
class Source:
    """A file on disk or uploaded bytes, with the name messages use."""

    name: str
    path: Path | None = None
    data: bytes | None = None
    max_bytes: int = 0

    def open(self) -> BinaryIO:
        """A binary stream that raises InputError once more than ``max_bytes`` have been read."""
        raw: BinaryIO = open(self.path, "rb") if self.path is not None else io.BytesIO(self.data or b"")
        return _Bounded(raw, self.max_bytes, self.name)  # type: ignore[return-value]

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

    def readinto(self, b) -> int:  # io.RawIOBase protocol
        data = self.read(len(b))
        b[: len(data)] = data
        return len(data)

    def close(self) -> None:
        self._raw.close()
        super().close()


def as_source(source: str | Path | bytes | Source, name: str | None, limits: DecodeLimits | None = None) -> Source:
    """A ``Source`` for a path or bytes; missing files, folders and oversized files are InputErrors."""
    limit = (limits or current_limits()).max_bytes
    if isinstance(source, Source):
        return source
    if isinstance(source, bytes | bytearray | memoryview):
        data = bytes(source)
        name = name or "upload"
        if len(data) > limit:
            raise InputError(f"{name} is larger than {_size(limit)}; split it or sample it")
        return Source(name, data=data, max_bytes=limit)
    path = Path(source)
    if not path.exists():
        raise InputError(f"file not found: {path}")
    if path.is_dir():
        raise InputError(f"{path} is a folder; give a file")
    if path.stat().st_size > limit:
        raise InputError(f"{path.name} is larger than {_size(limit)}; split it or sample it")
    return Source(name or path.name, path=path, max_bytes=limit)


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
