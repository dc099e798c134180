"""Strict reading of the landscape's JSON and npz files: a missing, renamed or mistyped field fails loudly.

``Fields`` wraps one JSON object with the file it came from and its dotted position in it, so every error
names both (``.../pretrained/results.json: field 'flatness.hessian.eigenvalue' is missing``). A field
that is present but null reads as NaN: JSON has no NaN, and the writer turns undefined numbers into null.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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

    def items(self, key: str) -> list[Fields]:
        v = self.raw(key)
        if not isinstance(v, list) or not all(isinstance(x, Mapping) for x in v):
            raise self.fail(key, "should be a list of objects")
        return [Fields(x, self.file, f"{self._name(key)}[{i}]") for i, x in enumerate(v)]


def arrays(path: Path, required: tuple[str, ...]) -> dict[str, np.ndarray]:
    """The ``required`` arrays of an npz file (only those); ResultsSchemaError when the file or one is missing."""
    got = read_arrays(path)
    if got is None:
        raise ResultsSchemaError(f"{path}: file is missing or unreadable; {RERUN}")
    missing = [k for k in required if k not in got]
    if missing:
        raise ResultsSchemaError(f"{path}: array(s) {', '.join(missing)} missing; {RERUN}")
    return {k: np.asarray(got[k]) for k in required}
