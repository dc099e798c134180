"""JSON files, bounded: the one reader of every JSON file Isoscope reads from a folder, a user's or its own.

doc = read_json(path, what="isoscope-export.json", schema=EXPORT, fix="export the model again")
check_json(path, what="tokenizer.json")   # a file another library parses: file, size, depth and top level only
doc = parse_json(data, what="header")     # bytes already read under their own bound (a safetensors header)

In this order, before anything in the file is believed:

1. a regular file (``isoscope.paths.open_regular``: never a FIFO or a device) of at most ``max_bytes``
   (``DecodeLimits.max_json_bytes``, ``ISOSCOPE_MAX_JSON_BYTES``, for a file Isoscope parses itself; a caller
   may give less);
2. its nesting depth, counted on the bytes with strings skipped (``json_depth_exceeds``), at most
   ``DecodeLimits.max_json_depth`` (``ISOSCOPE_MAX_JSON_DEPTH``), decided before ``json`` parses anything, so
   the parser's recursion never goes deeper than that;
3. UTF-8 text holding valid JSON whose top level is the type the file must have (``expect``);
4. its ``Schema``: each field's type and range, required or optional (``Struct``, ``MapOf``, ``ListOf``,
   ``Tuple``, ``Int``, ``Num``, ``Str``, ...), checked on the parsed value; fields a schema does not name
   are kept as they are (a newer writer may add some).

Every refusal is one line naming the file and the field, with the fix when the caller gives one
(``ledger.json: stages['embed'].outputs['xy.npy'] must be [bytes, sha256], not a list of 3``), raised as
``error``: an InputError, or the caller's own subclass (``AtlasDamaged``). A new format declares its
schema next to its reader and calls ``read_json`` from its first line.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from isoscope.data.limits import DecodeLimits, current_limits
from isoscope.errors import InputError, first_line
from isoscope.paths import NotRegularFile, open_regular

_STRUCTURE = b'"[]{}'
_DROP = bytes(b for b in range(256) if b not in _STRUCTURE)  # every byte but quotes and brackets
_CHUNK = 1 << 22  # bytes counted at a time (a few int64 arrays of this length)


def json_depth_exceeds(data: bytes | str, limit: int) -> bool:
    """True when arrays and objects in the JSON text ``data`` nest deeper than ``limit``, brackets inside strings
    not counted (an unterminated string runs to the end: ``json`` reports it). Decided before ``json`` parses
    anything, whose recursion a deep value would exhaust: linear in ``len(data)`` and recursion-free (escaped
    backslashes, then escaped quotes, then every byte but quotes and brackets dropped, as UTF-8 never has those
    bytes inside a character; numpy then counts quotes and brackets)."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if raw.count(b"[") + raw.count(b"{") <= limit:  # too few brackets to nest that deep
        return False
    import numpy as np

    kept = raw.replace(b"\\\\", b"").replace(b'\\"', b"").translate(None, _DROP)
    step = np.zeros(256, np.int8)
    step[list(b"[{")], step[list(b"]}")] = 1, -1
    depth = quotes = 0
    for start in range(0, len(kept), _CHUNK):
        chunk = np.frombuffer(kept, np.uint8, count=min(_CHUNK, len(kept) - start), offset=start)
        is_quote = chunk == ord('"')
        in_string = (np.cumsum(is_quote, dtype=np.int64) + quotes) % 2 == 1  # (m,) after an opening quote
        levels = np.cumsum(np.where(in_string, 0, step[chunk]), dtype=np.int64) + depth  # (m,) depth after each
        if levels.max() > limit:
            return True
        depth, quotes = int(levels[-1]), quotes + int(is_quote.sum())
    return False


# ---------------------------------------------------------------- schemas


class Mismatch(Exception):
    """A value that is not what its schema says (``at``: where, as ``a.b['c'][0]``); made a one-line error by
    ``parse_json``."""

    def __init__(self, at: str, wanted: str, value: Any = None, *, missing: bool = False) -> None:
        super().__init__(at, wanted)
        self.at, self.wanted, self.value, self.missing = at, wanted, value, missing

    def describe(self) -> str:
        if self.missing:
            return f"{self.at} is missing ({self.wanted})"
        return f"{self.at + ' ' if self.at else ''}must be {self.wanted}, not {kind(self.value)}"


def kind(value: Any) -> str:
    """What a JSON value is, in words (``a list of 3``, ``the string 'big'``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        text = repr(value)
        return f"the number {text if len(text) <= 24 else text[:20] + '...'}"
    if isinstance(value, str):
        return f"the string '{value[:40]}{'...' if len(value) > 40 else ''}'"
    if isinstance(value, list):
        return f"a list of {len(value)}"
    return "an object"


def _key(at: str, name: str) -> str:
    return f"{at}.{name}" if at else name


class Schema:
    """What a JSON value must be: ``check(value, at)`` returns it, or raises ``Mismatch`` naming where."""

    name: str = ""

    def check(self, value: Any, at: str = "") -> Any:
        raise NotImplementedError

    def describe(self) -> str:
        return self.name


@dataclass(frozen=True)
class Anything(Schema):
    def check(self, value: Any, at: str = "") -> Any:
        return value

    def describe(self) -> str:
        return "any value"


ANY = Anything()


def _range(lo: float | None, hi: float | None) -> str:
    if lo is not None and hi is not None:
        return f" from {lo:,} to {hi:,}"
    return f" >= {lo:,}" if lo is not None else f" <= {hi:,}" if hi is not None else ""


@dataclass(frozen=True)
class Int(Schema):
    """A whole number (not ``true``, not ``2.0``) within ``lo`` .. ``hi``."""

    lo: int | None = None
    hi: int | None = None

    def check(self, value: Any, at: str = "") -> Any:
        ok = isinstance(value, int) and not isinstance(value, bool)
        if not ok or (self.lo is not None and value < self.lo) or (self.hi is not None and value > self.hi):
            raise Mismatch(at, self.describe(), value)
        return value

    def describe(self) -> str:
        return "a whole number" + _range(self.lo, self.hi)


@dataclass(frozen=True)
class Num(Schema):
    """A finite number within ``lo`` .. ``hi``."""

    lo: float | None = None
    hi: float | None = None

    def check(self, value: Any, at: str = "") -> Any:
        ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
        if not ok or (self.lo is not None and value < self.lo) or (self.hi is not None and value > self.hi):
            raise Mismatch(at, self.describe(), value)
        return value

    def describe(self) -> str:
        return "a finite number" + _range(self.lo, self.hi)


@dataclass(frozen=True)
class Str(Schema):
    """A string: one of ``choices`` when given, matching ``pattern`` (whole) when given."""

    choices: tuple[str, ...] = ()
    pattern: str | None = None
    name: str = ""

    def check(self, value: Any, at: str = "") -> Any:
        if (
            not isinstance(value, str)
            or (self.choices and value not in self.choices)
            or (self.pattern is not None and re.fullmatch(self.pattern, value) is None)
        ):
            raise Mismatch(at, self.describe(), value)
        return value

    def describe(self) -> str:
        if self.name:
            return self.name
        return " or ".join(f"'{c}'" for c in self.choices) if self.choices else "a string"


SHA256 = Str(pattern="[0-9a-f]{64}", name="a SHA-256 (64 hex digits)")


@dataclass(frozen=True)
class Bool(Schema):
    def check(self, value: Any, at: str = "") -> Any:
        if not isinstance(value, bool):
            raise Mismatch(at, "true or false", value)
        return value

    def describe(self) -> str:
        return "true or false"


@dataclass(frozen=True)
class Nullable(Schema):
    """``null`` or ``inner``."""

    inner: Schema

    def check(self, value: Any, at: str = "") -> Any:
        return None if value is None else self.inner.check(value, at)

    def describe(self) -> str:
        return f"{self.inner.describe()} or null"


@dataclass(frozen=True)
class ListOf(Schema):
    """A list of ``min_len`` .. ``max_len`` items, each ``item``."""

    item: Schema
    min_len: int = 0
    max_len: int | None = None

    def check(self, value: Any, at: str = "") -> Any:
        if not isinstance(value, list) or len(value) < self.min_len or (self.max_len and len(value) > self.max_len):
            raise Mismatch(at, self.describe(), value)
        for i, item in enumerate(value):
            self.item.check(item, f"{at}[{i}]")
        return value

    def describe(self) -> str:
        size = f" of at least {self.min_len}" if self.min_len else ""
        return f"a list{size}" + (f" of at most {self.max_len:,}" if self.max_len else "")


@dataclass(frozen=True)
class Tuple(Schema):
    """A list of exactly these items (``[bytes, sha256]``)."""

    items: tuple[Schema, ...]
    name: str = ""

    def check(self, value: Any, at: str = "") -> Any:
        if not isinstance(value, list) or len(value) != len(self.items):
            raise Mismatch(at, self.describe(), value)
        for i, (item, schema) in enumerate(zip(value, self.items, strict=True)):
            schema.check(item, f"{at}[{i}]")
        return value

    def describe(self) -> str:
        return self.name or f"a list of {len(self.items)}"


@dataclass(frozen=True)
class MapOf(Schema):
    """An object of any keys (``key``: a ``Str`` they must be), each value ``value``."""

    value: Schema
    key: Str = Str()

    def check(self, value: Any, at: str = "") -> Any:
        if not isinstance(value, dict):
            raise Mismatch(at, "an object", value)
        for k, v in value.items():
            here = f"{at}['{k[:60]}']"
            self.key.check(k, here + " (its name)")
            self.value.check(v, here)
        return value

    def describe(self) -> str:
        return "an object"


@dataclass(frozen=True)
class Struct(Schema):
    """An object with ``required`` fields and ``optional`` ones, each of its schema; other fields are kept as they
    are."""

    required: Mapping[str, Schema] = field(default_factory=dict)
    optional: Mapping[str, Schema] = field(default_factory=dict)

    def check(self, value: Any, at: str = "") -> Any:
        if not isinstance(value, dict):
            raise Mismatch(at, "an object", value)
        for name, schema in self.required.items():
            if name not in value:
                raise Mismatch(_key(at, name), schema.describe(), missing=True)
            schema.check(value[name], _key(at, name))
        for name, schema in self.optional.items():
            if name in value:
                schema.check(value[name], _key(at, name))
        return value

    def describe(self) -> str:
        return "an object"


# ---------------------------------------------------------------- reading


_TOP = {dict: "a JSON object", list: "a JSON list", str: "a JSON string"}


def _say(what: str, reason: str, fix: str) -> str:
    return f"{what}: {reason}" + (f"; {fix}" if fix else "")


def parse_json(
    data: bytes | str,
    *,
    what: str,
    expect: type | None = dict,
    schema: Schema | None = None,
    max_depth: int | None = None,
    error: type[InputError] = InputError,
    fix: str = "",
) -> Any:
    """The JSON value of ``data`` (read under its own bound): its depth counted first (``max_depth``, default
    ``DecodeLimits.max_json_depth``), then parsed, its top level ``expect`` (None: any) and ``schema`` checked.
    ``error`` (one line: ``what``, the field, ``fix``) when it is not."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    limit = max_depth if max_depth is not None else current_limits().max_json_depth
    if json_depth_exceeds(raw, limit):
        raise error(_say(what, f"nests JSON deeper than {limit} levels (ISOSCOPE_MAX_JSON_DEPTH)", fix))
    try:
        value = json.loads(data if isinstance(data, str) else raw.decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise error(_say(what, "not UTF-8 text", fix)) from None
    except (ValueError, RecursionError) as exc:  # JSONDecodeError; a number too long to convert
        raise error(_say(what, f"not valid JSON ({first_line(exc, 80)})", fix)) from None
    if expect is not None and not isinstance(value, expect):
        wanted = _TOP.get(expect, f"a JSON {expect.__name__}")
        raise error(_say(what, f"must hold {wanted}, not {kind(value)}", fix))
    if schema is not None:
        try:
            schema.check(value, "")
        except Mismatch as bad:
            raise error(_say(what, bad.describe(), fix)) from None
    return value


def _read(path: Path, what: str, max_bytes: int, hint: str, error: type[InputError], fix: str) -> bytes:
    """The bytes of the regular file ``path``, at most ``max_bytes`` (whatever it grows to while read)."""
    try:
        f = open_regular(path)
    except NotRegularFile as exc:
        raise error(_say(what, f"a {exc.kind}, not a regular file", fix)) from None
    with f:
        size = os.fstat(f.fileno()).st_size
        data = _read_at_most(f, max_bytes + 1) if size <= max_bytes else b""
    if size > max_bytes or len(data) > max_bytes:
        raise error(_say(what, f"{max(size, len(data)):,} bytes, more than the {max_bytes:,} allowed{hint}", fix))
    return data


def _read_at_most(f, limit: int, block: int = 1 << 16) -> bytes:
    """Up to ``limit`` bytes of ``f``, a block at a time: memory follows what the file holds, never the limit (a
    single ``f.read(limit)`` sets aside the whole limit for a file of a few bytes)."""
    blocks, total = [], 0
    while total < limit and (chunk := f.read(min(block, limit - total))):
        blocks.append(chunk)
        total += len(chunk)
    return b"".join(blocks)


def read_json(
    path: str | Path,
    *,
    what: str | None = None,
    expect: type | None = dict,
    schema: Schema | None = None,
    max_bytes: int | None = None,
    limits: DecodeLimits | None = None,
    error: type[InputError] = InputError,
    fix: str = "",
) -> Any:
    """The JSON value of the file ``path``, bounded and checked (the module's steps 1-4); ``what`` names it in
    messages (default: the path). A missing or unreadable file is the ``OSError`` of opening it."""
    limits = limits or current_limits()
    what = what or str(path)
    hint = "" if max_bytes is not None else " (ISOSCOPE_MAX_JSON_BYTES)"
    data = _read(Path(path), what, max_bytes or limits.max_json_bytes, hint, error, fix)
    return parse_json(
        data, what=what, expect=expect, schema=schema, max_depth=limits.max_json_depth, error=error, fix=fix
    )


def check_json(
    path: str | Path,
    *,
    what: str | None = None,
    max_bytes: int | None = None,
    limits: DecodeLimits | None = None,
    error: type[InputError] = InputError,
    fix: str = "",
) -> None:
    """Steps 1 and 2, and an object at the top, for a JSON file another library parses (transformers'
    ``config.json`` and ``tokenizer.json``, a sentence-transformers module's ``config.json``): nothing is parsed
    here, so its size bound is that of any file read (``DecodeLimits.max_bytes``, ``ISOSCOPE_MAX_BYTES``)."""
    limits = limits or current_limits()
    what = what or str(path)
    hint = "" if max_bytes is not None else " (ISOSCOPE_MAX_BYTES)"
    data = _read(Path(path), what, max_bytes or limits.max_bytes, hint, error, fix)
    limit = limits.max_json_depth
    if json_depth_exceeds(data, limit):
        raise error(_say(what, f"nests JSON deeper than {limit} levels (ISOSCOPE_MAX_JSON_DEPTH)", fix))
    if not data.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{"):
        raise error(_say(what, "must hold a JSON object", fix))
