"""The landscape's JSON and npz files, written and read by the same typed records; reading is strict: a
missing, renamed or mistyped field fails loudly.

``Record`` is a dataclass that is its own schema: ``to_json()`` writes one key per field, ``parse(fields)``
reads the same keys back by each field's type (float, int, bool, str, tuples of them, nested records,
``X | None``), so the writer and the reader cannot disagree on a key. ``field(metadata=INLINE)`` puts a
nested record's keys in its parent's object; ``field(default=..., metadata=OPTIONAL)`` marks a field that
older files lack (read when present, else its default).

``Fields`` wraps one JSON object with the file it came from and its dotted position in it, so every error
names both (``.../pretrained/results.json: field 'flatness.hessian.eigenvalue' is missing``). A field
that is present but null reads as NaN: JSON has no NaN, and the writer turns undefined numbers into null.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Self

import numpy as np

from isoscope.landscape.store import read_arrays

RERUN = "written by another version? run `python -m isoscope landscape` again on it to rewrite it"


class ResultsSchemaError(Exception):
    """A landscape results file lacks a field this version reads, or holds a value of the wrong type.

    Not the user's mistake and not a value to show as NaN: results and reader disagree on the schema.
    """


@dataclass(frozen=True)
class Fields:
    """One JSON object, read field by field with its file and position for error messages."""

    data: Mapping[str, Any]
    file: Path
    where: str = ""

    def _name(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def fail(self, key: str, problem: str) -> ResultsSchemaError:
        return ResultsSchemaError(f"{self.file}: field '{self._name(key)}' {problem}; {RERUN}")

    def has(self, key: str) -> bool:
        return key in self.data

    def keys(self) -> list[str]:
        return [str(k) for k in self.data]

    def raw(self, key: str) -> Any:
        if key not in self.data:
            raise self.fail(key, "is missing")
        return self.data[key]

    def num(self, key: str) -> float:
        """A number; null (an undefined value written as NaN) reads as NaN."""
        v = self.raw(key)
        if v is None:
            return math.nan
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise self.fail(key, f"should be a number, not {type(v).__name__}")
        return float(v)

    def integer(self, key: str) -> int:
        v = self.raw(key)
        if isinstance(v, bool) or not isinstance(v, int | float) or not float(v).is_integer():
            raise self.fail(key, f"should be an integer, not {v!r:.40}")
        return int(v)

    def flag(self, key: str) -> bool:
        v = self.raw(key)
        if not isinstance(v, bool):
            raise self.fail(key, f"should be true or false, not {v!r:.40}")
        return v

    def text(self, key: str) -> str:
        v = self.raw(key)
        if not isinstance(v, str):
            raise self.fail(key, f"should be a string, not {type(v).__name__}")
        return v

    def nums(self, key: str) -> list[float]:
        v = self.raw(key)
        if not isinstance(v, list) or any(
            x is not None and (isinstance(x, bool) or not isinstance(x, int | float)) for x in v
        ):
            raise self.fail(key, "should be a list of numbers")
        return [math.nan if x is None else float(x) for x in v]

    def obj(self, key: str) -> Fields:
        v = self.raw(key)
        if not isinstance(v, Mapping):
            raise self.fail(key, f"should be an object, not {type(v).__name__}")
        return Fields(v, self.file, self._name(key))

    def opt(self, key: str) -> Fields | None:
        """An optional section: None when absent or null, else like ``obj``."""
        return None if self.data.get(key) is None else self.obj(key)

    def ints(self, key: str) -> list[int]:
        v = self.raw(key)
        if not isinstance(v, list) or any(
            isinstance(x, bool) or not isinstance(x, int | float) or not float(x).is_integer() for x in v
        ):
            raise self.fail(key, "should be a list of integers")
        return [int(x) for x in v]

    def texts(self, key: str) -> list[str]:
        v = self.raw(key)
        if not isinstance(v, list):
            raise self.fail(key, "should be a list of strings")
        return [str(x) for x in v]

    def items(self, key: str) -> list[Fields]:
        v = self.raw(key)
        if not isinstance(v, list) or not all(isinstance(x, Mapping) for x in v):
            raise self.fail(key, "should be a list of objects")
        return [Fields(x, self.file, f"{self._name(key)}[{i}]") for i, x in enumerate(v)]


# ---------------------------------------------------------------- records: one definition for writer and reader


@dataclass(frozen=True)
class _Entry:
    inline: bool = False
    optional: bool = False


_PLAIN = _Entry()


INLINE: Mapping[str, _Entry] = {"schema": _Entry(inline=True)}  # dataclasses.field(metadata=INLINE)
OPTIONAL: Mapping[str, _Entry] = {"schema": _Entry(optional=True)}  # dataclasses.field(default=..., metadata=OPTIONAL)


class Record:
    """A dataclass written as, and read from, one JSON object: a key per field, read by the field's type."""

    _types: ClassVar[dict[type, dict[str, Any]]] = {}

    @classmethod
    def fields(cls) -> tuple[str, ...]:
        """The field names, which are the JSON keys (an inline record's keys are its own fields')."""
        return tuple(f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]

    @classmethod
    def _hints(cls) -> dict[str, Any]:
        if cls not in Record._types:
            Record._types[cls] = typing.get_type_hints(cls)
        return Record._types[cls]

    @classmethod
    def parse(cls, f: Fields) -> Self:
        """The record in ``f`` (ResultsSchemaError naming the file and field when one is missing or mistyped)."""
        hints, values = cls._hints(), {}
        for fl in dataclasses.fields(cls):  # type: ignore[arg-type]
            spec = fl.metadata.get("schema", _PLAIN)
            if spec.optional and not f.has(fl.name):
                continue
            values[fl.name] = _read(f, fl.name, hints[fl.name], spec.inline)
        return cls(**values)

    def to_json(self) -> dict[str, Any]:
        """The JSON object ``parse`` reads back (NaN stays NaN here; the file writer turns it into null)."""
        out: dict[str, Any] = {}
        for fl in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, fl.name)
            if fl.metadata.get("schema", _PLAIN).inline:
                out.update(value.to_json())
            else:
                out[fl.name] = _dump(value)
        return out


