"""Bytes to text under one set of rules, for every text format and for streamed and loaded files alike.

- UTF-16 needs its byte-order mark; UTF-8 may have one.
- A NUL byte (outside UTF-16) or many control characters mean a binary file: refused.
- Each line is UTF-8; a line that is not is decoded as Windows-1252 (Latin-1 plus curly quotes and dashes)
  and named in one warning; a line that is neither is refused with its number.
- A UTF-16 surrogate is half of a character (an emoji cut in two, or encoded the way Java and JavaScript
  encode them): a pair of halves is joined into its character, a lone half is replaced with U+FFFD, counted
  in one warning (``replace_surrogates``; JSON strings, whose ``\\ud800`` escapes decode to such halves, go
  through the same function). No text that a tokenizer cannot encode leaves the loaders.
- Texts longer than ``max_chars`` are cut while they are read (never held whole), and counted for a warning.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import BinaryIO

import pandas as pd

from isoscope.data.limits import MiB
from isoscope.errors import InputError

BLOCK = MiB  # bytes decoded at a time
SNIFF_CHARS = 65_536  # after this many characters a binary-looking prefix is refused without reading on
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f]")  # \t \n \f \r are text
_NON_SPACE = re.compile(r"\S")
_LINE_BREAK = re.compile(r"[\r\n]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_PAIR = re.compile("([\ud800-\udbff])([\udc00-\udfff])")


class ClippedText(str):
    """A text cut while it was read: its stripped length was over the limit (counted in the warning)."""


def frame_of(columns: dict[str, list]) -> pd.DataFrame:
    """A frame of these columns; a column holding cut texts stays ``object`` so they keep their mark."""
    return pd.DataFrame(
        {
            k: pd.Series(v, dtype=object) if any(isinstance(x, ClippedText) for x in v) else pd.Series(v)
            for k, v in columns.items()
        },
        columns=list(columns),
    )


@dataclass
class TextStats:
    """What decoding saw: the encoding, Windows-1252 lines, texts cut; turned into one-line warnings."""

    name: str
    encoding: str = "UTF-8"
    fallback_lines: list[int] = field(default_factory=list)  # the first few line numbers
    n_fallback: int = 0
    n_truncated: int = 0
    max_chars: int = 0
    chars: int = 0
    controls: int = 0
    lines: int = 0
    n_surrogates: int = 0  # lone UTF-16 surrogates replaced with U+FFFD

    def warnings(self) -> list[str]:
        out = []
        if self.encoding == "UTF-16":
            out.append(f"{self.name}: decoded as UTF-16")
        if self.n_surrogates:
            out.append(
                f"{self.name}: {self.n_surrogates} lone UTF-16 surrogate(s) (half of a character, such as an emoji "
                "cut in two) replaced with U+FFFD"
            )
        if self.n_fallback:
            where = ", ".join(map(str, self.fallback_lines)) + (
                ", ..." if self.n_fallback > len(self.fallback_lines) else ""
            )
            out.append(
                f"{self.name}: {self.n_fallback} line(s) not valid UTF-8 (line {where}), decoded as Latin-1 "
                "(Windows-1252); check accented characters"
            )
        return out

    def truncation_warning(self) -> list[str]:
        if not self.n_truncated:
            return []
        return [f"{self.name}: {self.n_truncated} text(s) longer than {self.max_chars} characters were truncated"]


def _join_pair(m: re.Match[str]) -> str:
    return chr(0x10000 + ((ord(m.group(1)) - 0xD800) << 10) + (ord(m.group(2)) - 0xDC00))


def replace_surrogates(text: str, stats: TextStats) -> str:
    """``text`` with surrogate pairs joined and lone surrogates replaced by U+FFFD (counted in ``stats``)."""
    if _SURROGATE.search(text) is None:
        return text
    fixed, n = _SURROGATE.subn("\ufffd", _SURROGATE_PAIR.sub(_join_pair, text))
    stats.n_surrogates += n
    return ClippedText(fixed) if isinstance(text, ClippedText) else fixed


def _binary(name: str) -> InputError:
    return InputError(f"{name}: this is a binary file, not text; upload a UTF-8 CSV, TSV, JSONL or text file")


class _Decoder:
    """Decodes a byte stream block by block; see the module docstring for the rules."""

    def __init__(self, stream: BinaryIO, stats: TextStats) -> None:
        self.stream, self.stats, self.name = stream, stats, stats.name
        self.line = 1  # number of the line the next byte belongs to
        self.tail_decoder: codecs.IncrementalDecoder | None = None  # inside a line longer than a block
        self.tail_fallback = False
        self.last_fallback = 0  # the last line decoded as Windows-1252

    def pieces(self) -> Iterator[str]:
        head = self.stream.read(BLOCK)
        if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
            yield from self._utf16(head)
            return
        if head.startswith(codecs.BOM_UTF8):
            head = head[len(codecs.BOM_UTF8) :]
        carry, block = b"", head
        while True:
            if b"\x00" in block:  # before any line of the block is decoded: binary is the first thing to say
                raise _binary(self.name)
            data = carry + block
            if not block:  # end of file
                if data:
                    yield self._text(self._decode_lines(data) if self.tail_decoder is None else self._tail(data, True))
                break
            cut = data.rfind(b"\n") + 1
            if cut:
                if self.tail_decoder is not None:
                    yield self._text(self._tail(data[:cut], True))
                else:
                    yield self._text(self._decode_lines(data[:cut]))
                carry = data[cut:]
            elif len(data) >= BLOCK:  # a line longer than a block: decode what we have, keep reading it
                yield self._text(self._tail(data, False))
                carry = b""
            else:
                carry = data
            block = self.stream.read(BLOCK)
        self._check_controls(final=True)

    def _utf16(self, head: bytes) -> Iterator[str]:
        self.stats.encoding = "UTF-16"
        decoder = codecs.getincrementaldecoder("utf-16")("surrogatepass")
        block = head
        while True:
            try:
                text = decoder.decode(block, final=not block)
            except UnicodeDecodeError:
                raise InputError(f"{self.name}: looks like UTF-16 but does not decode; save it as UTF-8") from None
            if "\x00" in text:
                raise _binary(self.name)
            if text:
                yield self._text(text)
            if not block:
                break
            block = self.stream.read(BLOCK)
        self._check_controls(final=True)

    def _decode_lines(self, data: bytes) -> str:
        """Complete lines (plus possibly an unterminated last one): UTF-8, else line by line."""
        if b"\x00" in data:
            raise _binary(self.name)
        first = self.line
        self.line += data.count(b"\n")
        try:
            return data.decode("utf-8", "surrogatepass")
        except UnicodeDecodeError:
            pass
        parts = []
        for i, line in enumerate(data.split(b"\n")):
            if i:
                parts.append("\n")
            try:
                parts.append(line.decode("utf-8", "surrogatepass"))
            except UnicodeDecodeError:
                parts.append(self._fallback(line, first + i))
        return "".join(parts)

    def _tail(self, data: bytes, ends_line: bool) -> str:
        """Part of a line longer than a block (``ends_line``: the rest of it, maybe with further lines)."""
        if b"\x00" in data:
            raise _binary(self.name)
        if self.tail_decoder is None:
            self.tail_decoder, self.tail_fallback = codecs.getincrementaldecoder("utf-8")("surrogatepass"), False
        if ends_line:
            end = data.find(b"\n") + 1 or len(data)
            rest, data = data[end:], data[:end]
        if not self.tail_fallback:
            try:
                text = self.tail_decoder.decode(data, final=ends_line)
            except UnicodeDecodeError:
                self.tail_fallback = True
                text = self._fallback(self.tail_decoder.getstate()[0] + data, self.line)
        else:
            text = self._fallback(data, self.line)
        if ends_line:
            self.tail_decoder = None
            self.line += 1
            text += self._decode_lines(rest) if rest else ""
        return text

    def _fallback(self, line: bytes, number: int) -> str:
        try:
            text = line.decode("cp1252")
        except UnicodeDecodeError:
            text = line.decode("latin-1")
        if _CONTROL.search(text):
            raise InputError(f"{self.name}: line {number} is not text in a known encoding; save the file as UTF-8")
        if number != self.last_fallback:
            self.last_fallback = number
            self.stats.n_fallback += 1
            if len(self.stats.fallback_lines) < 5:
                self.stats.fallback_lines.append(number)
        return text

    def _text(self, text: str) -> str:
        text = replace_surrogates(text, self.stats)
        self.stats.chars += len(text)
        self.stats.controls += len(_CONTROL.findall(text))
        self._check_controls(final=False)
        return text

    def _check_controls(self, final: bool) -> None:
        s = self.stats
        if (final or s.chars >= SNIFF_CHARS) and s.controls > max(2, s.chars // 1000):
            raise InputError(f"{self.name}: contains binary data; upload a UTF-8 text file")


def decoded_pieces(stream: BinaryIO, stats: TextStats) -> Iterator[str]:
    """The text of ``stream`` in pieces of about a block, line ends kept (``\\n``, ``\\r\\n`` or ``\\r``)."""
    return _Decoder(stream, stats).pieces()


class CellBuilder:
    """Collects one text from pieces, keeping at most ``cap`` characters after leading whitespace.

    ``finish()`` returns the kept text, as a ``ClippedText`` when non-space characters came after the cap.
    """

    __slots__ = ("cap", "long", "parts", "size", "started")

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.parts: list[str] = []
        self.size = 0
        self.started = False
        self.long = False

    def add(self, s: str, i: int = 0, j: int | None = None) -> None:
        j = len(s) if j is None else j
        if i >= j or self.long:
            return
        if not self.started:
            m = _NON_SPACE.search(s, i, j)
            if m is None:
                return
            i, self.started = m.start(), True
        room = self.cap - self.size
        if room > 0:
            take = min(j - i, room)
            self.parts.append(s[i : i + take])
            self.size += take
            i += take
        if i < j and _NON_SPACE.search(s, i, j):
            self.long = True

    def finish(self) -> str:
        text = self.parts[0] if len(self.parts) == 1 else "".join(self.parts)
        out = ClippedText(text) if self.long else text
        self.parts, self.size, self.started, self.long = [], 0, False, False
        return out


def iter_text_lines(pieces: Iterable[str], stats: TextStats, max_chars: int) -> Iterator[str]:
    """Texts of a one-text-per-line file: stripped, empty lines skipped, each cut to ``max_chars`` (counted)."""
    cell = CellBuilder(max_chars)
    stats.max_chars = max_chars

    def done() -> str:
        text = cell.finish()
        stats.n_truncated += isinstance(text, ClippedText)
        return text.strip()  # a plain str

    for piece in pieces:
        pos = 0
        for m in _LINE_BREAK.finditer(piece):
            cell.add(piece, pos, m.start())
            pos = m.end()
            text = done()
            if text:
                yield text
        cell.add(piece, pos)
    text = done()
    if text:
        yield text


def decode_text(raw: bytes, name: str) -> tuple[str, list[str]]:
    """Decode a whole file's bytes under the rules above; returns (text, warnings)."""
    import io

    stats = TextStats(name)
    text = "".join(decoded_pieces(io.BytesIO(raw), stats))
    return text, stats.warnings()
