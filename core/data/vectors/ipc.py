"""What an Arrow IPC file or stream (Feather v2, ``.arrow``, a Hugging Face dataset's shards) claims, read from
its message headers before any record batch is decoded.

A compressed batch (LZ4 or Zstandard, Feather's default) is decompressed into buffers of the sizes its body
declares, so a small file can expand a thousandfold. Each message's metadata is a FlatBuffer (Arrow's
``Message.fbs``); this reads the few fields needed (a batch's row count, its buffers and compression) and the
8-byte uncompressed length that starts every compressed buffer, without decompressing anything.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MESSAGE_RECORD_BATCH, MESSAGE_DICTIONARY_BATCH = 3, 2  # MessageHeader union tags
BUFFER_BYTES = 16  # struct Buffer { offset: long; length: long; }
MAX_METADATA = 2**20  # one message's FlatBuffer header (a schema of a few hundred columns is a few KB)


class _FlatBuffer:
    """Just enough of the FlatBuffers wire format to read tables, scalars and vectors of structs."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def int(self, pos: int, size: int, signed: bool = False) -> int:
        if pos < 0 or pos + size > len(self.data):
            raise ValueError("a message header points outside itself")
        return int.from_bytes(self.data[pos : pos + size], "little", signed=signed)

    def field(self, table: int, index: int) -> int | None:
        """Absolute position of field ``index`` of the table at ``table``, or None when absent."""
        vtable = table - self.int(table, 4, signed=True)
        slot = 4 + 2 * index
        if slot + 2 > self.int(vtable, 2):
            return None
        offset = self.int(vtable + slot, 2)
        return table + offset if offset else None

    def scalar(self, table: int, index: int, size: int, default: int = 0) -> int:
        pos = self.field(table, index)
        return default if pos is None else self.int(pos, size, signed=True)

    def table(self, table: int, index: int) -> int | None:
        pos = self.field(table, index)
        return None if pos is None else pos + self.int(pos, 4)

    def structs(self, table: int, index: int, size: int) -> list[int]:
        """Positions of the elements of a vector of ``size``-byte structs."""
        pos = self.field(table, index)
        if pos is None:
            return []
        start = pos + self.int(pos, 4)
        n = self.int(start, 4)
        if start + 4 + n * size > len(self.data):
            raise ValueError("a message header's vector runs past its end")
        return [start + 4 + i * size for i in range(n)]


@dataclass
class Claims:
    """What the batches of one IPC file or stream say they hold."""

    rows: int = 0  # rows of the record batches
    batches: int = 0
    decoded_bytes: int = 0  # bytes the bodies decode to (the uncompressed sizes of compressed buffers)


def _batch_claims(fb: _FlatBuffer, batch: int, body: Any) -> tuple[int, int]:
    """(rows, decoded body bytes) of a RecordBatch table; ``body`` is the message body (a pyarrow Buffer)."""
    rows = fb.scalar(batch, 0, 8)
    compressed = fb.table(batch, 3) is not None
    decoded = 0
    for pos in fb.structs(batch, 2, BUFFER_BYTES):
        offset, length = fb.int(pos, 8, signed=True), fb.int(pos + 8, 8, signed=True)
        if offset < 0 or length < 0 or offset + length > body.size:
            raise ValueError("a buffer lies outside its message body")
        if not compressed or length == 0:
            decoded += length
            continue
        if length < 8:
            raise ValueError("a compressed buffer without its length")
        size = int.from_bytes(body[offset : offset + 8].to_pybytes(), "little", signed=True)
        decoded += length - 8 if size == -1 else size  # -1: stored uncompressed
        if size < -1:
            raise ValueError("a negative buffer size")
    if rows < 0:
        raise ValueError("a negative row count")
    return rows, decoded


def scan_stream(source: Any) -> Claims:
    """The claims of every batch of an IPC stream (``source``: a pyarrow input stream positioned at its start).

    Raises ValueError (or a pyarrow error) for a malformed stream; reads no more than the headers and the first
    8 bytes of each compressed buffer (a memory-mapped body is not copied).
    """
    import pyarrow as pa

    claims = Claims()
    reader = pa.ipc.MessageReader.open_stream(source)
    while True:
        try:
            message = reader.read_next_message()
        except StopIteration:
            return claims
        if message.metadata.size > MAX_METADATA:
            raise ValueError(f"a message header of {message.metadata.size:,} bytes")
        fb = _FlatBuffer(message.metadata.to_pybytes())
        root = fb.int(0, 4)
        kind = fb.scalar(root, 1, 1)
        header = fb.table(root, 2)
        if header is None or kind not in (MESSAGE_RECORD_BATCH, MESSAGE_DICTIONARY_BATCH):
            continue  # the schema (or a tensor, refused later by pyarrow)
        batch = header if kind == MESSAGE_RECORD_BATCH else fb.table(header, 1)
        if batch is None:
            raise ValueError("a dictionary batch without data")
        rows, decoded = _batch_claims(fb, batch, message.body)
        if kind == MESSAGE_RECORD_BATCH:
            claims.rows += rows
            claims.batches += 1
        claims.decoded_bytes += decoded