def _dump(value: Any) -> Any:
    if isinstance(value, Record):
        return value.to_json()
    if isinstance(value, list | tuple):
        return [_dump(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _dump(v) for k, v in value.items()}
    return value


def _read(f: Fields, key: str, tp: Any, inline: bool = False) -> Any:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (types.UnionType, typing.Union) and type(None) in args:  # X | None: absent or null is None
        (inner,) = [a for a in args if a is not type(None)]
        return None if f.data.get(key) is None else _read(f, key, inner)
    if isinstance(tp, type) and issubclass(tp, Record):
        return tp.parse(f if inline else f.obj(key))
    scalar = {bool: f.flag, int: f.integer, float: f.num, str: f.text}
    if tp in scalar:
        return scalar[tp](key)
    if origin is tuple:
        item = args[0]
        if isinstance(item, type) and issubclass(item, Record):
            return tuple(item.parse(x) for x in f.items(key))
        lists = {float: f.nums, int: f.ints, str: f.texts}
        if item not in lists:
            raise TypeError(f"no schema for {tp}")
        got = tuple(lists[item](key))
        if args[-1] is not Ellipsis and len(got) != len(args):
            raise f.fail(key, f"should hold {len(args)} values, not {len(got)}")
        return got
    raise TypeError(f"no schema for {tp}")


def arrays(path: Path, required: tuple[str, ...]) -> dict[str, np.ndarray]:
    """The ``required`` arrays of an npz file (only those); ResultsSchemaError when the file or one is missing."""
    got = read_arrays(path)
    if got is None:
        raise ResultsSchemaError(f"{path}: file is missing or unreadable; {RERUN}")
    missing = [k for k in required if k not in got]
    if missing:
        raise ResultsSchemaError(f"{path}: array(s) {', '.join(missing)} missing; {RERUN}")
    return {k: np.asarray(got[k]) for k in required}
