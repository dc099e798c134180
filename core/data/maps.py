"""Memory-mapped arrays that check their file before each read: a file cut short after it was mapped would
otherwise kill the process with SIGBUS at the first read of a page past its new end (no Python error, no
message; under ``isoscope app`` the server dies).

xy = checked_map(np.load(path, mmap_mode="r"), "raw/xy.npy")   # an np.memmap whose reads check the file first
xy[a:b]                                                        # MapShrunk (an InputError) if the file shrank

Before a read through the array (indexing, a ufunc or reduction, a numpy function, ``copy``, ``astype``,
``tobytes``, ``tolist``) the size of the mapped file is read from the descriptor the map holds (``fstat``: a
microsecond) and compared with the bytes the map covers; a file replaced by a rename keeps the mapped one
alive and is not an error. A plain view taken with ``np.asarray(m)`` is no longer checked: take it per read
(``np.asarray(m[a:b])``). Call ``check_maps`` before code that hands a map's buffer to C (``other[m]``, a
FAISS search) reads it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from isoscope.errors import InputError


class MapShrunk(InputError):
    """A memory-mapped file that holds fewer bytes than when it was mapped (cut short by someone else)."""


class CheckedMap(np.memmap):
    """An ``np.memmap`` (read-only) that checks its file's size before each read; see the module docstring."""

    _need: int = 0
    _label: str = ""

    def __array_finalize__(self, obj: Any) -> None:
        super().__array_finalize__(obj)
        self._need = getattr(obj, "_need", 0)
        self._label = getattr(obj, "_label", "")

    def check(self) -> None:
        """MapShrunk when the mapped file now holds fewer bytes than the map covers."""
        mm = getattr(self, "_mmap", None)
        if mm is None or not self._need:
            return
        try:
            size = mm.size()
        except (OSError, ValueError):  # a closed map: numpy raises its own error on the read
            return
        if size < self._need:
            raise MapShrunk(
                f"{self._label or 'a memory-mapped file'} was cut short after it was opened ({size:,} bytes, "
                f"{self._need:,} expected); it was changed on disk: open it again (or rebuild it)"
            )

    def __getitem__(self, key: Any) -> Any:
        self.check()
        res = super().__getitem__(key)
        if isinstance(res, CheckedMap) and getattr(res, "_mmap", None) is None:  # a copy (fancy indexing)
            return res.view(np.ndarray)
        return res

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        check_maps(inputs)
        plain = [np.asarray(x) if isinstance(x, CheckedMap) else x for x in inputs]
        if "out" in kwargs:
            check_maps(kwargs["out"])
            kwargs["out"] = tuple(np.asarray(x) if isinstance(x, CheckedMap) else x for x in kwargs["out"])
        return getattr(ufunc, method)(*plain, **kwargs)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        check_maps(args)
        check_maps(kwargs.values())
        return super().__array_function__(func, types, args, kwargs)

    def copy(self, *args: Any, **kwargs: Any) -> Any:
        self.check()
        return np.asarray(self).copy(*args, **kwargs)

    def astype(self, *args: Any, **kwargs: Any) -> Any:
        self.check()
        return np.asarray(self).astype(*args, **kwargs)

    def tobytes(self, *args: Any, **kwargs: Any) -> bytes:
        self.check()
        return np.asarray(self).tobytes(*args, **kwargs)

    def tolist(self) -> Any:
        self.check()
        return np.asarray(self).tolist()

    def __iter__(self):
        self.check()
        return iter(np.asarray(self))


def check_maps(values: Iterable[Any]) -> None:
    """``CheckedMap.check`` of every checked map among ``values`` (and in the lists and tuples among them)."""
    for v in values:
        if isinstance(v, CheckedMap):
            v.check()
        elif isinstance(v, list | tuple):
            check_maps(v)


def checked_map(array: np.ndarray, label: str) -> np.ndarray:
    """``array`` (from ``np.load(..., mmap_mode="r")`` or ``np.memmap``) as a ``CheckedMap`` covering the file's
    first ``offset + nbytes`` bytes, named ``label`` in its error; an array that maps no file is returned as is."""
    if not isinstance(array, np.memmap) or getattr(array, "_mmap", None) is None:
        return array
    out = array.view(CheckedMap)
    out._need = int(array.offset) + int(array.nbytes)
    out._label = label
    return out
