"""What a Parquet file's pages hold, read from the page headers themselves (not from the footer).

The footer's sizes are written by whoever wrote the file and can lie: a file whose footer says 100 KB can
decode to gigabytes. The page headers cannot lie upward without the read failing (the reader allocates a
page's ``uncompressed_page_size`` and checks that the page decompresses to exactly that), so the sizes that
bound decoding are theirs. Each column chunk is walked the way the reader will walk it (from its first page,
over its ``total_compressed_size`` bytes), every page header parsed with a small reader of Thrift's compact
protocol, and the chunk's uncompressed bytes and value counts added up before anything is decompressed.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, BinaryIO

from isoscope.data.limits import MiB
from isoscope.data.source import Source
from isoscope.paths import open_regular

MAX_PAGE_HEADER = 16 * MiB  # the reader's own limit on one page header (statistics can hold long values)
MAX_PAGES = 1_000_000  # page headers walked per file (a real file has a few per column chunk)
MAX_DEPTH = 32  # nesting of Thrift structs in one header
BYTES_PER_VALUE = 8  # decoded bytes a value may take beyond its encoded page bytes (offsets, indices, widening)

# Thrift compact protocol element types
_TRUE, _FALSE, _BYTE, _I16, _I32, _I64, _DOUBLE, _BINARY, _LIST, _SET, _MAP, _STRUCT = range(1, 13)
# PageHeader fields (parquet.thrift): 2 uncompressed_page_size, 3 compressed_page_size, 5 data_page_header,
# 7 dictionary_page_header, 8 data_page_header_v2; each of the three page kinds has num_values as field 1
_UNCOMPRESSED, _COMPRESSED, _DATA, _DICTIONARY, _DATA_V2 = 2, 3, 5, 7, 8


class PageError(ValueError):
    """The pages are not what a Parquet reader can read (a header cut short, sizes out of the file)."""


class _Reader:
    """Thrift compact protocol over a buffer, from ``pos``; values needed are returned, the rest skipped."""

    def __init__(self, buf: Any, pos: int, end: int) -> None:
        self.buf, self.pos, self.end = buf, pos, end

    def byte(self) -> int:
        if self.pos >= self.end:
            raise PageError("a page header runs past the end of the file")
        b = self.buf[self.pos]
        self.pos += 1
        return b

    def varint(self) -> int:
        shift = out = 0
        while True:
            b = self.byte()
            out |= (b & 0x7F) << shift
            if not b & 0x80:
                return out
            shift += 7
            if shift > 63:
                raise PageError("a page header holds a malformed number")

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def skip_bytes(self, n: int) -> None:
        if n < 0 or self.pos + n > self.end:
            raise PageError("a page header runs past the end of the file")
        self.pos += n

    def value(self, kind: int, depth: int) -> Any:
        if kind in (_TRUE, _FALSE):
            return kind == _TRUE
        if kind == _BYTE:
            return self.byte()
        if kind in (_I16, _I32, _I64):
            return self.zigzag()
        if kind == _DOUBLE:
            return self.skip_bytes(8)
        if kind == _BINARY:
            return self.skip_bytes(self.varint())
        if kind in (_LIST, _SET):
            head = self.byte()
            size, elem = head >> 4, head & 0x0F
            if size == 15:
                size = self.varint()
            for _ in range(size):
                self.byte() if elem in (_TRUE, _FALSE) else self.value(elem, depth + 1)
            return None
        if kind == _MAP:
            size = self.varint()
            if size:
                types = self.byte()
                for _ in range(size):
                    self.value(types >> 4, depth + 1)
                    self.value(types & 0x0F, depth + 1)
            return None
        if kind == _STRUCT:
            return self.struct(depth + 1)
        raise PageError(f"a page header holds an unknown Thrift type {kind}")

    def struct(self, depth: int = 0) -> dict[int, Any]:
        """Field id -> value (integers, booleans and nested structs; other values are skipped as None)."""
        if depth > MAX_DEPTH:
            raise PageError("a page header nests too deeply")
        fields: dict[int, Any] = {}
        last = 0
        while True:
            head = self.byte()
            if head == 0:  # STOP
                return fields
            delta, kind = head >> 4, head & 0x0F
            last = last + delta if delta else self.zigzag()
            fields[last] = self.value(kind, depth)


@dataclass
class ChunkPages:
    """What the pages of one column chunk hold."""

    uncompressed: int = 0  # bytes of every page once decompressed (dictionary page included)
    values: int = 0  # values in the data pages (rows, for a flat column)
    dictionary_values: int = 0
    pages: int = 0

    @property
    def decoded_bound(self) -> int:
        """Bytes the chunk may take decoded: its page bytes plus ``BYTES_PER_VALUE`` per value."""
        return self.uncompressed + BYTES_PER_VALUE * (self.values + self.dictionary_values)


def chunk_start(col: Any) -> int:
    """Where the reader starts a column chunk: its dictionary page when it has one before the data pages."""
    start = col.data_page_offset
    dictionary = col.dictionary_page_offset if col.has_dictionary_page else None
    if dictionary is not None and 0 < dictionary < start:
        start = dictionary
    return start


def walk_chunk(buf: Any, start: int, length: int, *, size: int, budget: int, max_pages: int) -> ChunkPages:
    """Sum the page headers of the column chunk at ``start`` (``length`` bytes), stopping once past ``budget``
    decoded bytes or ``max_pages`` pages."""
    end = start + length
    if start < 0 or length < 0 or end > size:
        raise PageError("a column chunk lies outside the file")
    out = ChunkPages()
    pos = start
    while pos < end:
        reader = _Reader(buf, pos, min(size, pos + MAX_PAGE_HEADER))  # old writers understate the last page
        header = reader.struct()
        uncompressed, compressed = header.get(_UNCOMPRESSED), header.get(_COMPRESSED)
        if not isinstance(uncompressed, int) or not isinstance(compressed, int) or uncompressed < 0 or compressed < 0:
            raise PageError("a page header has no sizes")
        out.pages += 1
        out.uncompressed += uncompressed
        for field in (_DATA, _DATA_V2):
            if isinstance(header.get(field), dict):
                out.values += max(int(header[field].get(1) or 0), 0)
        if isinstance(header.get(_DICTIONARY), dict):
            out.dictionary_values += max(int(header[_DICTIONARY].get(1) or 0), 0)
        if out.decoded_bound > budget or out.pages > max_pages:
            return out
        pos = reader.pos + compressed
        if pos > size:
            raise PageError("a page runs past the end of the file")
    return out


class _FileBlocks:
    """A file on disk indexable by byte, read in small blocks as the headers are walked (never all of it)."""

    BLOCK = 4096

    def __init__(self, f: BinaryIO) -> None:
        self.f = f
        self.blocks: dict[int, bytes] = {}

    def __getitem__(self, pos: int) -> int:
        k = pos // self.BLOCK
        block = self.blocks.get(k)
        if block is None:
            if len(self.blocks) > 64:
                self.blocks.clear()
            self.f.seek(k * self.BLOCK)
            block = self.blocks[k] = self.f.read(self.BLOCK)
        i = pos - k * self.BLOCK
        if i >= len(block):
            raise PageError("a page header runs past the end of the file")
        return block[i]


@contextmanager
def file_bytes(src: Source) -> Iterator[Any]:
    """The file's bytes, indexable: uploaded bytes as they are, a file on disk read block by block."""
    if src.path is None:
        yield memoryview(src.data or b"")
        return
    with open_regular(src.path) as f:
        yield _FileBlocks(f)
