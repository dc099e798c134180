"""CSV and TSV, streamed: cells are cut to the text limit as they are read, rows and columns are counted.

The grammar is the csv module's "excel" dialect (RFC 4180 quoting with doubled quotes, any line ending,
lenient about characters after a closing quote), written as a small state machine over decoded pieces
so that no cell is ever held longer than the limit. A quote left open at the end of the file is refused.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Iterator

from isoscope.data.limits import DecodeLimits
from isoscope.data.text import CellBuilder
from isoscope.errors import InputError

_START, _UNQUOTED, _QUOTED, _QUOTE_SEEN = range(4)
SAMPLE_ROWS = 50  # rows that decide the delimiter
BLANK_ROWS_PER_ROW = 4  # blank records allowed per row limit (a file of empty lines is read quickly, then refused)


class DelimitedParser:
    """Feed decoded pieces with ``feed`` (yields finished records), then call ``close``."""

    def __init__(self, sep: str, name: str, *, cap: int, max_columns: int) -> None:
        self.sep, self.name, self.max_columns = sep, name, max_columns
        self.special = re.compile(f'[{re.escape(sep)}"\r\n]')
        self.cell = CellBuilder(cap)
        self.row: list[str] = []
        self.state = _START
        self.skip_lf = False
        self.records = 0

    def feed(self, piece: str) -> Iterator[list[str]]:
        pos, n = 0, len(piece)
        if self.skip_lf and n and piece[0] == "\n":
            pos = 1
        self.skip_lf = False
        cell, special = self.cell, self.special
        while pos < n:
            if self.state == _QUOTED:
                j = piece.find('"', pos)
                if j < 0:
                    cell.add(piece, pos, n)
                    break
                cell.add(piece, pos, j)
                pos, self.state = j + 1, _QUOTE_SEEN
                continue
            if self.state == _QUOTE_SEEN:
                if piece[pos] == '"':  # a doubled quote inside quotes
                    cell.add('"')
                    pos, self.state = pos + 1, _QUOTED
                else:  # the closing quote; what follows up to the delimiter is kept
                    self.state = _UNQUOTED
                continue
            m = special.search(piece, pos)
            j = n if m is None else m.start()
            if j > pos:
                cell.add(piece, pos, j)
                self.state = _UNQUOTED
            if m is None:
                break
            c, pos = piece[j], j + 1
            if c == '"':
                if self.state == _START:
                    self.state = _QUOTED
                else:  # a quote inside an unquoted cell is text
                    cell.add('"')
            elif c == self.sep:
                self._end_cell()
            else:  # \r, \n or \r\n end the record
                self._end_cell()
                yield self._end_row()
                if c == "\r":
                    if pos < n:
                        pos += piece[pos] == "\n"
                    else:
                        self.skip_lf = True

    def close(self, strict: bool = True) -> list[str] | None:
        """The last record (None when the file ended with a line break); an open quote is an InputError."""
        if self.state == _QUOTED and strict:
            raise InputError(f"{self.name}: a quoted field is never closed; check for an unmatched quote")
        if self.state == _START and not self.row:
            return None
        self._end_cell()
        return self._end_row()

    def _end_cell(self) -> None:
        self.row.append(self.cell.finish())
        self.state = _START
        if len(self.row) > self.max_columns:
            raise InputError(
                f"{self.name}: row {self.records + 1} has more than {self.max_columns} columns; "
                "check the delimiter, or raise ISOSCOPE_MAX_COLUMNS"
            )

    def _end_row(self) -> list[str]:
        row, self.row = self.row, []
        self.records += 1
        return row


def _records(pieces: Iterable[str], parser: DelimitedParser, strict: bool) -> Iterator[list[str]]:
    for piece in pieces:
        yield from parser.feed(piece)
    last = parser.close(strict)
    if last is not None:
        yield last


def _blank(row: list[str]) -> bool:
    return not any(c.strip() for c in row)


def parse_rows(pieces: Iterable[str], sep: str, name: str, *, limits: DecodeLimits) -> list[list[str]]:
    """Non-blank records of a delimited text, at most ``max_rows + 2`` (a header and one row over the limit)."""
    parser = DelimitedParser(sep, name, cap=limits.max_chars, max_columns=limits.max_columns)
    rows: list[list[str]] = []
    blanks, max_blank = 0, BLANK_ROWS_PER_ROW * limits.max_rows
    for row in _records(pieces, parser, strict=True):
        if _blank(row):
            blanks += 1
            if blanks > max_blank:
                raise InputError(f"{name}: more than {max_blank:,} blank rows; remove them")
            continue
        rows.append(row)
        if len(rows) > limits.max_rows + 1:
            break
    return rows


def _sample(pieces: list[str], sep: str, name: str, limits: DecodeLimits) -> list[list[str]] | None:
    """The first non-blank records of ``pieces`` split on ``sep``, or None when they cannot be split so."""
    parser = DelimitedParser(sep, name, cap=limits.max_chars, max_columns=limits.max_columns)
    try:
        rows = (r for r in _records(pieces, parser, strict=False) if not _blank(r))
        return list(itertools.islice(rows, SAMPLE_ROWS))
    except InputError:  # too many columns with this delimiter
        return None


def _common_width(rows: list[list[str]] | None) -> int:
    """The number of columns shared by every row, or 0 when they differ."""
    widths = {len(r) for r in rows or []}
    return widths.pop() if len(widths) == 1 else 0


def choose_delimiter(sample: list[str], sep: str, name: str, *, limits: DecodeLimits) -> str:
    """``sep``, or the other delimiter when the first rows clearly use it.

    A .csv whose rows all hold the same number (>= 2) of tab-separated fields, while its comma-separated
    fields vary in number or are fewer, is a TSV (sentences often contain commas, rarely tabs); a .tsv
    without any tab but with commas is a CSV.
    """
    other = "," if sep == "\t" else "\t"
    if not any(other in p for p in sample):
        return sep
    rows = _sample(sample, sep, name, limits)
    if sep == "\t" and rows and max(len(r) for r in rows) > 1:
        return sep
    alt = _sample(sample, other, name, limits)
    if sep == ",":
        width, alt_width = _common_width(rows), _common_width(alt)
        switch = alt_width >= 2 and (width == 0 or alt_width > width)
    else:
        switch = any(len(r) > 1 for r in alt or [])
    return other if switch else sep


def read_delimited(
    pieces: Iterator[str], sep: str, name: str, *, limits: DecodeLimits, warnings: list[str]
) -> list[list[str]]:
    """Rows of a CSV/TSV (blank rows skipped) on the delimiter the file really uses (warned when it differs)."""
    sample = list(itertools.islice(pieces, 1))  # the first block of text decides the delimiter
    chosen = choose_delimiter(sample, sep, name, limits=limits)
    if chosen != sep:
        warnings.append(f"{name}: columns are separated by {'tabs' if chosen == chr(9) else 'commas'}; read as such")
    rows = parse_rows(itertools.chain(sample, pieces), chosen, name, limits=limits)
    if not rows:
        raise InputError(f"{name}: the file is empty")
    return rows
