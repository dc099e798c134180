"""JSON Lines, bounded: each record's length and nesting depth (``isoscope.data.jsonfile.json_depth_exceeds``, as
every JSON file's) are checked before it is parsed, text values
are cut to the text limit, and the number of records and of distinct keys is capped. Keys and text values
go through ``replace_surrogates`` (a ``\\ud800`` escape decodes to half a character)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator

import pandas as pd

from isoscope.data.jsonfile import json_depth_exceeds  # the one depth count of JSON text (each record's here)
from isoscope.data.limits import DecodeLimits, MiB
from isoscope.data.text import CellBuilder, TextStats, frame_of, replace_surrogates
from isoscope.errors import InputError

_LINE_END = re.compile(r"\r\n?|\n")  # JSON text never holds a raw line break inside a value


def _lines(pieces: Iterable[str], name: str, max_chars: int) -> Iterator[tuple[int, str]]:
    """(line number, line) of the text; a line longer than ``max_chars`` is an InputError."""
    parts: list[str] = []
    size, number = 0, 1
    for piece in pieces:
        pos = 0
        while (m := _LINE_END.search(piece, pos)) is not None:
            j = m.start()
            if size + j - pos > max_chars:
                break
            parts.append(piece[pos:j])
            yield number, "".join(parts)
            parts, size, number, pos = [], 0, number + 1, m.end()
        size += len(piece) - pos
        if size > max_chars:
            raise InputError(f"{name}: line {number} is longer than {max_chars / MiB:.0f} MiB; split the record")
        parts.append(piece[pos:])
    if parts:
        yield number, "".join(parts)


def _clip(value: object, cell: CellBuilder, stats: TextStats) -> object:
    if isinstance(value, str):
        cell.add(value)
        return replace_surrogates(cell.finish(), stats)
    return value


def read_jsonl(
    pieces: Iterable[str], name: str, limits: DecodeLimits, *, stats: TextStats | None = None
) -> pd.DataFrame:
    """One JSON object per line (blank lines skipped) as a frame, one column per key; ``stats`` counts the
    surrogates replaced (for the file's warnings)."""
    stats = stats if stats is not None else TextStats(name)
    records: list[dict] = []
    keys: dict[str, None] = {}
    cell = CellBuilder(limits.max_chars)
    for i, line in _lines(pieces, name, limits.max_line_bytes):
        if not line.strip():
            continue
        if json_depth_exceeds(line, limits.max_json_depth):
            raise InputError(
                f"{name}: line {i} nests JSON deeper than {limits.max_json_depth} levels; flatten the record "
                "(or raise ISOSCOPE_MAX_JSON_DEPTH)"
            )
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):  # JSONDecodeError, and numbers too long to convert
            raise InputError(f"{name}: line {i} is not valid JSON; each line must be one JSON object") from None
        if not isinstance(obj, dict):
            raise InputError(f'{name}: line {i} is not a JSON object like {{"sentence1": ..., "sentence2": ...}}')
        obj = {replace_surrogates(k, stats): v for k, v in obj.items()}
        keys.update(dict.fromkeys(obj))
        if len(keys) > limits.max_columns:
            raise InputError(
                f"{name}: the records use more than {limits.max_columns} different keys; "
                "keep the text and a few metadata fields (or raise ISOSCOPE_MAX_COLUMNS)"
            )
        records.append({k: _clip(v, cell, stats) for k, v in obj.items()})
        if len(records) > limits.max_rows:
            break
    if not records:
        raise InputError(f"{name}: the file is empty")
    return frame_of({k: [r.get(k) for r in records] for k in keys})
