"""isoscope.data.maps: a memory map that checks its file before each read, so a file cut short after it was
mapped is an InputError naming it instead of SIGBUS. The cuts here stay within the map's last page, where an
unchecked read would see zeros rather than die: a missing check fails the test, it does not kill the runner."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from isoscope.data.maps import CheckedMap, MapShrunk, checked_map
from isoscope.errors import InputError


@pytest.fixture()
def mapped(tmp_path: Path) -> tuple[Path, np.ndarray]:
    path = tmp_path / "a.npy"
    np.save(path, np.arange(200, dtype=np.float32).reshape(100, 2), allow_pickle=False)  # 928 bytes: one page
    return path, checked_map(np.load(path, mmap_mode="r"), "atlas/a.npy")


def test_reads_are_the_arrays_and_copies_are_plain_arrays(mapped) -> None:
    _, m = mapped
    want = np.arange(200, dtype=np.float32).reshape(100, 2)
    assert isinstance(m, CheckedMap) and isinstance(m[10:20], CheckedMap)
    assert type(m[[1, 2]]) is np.ndarray and type(m * 2) is np.ndarray  # copies hold no map
    np.testing.assert_array_equal(m, want)
    assert float(m.sum()) == float(want.sum()) and int(np.searchsorted(m[:, 0], 10.0)) == 5
    assert checked_map(want, "x") is want  # an array in memory is returned as is


@pytest.mark.parametrize(
    "read",
    [
        lambda m: m[-1],
        lambda m: m[10:20],
        lambda m: m.sum(),
        lambda m: np.isfinite(m),
        lambda m: np.searchsorted(m[:, 0], 3.0),
        lambda m: np.concatenate([m, m]),
        lambda m: m.copy(),
        lambda m: m.astype(np.float64),
        lambda m: m.tobytes(),
        lambda m: m.tolist(),
        lambda m: list(m),
    ],
    ids=[
        "index",
        "slice",
        "reduce",
        "ufunc",
        "function",
        "function-list",
        "copy",
        "astype",
        "tobytes",
        "tolist",
        "iter",
    ],
)
def test_every_read_of_a_file_cut_short_is_an_input_error_naming_it(mapped, read) -> None:
    path, m = mapped
    os.truncate(path, path.stat().st_size - 8)  # one row short, within the page: an unchecked read sees zeros
    with pytest.raises(MapShrunk, match=r"atlas/a\.npy was cut short after it was opened \(920 bytes, 928 expected\)"):
        read(m)
    assert issubclass(MapShrunk, InputError)


def test_a_file_replaced_by_a_rename_keeps_the_mapped_one(mapped, tmp_path: Path) -> None:
    path, m = mapped
    np.save(tmp_path / "b.npy", np.zeros(3, np.float32), allow_pickle=False)
    os.replace(tmp_path / "b.npy", path)  # an atomic rewrite: the map holds the old file, which did not shrink
    assert float(m[-1, 1]) == 199.0
