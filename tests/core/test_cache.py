"""Atomic writes and the content-keyed array cache (corrupt files are dropped, never unpickled)."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import numpy as np
import pytest

import core.cache as cache_mod
from core.cache import ArrayCache, atomic_save_npy, atomic_write_bytes, default_cache_dir, make_key, text_digest


def _files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


# ---------------------------------------------------------------- atomic writes


def test_atomic_write_creates_parents_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "out.bin"
    atomic_write_bytes(target, b"hello")
    assert target.read_bytes() == b"hello"
    assert _files(target.parent) == ["out.bin"]


def test_atomic_write_replaces_existing(tmp_path: Path) -> None:
    target = tmp_path / "out.bin"
    atomic_write_bytes(target, b"old")
    atomic_write_bytes(target, b"new content")
    assert target.read_bytes() == b"new content"
    assert _files(tmp_path) == ["out.bin"]


@pytest.mark.parametrize("exc", [OSError("disk full"), KeyboardInterrupt()])
def test_failing_write_keeps_old_file_and_removes_temp(tmp_path: Path, monkeypatch, exc) -> None:
    target = tmp_path / "out.bin"
    target.write_bytes(b"old and good")

    def fail(fd: int) -> None:  # the new bytes are in the temp file, but the write is not finished
        raise exc

    monkeypatch.setattr(cache_mod.os, "fsync", fail)
    with pytest.raises(type(exc)):
        atomic_write_bytes(target, b"new but never completed" * 1000)
    assert target.read_bytes() == b"old and good"
    assert _files(tmp_path) == ["out.bin"]


def test_failing_write_midway_through_the_data(tmp_path: Path, monkeypatch) -> None:
    """A file object whose write dies after half the bytes: the target is untouched."""
    target = tmp_path / "out.npy"
    atomic_save_npy(target, np.arange(6, dtype=np.float32).reshape(2, 3))
    real_fdopen = os.fdopen

    class HalfWriter:
        def __init__(self, f) -> None:
            self.f = f

        def __enter__(self):
            return self

        def __exit__(self, *a) -> None:
            self.f.close()

        def write(self, data: bytes) -> int:
            self.f.write(data[: len(data) // 2])
            raise OSError("no space left on device")

    monkeypatch.setattr(cache_mod.os, "fdopen", lambda fd, mode: HalfWriter(real_fdopen(fd, mode)))
    with pytest.raises(OSError, match="no space"):
        atomic_save_npy(target, np.ones((100, 3), np.float32))
    monkeypatch.undo()
    np.testing.assert_array_equal(np.load(target, allow_pickle=False), np.arange(6).reshape(2, 3))
    assert _files(tmp_path) == ["out.npy"]


def test_atomic_save_npy_roundtrip_and_refuses_objects(tmp_path: Path) -> None:
    arr = np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2]  # non-contiguous view
    atomic_save_npy(tmp_path / "a.npy", arr)
    np.testing.assert_array_equal(np.load(tmp_path / "a.npy", allow_pickle=False), arr)
    with pytest.raises(ValueError):
        atomic_save_npy(tmp_path / "b.npy", np.array([{"x": 1}], dtype=object))
    assert _files(tmp_path) == ["a.npy"]


# ---------------------------------------------------------------- keys


def test_make_key_is_stable_and_distinguishes_parts() -> None:
    assert make_key("emb", "fp", "mean", 256) == make_key("emb", "fp", "mean", 256)
    assert make_key("emb", "fp", "mean", 256) != make_key("emb", "fp", "cls", 256)
    assert make_key("ab", "c") != make_key("a", "bc")
    assert len(make_key("x")) == 40


def test_text_digest_order_and_boundaries() -> None:
    assert text_digest(["a", "b"]) == text_digest(["a", "b"])
    assert text_digest(["a", "b"]) != text_digest(["b", "a"])
    assert text_digest(["ab", "c"]) != text_digest(["a", "bc"])
    assert text_digest([]) != text_digest([""])
    assert text_digest(["\ud800 lone surrogate"])  # does not raise


def test_default_cache_dir_honours_env(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("ISOSCOPE_CACHE", str(tmp_path))
    assert default_cache_dir() == tmp_path
    assert ArrayCache().root == tmp_path / "embeddings"


# ---------------------------------------------------------------- ArrayCache


def test_put_get_roundtrip(tmp_cache: ArrayCache) -> None:
    arr = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    assert tmp_cache.get("k") is None
    tmp_cache.put("k", arr)
    got = tmp_cache.get("k", expected_rows=4, expected_cols=3)
    np.testing.assert_array_equal(got, arr)
    assert got.dtype == np.float32
    assert _files(tmp_cache.root) == ["k.npy"]


def _write_pickle_npy(path: Path) -> None:
    """A .npy holding an object array: loading it would need pickle."""
    buf_path = path.with_suffix(".tmp.npy")
    np.save(buf_path, np.array([{"evil": 1}, None], dtype=object), allow_pickle=True)
    buf_path.rename(path)


def _write_npz(path: Path) -> None:
    with open(path, "wb") as f:
        np.savez(f, a=np.ones((4, 3)))


CORRUPTIONS = {
    "truncated": lambda p: p.write_bytes(p.read_bytes()[:60]),
    "garbage": lambda p: p.write_bytes(b"this is not numpy at all"),
    "empty": lambda p: p.write_bytes(b""),
    "pickled_object_array": _write_pickle_npy,
    "raw_pickle": lambda p: p.write_bytes(pickle.dumps(np.ones((4, 3)))),
    "npz_archive": _write_npz,
    "wrong_rows": lambda p: np.save(p, np.ones((5, 3), np.float32)),
    "wrong_cols": lambda p: np.save(p, np.ones((4, 7), np.float32)),
    "one_dimensional": lambda p: np.save(p, np.ones(12, np.float32)),
    "nan": lambda p: np.save(p, np.full((4, 3), np.nan, np.float32)),
    "strings": lambda p: np.save(p, np.full((4, 3), "x")),
}


@pytest.mark.parametrize("kind", sorted(CORRUPTIONS))
def test_corrupt_file_is_dropped(tmp_cache: ArrayCache, kind: str) -> None:
    tmp_cache.put("k", np.ones((4, 3), np.float32))
    CORRUPTIONS[kind](tmp_cache.path("k"))
    assert tmp_cache.get("k", expected_rows=4, expected_cols=3) is None
    assert not tmp_cache.path("k").exists()


def test_put_on_unwritable_root_does_not_raise(tmp_path: Path) -> None:
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    cache = ArrayCache(blocker / "embeddings")
    cache.put("k", np.ones((2, 2), np.float32))  # logs a warning, no exception
    assert cache.get("k") is None
