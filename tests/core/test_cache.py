"""Atomic writes and the content-keyed array cache (corrupt files are dropped, never unpickled)."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import numpy as np
import pytest

import isoscope.cache as cache_mod
from isoscope.cache import (
    ArrayCache,
    NpyBlocks,
    atomic_save_npy,
    atomic_write_bytes,
    default_cache_dir,
    make_key,
    text_digest,
)


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


def test_npy_blocks_stream_rows_into_place_and_leave_nothing_when_short(tmp_path: Path) -> None:
    want = np.arange(30, dtype=np.int32).reshape(10, 3)
    path = tmp_path / "a.npy"
    with NpyBlocks(path, (10, 3), np.int32) as out:
        assert not path.exists()  # nothing under the final name until every row is there
        for a, b in ((0, 4), (4, 4), (4, 9), (9, 10)):  # an empty block too
            out.write(want[a:b])
    np.testing.assert_array_equal(np.load(path, allow_pickle=False), want)
    assert [p.name for p in tmp_path.iterdir()] == ["a.npy"]
    with pytest.raises(ValueError, match="does not fit"), NpyBlocks(path, (10, 3), np.int32) as out:
        out.write(want[:, :2])
    with pytest.raises(ValueError, match="9 of 10 rows"), NpyBlocks(path, (10, 3), np.int32) as out:
        out.write(want[:9])
    np.testing.assert_array_equal(np.load(path, allow_pickle=False), want)  # the old file kept, no temporary left
    assert [p.name for p in tmp_path.iterdir()] == ["a.npy"]


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
    assert _files(tmp_cache.root) == ["k.npy"]  # one file per entry: the checksum is inside


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


# ---------------------------------------------------------------- checksums (issue 17)


def _data_span(path: Path) -> tuple[int, int]:
    """(start, end) of the array data inside a cache entry (after the .npy header, before the trailer)."""
    with open(path, "rb") as f:
        np.lib.format.read_magic(f)
        np.lib.format.read_array_header_1_0(f)
        start = f.tell()
    return start, path.stat().st_size - cache_mod.TRAILER_BYTES


def test_half_zeroed_entry_is_dropped_not_served(tmp_cache: ArrayCache) -> None:
    """The header intact and every value finite: only the checksum can tell (sts printed null, issue 17)."""
    arr = np.random.default_rng(1).standard_normal((64, 8)).astype(np.float32) + 3.0  # no zeros inside
    tmp_cache.put("k", arr)
    p = tmp_cache.path("k")
    start, end = _data_span(p)
    data = bytearray(p.read_bytes())
    data[(start + end) // 2 : end] = bytes(end - (start + end) // 2)
    p.write_bytes(bytes(data))
    assert np.isfinite(np.load(p, allow_pickle=False)).all()  # the damage is invisible to shape and finiteness
    assert tmp_cache.get("k", expected_rows=64, expected_cols=8) is None
    assert not p.exists()


def test_entry_without_checksum_is_dropped(tmp_cache: ArrayCache) -> None:
    tmp_cache.root.mkdir(parents=True)
    np.save(tmp_cache.path("k"), np.ones((4, 3), np.float32))  # an entry of the format before checksums
    assert tmp_cache.get("k") is None and not tmp_cache.path("k").exists()


def test_entries_stay_loadable_npy(tmp_cache: ArrayCache) -> None:
    arr = np.arange(12, dtype=np.float32).reshape(4, 3)
    tmp_cache.put("k", arr)
    np.testing.assert_array_equal(np.load(tmp_cache.path("k"), allow_pickle=False), arr)  # numpy ignores the trailer


# ---------------------------------------------------------------- unreadable caches (issue 17)


def _deny(monkeypatch, root: Path) -> None:
    """Every file operation under ``root`` fails with EACCES, as in a folder of mode 000 (root ignores modes)."""
    import errno

    def denied(path) -> bool:
        return str(path).startswith(str(root))

    def guard(real):
        def wrapper(self, *a, **k):
            if denied(self):
                raise PermissionError(errno.EACCES, "Permission denied", str(self))
            return real(self, *a, **k)

        return wrapper

    for name in ("exists", "read_bytes", "mkdir", "unlink", "stat"):
        monkeypatch.setattr(Path, name, guard(getattr(Path, name)))
    real_open = os.open

    def os_open(path, *a, **k):
        if denied(path):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_open(path, *a, **k)

    monkeypatch.setattr(cache_mod.os, "open", os_open)


def test_unreadable_cache_warns_once_and_computes(tmp_path: Path, monkeypatch, caplog) -> None:
    cache = ArrayCache(tmp_path / "emb")
    cache.put("k", np.ones((2, 2), np.float32))
    _deny(monkeypatch, tmp_path / "emb")
    cache_mod._warned.clear()
    with caplog.at_level("WARNING", logger="isoscope.cache"):
        for _ in range(3):
            assert cache.get("k") is None
            cache.put("k2", np.ones((2, 2), np.float32))  # no exception
    warnings = [r.getMessage() for r in caplog.records if r.name == "isoscope.cache"]
    assert len(warnings) == 1 and "Permission denied" in warnings[0], warnings
    monkeypatch.undo()
    assert cache.get("k") is not None  # the entry was not deleted because it could not be read


def _as_user(uid: int | None, fn) -> tuple[int, str]:
    """Run ``fn() -> str`` in a forked child as ``uid`` (None: this user); returns (status, what it returned,
    or the error). Forked, not executed anew: the interpreter may live where that user cannot read."""
    import traceback

    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        status, out = 0, ""
        try:
            os.close(r)
            if uid is not None:
                os.setgroups([])
                os.setgid(uid)
                os.setuid(uid)
            out = fn()
        except BaseException:
            status, out = 1, traceback.format_exc()
        finally:
            os.write(w, out.encode())
            os._exit(status)
    os.close(w)
    chunks = []
    while chunk := os.read(r, 65536):
        chunks.append(chunk)
    os.close(r)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), b"".join(chunks).decode()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_mode_000_entry_and_500_folder_as_a_user() -> None:
    """Real permissions: an entry of mode 000 in a folder of mode 500, used by a non-root user (as root, the
    check runs in a child switched to the 'nobody' user: root ignores file modes)."""
    import logging
    import shutil
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="isoscope-perm-", dir="/tmp"))  # reachable by 'nobody'
    cache_dir = base / "emb"
    ArrayCache(cache_dir).put("k", np.ones((2, 2), np.float32))
    uid = 65534 if os.geteuid() == 0 else None
    if uid is not None:
        os.chmod(base, 0o755)
        os.chown(cache_dir, uid, uid)
        os.chown(cache_dir / "k.npy", uid, uid)
    os.chmod(cache_dir / "k.npy", 0o000)
    os.chmod(cache_dir, 0o500)

    def use_the_cache() -> str:
        records: list[str] = []
        handler = logging.Handler()
        handler.emit = lambda rec: records.append(rec.getMessage())  # type: ignore[method-assign]
        logging.getLogger("isoscope.cache").addHandler(handler)
        cache_mod._warned.clear()
        cache = ArrayCache(cache_dir)
        assert cache.get("k") is None  # unreadable: skipped
        cache.put("k", np.zeros((2, 2), np.float32))  # unwritable folder: skipped
        cache.put("j", np.zeros((2, 2), np.float32))
        return "\n".join(records)

    try:
        status, out = _as_user(uid, use_the_cache)
    finally:
        os.chmod(cache_dir, 0o755)
        os.chmod(cache_dir / "k.npy", 0o644)
        shutil.rmtree(base)
    assert status == 0, out
    lines = [x for x in out.splitlines() if x.strip()]
    assert len(lines) == 1 and "Permission denied" in lines[0], lines


# ---------------------------------------------------------------- permissions of what we write (issue 17)


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_atomic_writes_follow_the_umask(tmp_path: Path, umask: int) -> None:
    """mkstemp made every output 0600 whatever the umask; a new file gets 0666 & ~umask, like open()."""
    old = os.umask(umask)
    try:
        atomic_write_bytes(tmp_path / "a.bin", b"x")
        atomic_save_npy(tmp_path / "b.npy", np.ones(2))
        ArrayCache(tmp_path / "c").put("k", np.ones(2))
        with open(tmp_path / "plain", "wb"):
            pass
    finally:
        os.umask(old)
    expected = 0o666 & ~umask
    for p in (tmp_path / "a.bin", tmp_path / "b.npy", tmp_path / "c" / "k.npy", tmp_path / "plain"):
        assert p.stat().st_mode & 0o777 == expected, (p.name, oct(p.stat().st_mode & 0o777))
