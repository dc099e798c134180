"""On-disk cache of arrays, keyed by content; atomic writes that follow the umask; every entry carries its key
and a checksum, both verified on read, so a damaged entry, or a valid entry under another entry's name (two
files swapped), is dropped and recomputed, never served.

Only regular files are read back (a FIFO or a device under an entry's name would hang or never end), and an
entry's size is checked against the shape its header gives (and the shape the caller expects) before the
file is read.

A cache must never break the computation it speeds up: an entry or folder that cannot be read or written
(permissions, a read-only or full disk) is skipped with one warning per folder, and the work is done anyway.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import logging
import math
import os
import secrets
import shutil
import stat
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import numpy as np

from isoscope.errors import DiskFull
from isoscope.paths import open_regular

try:
    import fcntl
except ImportError:  # not on Windows: nothing is locked there
    fcntl = None

log = logging.getLogger(__name__)

CHECKSUM_MAGIC = b"ISOSHA3\x00"  # then the SHA-256 of the entry's key, then the SHA-256 of (that + the payload)
TRAILER_BYTES = len(CHECKSUM_MAGIC) + 64
MAX_NPY_HEADER = 65_536  # bytes of a .npy header read before its shape is checked
_warned: set[tuple[str, str]] = set()
_warned_lock = threading.Lock()


def default_cache_dir() -> Path:
    """``$ISOSCOPE_CACHE`` or ``~/.cache/isoscope``."""
    return Path(os.environ.get("ISOSCOPE_CACHE") or Path.home() / ".cache" / "isoscope")


def text_digest(texts: Iterable[str]) -> str:
    """Order-sensitive hash of a list of texts."""
    h = hashlib.sha256()
    for t in texts:
        b = t.encode("utf-8", "surrogatepass")
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.hexdigest()


def file_sha256(path: str | Path) -> str:
    """SHA-256 (hex) of a regular file's bytes (``isoscope.paths.open_regular``), read in blocks."""
    h = hashlib.sha256()
    with open_regular(path) as f:
        while block := f.read(8 * 2**20):
            h.update(block)
    return h.hexdigest()


_thread_locks: dict[str, threading.Lock] = {}
_thread_locks_lock = threading.Lock()


@contextlib.contextmanager
def file_lock(path: str | Path, waiting: Callable[[], None] | None = None) -> Iterator[None]:
    """Held by one thread of one process at a time: a lock per path in this process, then an advisory ``flock``
    on ``path`` (created, never deleted) for the others. ``waiting()`` is called once, before blocking, when
    another holder has it. Where no file lock can be had (no ``fcntl``, a folder that cannot be written, a
    path that is not a regular file: a FIFO there must not hang us) only the threads of this process are
    serialised."""
    key = os.path.abspath(path)
    with _thread_locks_lock:
        local = _thread_locks.setdefault(key, threading.Lock())
    told = False
    if not local.acquire(blocking=False):
        if waiting is not None:
            waiting()
            told = True
        local.acquire()
    fd = -1
    try:
        if fcntl is not None:
            try:
                flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
                fd = os.open(path, flags, 0o600)
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    os.close(fd)
                    fd = -1
            except OSError:
                fd = -1
        if fd >= 0:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if waiting is not None and not told:
                    waiting()
                fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        if fd >= 0:
            os.close(fd)  # releases the flock
        local.release()


def make_key(*parts: object) -> str:
    """Stable key from printable parts."""
    return hashlib.sha256("\x1f".join(map(str, parts)).encode()).hexdigest()[:40]


def warn_once(where: Path | str, what: str, message: str, *args: object) -> None:
    """Log ``message`` the first time something of kind ``what`` goes wrong in folder ``where`` (per process)."""
    key = (str(where), what)
    with _warned_lock:
        if key in _warned:
            return
        _warned.add(key)
    log.warning(message, *args)


_NEW_FILE = (
    os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
)


def check_free(path: Path, nbytes: int) -> None:
    """``DiskFull`` when the file system holding ``path`` has fewer than ``nbytes`` bytes free (checked before
    they are written; a folder whose free space cannot be read is not checked)."""
    folder = Path(path).parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return
    if nbytes > free:
        raise DiskFull(nbytes, path)


@contextlib.contextmanager
def disk_full_as(path: Path, nbytes: int) -> Iterator[None]:
    """The ``ENOSPC`` of a write inside the block as ``DiskFull(nbytes, path)``."""
    try:
        yield
    except OSError as exc:
        if exc.errno == errno.ENOSPC and not isinstance(exc, DiskFull):
            raise DiskFull(nbytes, path) from None
        raise


def _create_temp(folder: Path, name: str) -> tuple[int, Path]:
    """A new file next to the target (a fresh name, created under O_EXCL, so never through a link), with mode
    0666 so the umask decides its permissions (``tempfile.mkstemp`` would make it 0600 whatever the umask)."""
    for _ in range(100):
        tmp = folder / f".{name}.{secrets.token_hex(6)}.tmp"
        try:
            return os.open(tmp, os.O_WRONLY | _NEW_FILE, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"could not create a temporary file in {folder}")


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write to a temporary file in the same folder, fsync, then rename over ``path``.

    The file gets the permissions the umask gives a new file (0644 under the usual umask 022). ``DiskFull``
    before anything is written when the disk lacks the room.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    check_free(path, len(data))
    fd, tmp = _create_temp(path.parent, path.name)
    try:
        with disk_full_as(path, len(data)), os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _pwrite(fd: int, data: bytes | memoryview, pos: int) -> int:
    """``os.pwrite`` where there is one (not on Windows: a seek, then a write)."""
    if hasattr(os, "pwrite"):
        return os.pwrite(fd, data, pos)
    os.lseek(fd, pos, os.SEEK_SET)
    return os.write(fd, data)


class PartialNpy:
    """A float32 (n, d) .npy file filled block by block under a ``.partial`` name, then renamed into place.

    It never follows a link: a new file is created with O_EXCL | O_NOFOLLOW after whatever held its name is
    removed (a planted symlink goes, its target is never touched), and a file reopened to resume is opened
    with O_NOFOLLOW and must be a regular file with the expected header and size. Rows are written with
    ``pwrite``, never through a memory map, so a full disk is an ``OSError`` (``DiskFull``) and not a SIGBUS;
    the free space for the rows still to be written is checked before they are computed.
    """

    def __init__(self, fd: int, path: Path, shape: tuple[int, int], offset: int) -> None:
        self.fd, self.path, self.shape, self.offset = fd, path, shape, offset

    @staticmethod
    def header(shape: tuple[int, int]) -> bytes:
        buf = io.BytesIO()
        np.lib.format.write_array_header_1_0(buf, {"descr": "<f4", "fortran_order": False, "shape": shape})
        return buf.getvalue()

    @classmethod
    def create(cls, path: Path, shape: tuple[int, int]) -> PartialNpy:
        """A new, empty (zero-filled) file of ``shape`` at ``path``; ``DiskFull`` before it is made."""
        head = cls.header(shape)
        size = len(head) + 4 * shape[0] * shape[1]
        check_free(path, size)
        path.unlink(missing_ok=True)  # a link is removed, never followed
        fd = os.open(path, os.O_RDWR | _NEW_FILE, 0o666)
        try:
            with disk_full_as(path, size):
                os.ftruncate(fd, size)
                _pwrite(fd, head, 0)
        except BaseException:
            os.close(fd)
            path.unlink(missing_ok=True)
            raise
        return cls(fd, path, shape, len(head))

    @classmethod
    def reopen(cls, path: Path, shape: tuple[int, int]) -> PartialNpy:
        """The file an interrupted run left at ``path``; ValueError (or OSError) when it is a link, not a regular
        file, or not a float32 array of ``shape`` with the size that implies."""
        flags = os.O_RDWR | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(path, flags | getattr(os, "O_BINARY", 0))
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise ValueError("not a regular file")
            os.lseek(fd, 0, os.SEEK_SET)
            got, dtype, offset = _npy_layout(os.read(fd, min(st.st_size, MAX_NPY_HEADER)))
            if dtype != np.dtype("<f4") or got != tuple(shape) or st.st_size != offset + 4 * shape[0] * shape[1]:
                raise ValueError(f"partial file holds {dtype} {got}, {st.st_size:,} bytes")
            if hasattr(os, "set_blocking"):
                os.set_blocking(fd, True)
        except BaseException:
            os.close(fd)
            raise
        return cls(fd, path, tuple(shape), offset)

    def write(self, start: int, rows: np.ndarray) -> None:
        """Rows ``start ..`` from ``rows`` (m, d)."""
        data = memoryview(np.ascontiguousarray(rows, "<f4")).cast("B")
        pos = self.offset + 4 * start * self.shape[1]
        with disk_full_as(self.path, len(data)):
            while len(data):
                done = _pwrite(self.fd, data, pos)
                data, pos = data[done:], pos + done

    def sync(self) -> None:
        """The rows written so far, on disk."""
        with disk_full_as(self.path, self.offset + 4 * self.shape[0] * self.shape[1]):
            os.fsync(self.fd)

    def finish(self, final: Path) -> None:
        """fsync, close and rename over ``final`` (atomic: ``final`` only ever holds a complete array)."""
        self.sync()
        self.close()
        os.replace(self.path, final)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def npy_bytes(array: np.ndarray) -> bytes:
    """The bytes of a .npy file of ``array`` (never pickled: object arrays raise ValueError)."""
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(array), allow_pickle=False)
    return buf.getvalue()


def atomic_save_npy(path: Path, array: np.ndarray) -> None:
    """Save an array as .npy atomically (never a half-written file under the final name)."""
    atomic_write_bytes(path, npy_bytes(array))


class NpyBlocks:
    """A .npy of ``shape`` and ``dtype`` written a block of rows at a time, in row order, under a temporary name,
    renamed over ``path`` on ``close`` once every row is written (never a half-written file under the final
    name; one block in memory at a time). ``DiskFull`` before anything is written when the disk lacks the room.

    with NpyBlocks(path, (n,), np.float32) as out:
        for block in blocks: out.write(block)
    """

    def __init__(self, path: Path, shape: tuple[int, ...], dtype) -> None:
        self.path, self.shape, self.dtype = Path(path), tuple(shape), np.dtype(dtype)
        head = io.BytesIO()
        np.lib.format.write_array_header_1_0(
            head, {"descr": np.lib.format.dtype_to_descr(self.dtype), "fortran_order": False, "shape": self.shape}
        )
        self.size = len(head.getvalue()) + self.dtype.itemsize * int(np.prod(self.shape))
        self.path.parent.mkdir(parents=True, exist_ok=True)
        check_free(self.path, self.size)
        fd, self.tmp = _create_temp(self.path.parent, self.path.name)
        self.file = os.fdopen(fd, "wb")
        self.file.write(head.getvalue())
        self.rows = 0

    def write(self, block: np.ndarray) -> None:
        block = np.ascontiguousarray(block, self.dtype)
        if block.shape[1:] != self.shape[1:] or self.rows + len(block) > self.shape[0]:
            raise ValueError(f"a block of {block.shape} after {self.rows} rows does not fit {self.shape}")
        with disk_full_as(self.path, block.nbytes):
            self.file.write(block.tobytes())
        self.rows += len(block)

    def close(self) -> None:
        try:
            if self.rows != self.shape[0]:
                raise ValueError(f"{self.rows} of {self.shape[0]} rows written to {self.path.name}")
            with disk_full_as(self.path, self.size):
                self.file.flush()
                os.fsync(self.file.fileno())
            self.file.close()
            os.replace(self.tmp, self.path)
        except BaseException:
            self.discard()
            raise

    def discard(self) -> None:
        """Close and remove the temporary file (the final name is left as it was)."""
        self.file.close()
        Path(self.tmp).unlink(missing_ok=True)

    def __enter__(self) -> NpyBlocks:
        return self

    def __exit__(self, kind, *_) -> None:
        if kind is None:
            self.close()
        else:
            self.discard()


def _key_digest(key: str) -> bytes:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()


def with_checksum(data: bytes, key: str = "") -> bytes:
    """``data`` followed by a trailer naming ``key`` and checksumming both (a .npy stays loadable: numpy ignores
    bytes after the array)."""
    kd = _key_digest(key)
    return data + CHECKSUM_MAGIC + kd + hashlib.sha256(kd + data).digest()


def verified(data: bytes, key: str | None = None) -> bytes:
    """The payload of ``with_checksum(payload, key)``; ValueError when the trailer is missing, does not match
    the bytes, or (``key`` given) belongs to another key."""
    if len(data) < TRAILER_BYTES or data[-TRAILER_BYTES:-64] != CHECKSUM_MAGIC:
        raise ValueError("no checksum (written by an older version, or cut short)")
    payload, kd = data[:-TRAILER_BYTES], data[-64:-32]
    if hashlib.sha256(kd + payload).digest() != data[-32:]:
        raise ValueError("checksum mismatch (the file was changed or damaged after it was written)")
    if key is not None and kd != _key_digest(key):
        raise ValueError("the entry was written for another key (files renamed or swapped)")
    return payload


def _npy_layout(head: bytes) -> tuple[tuple[int, ...], np.dtype, int]:
    """(shape, dtype, header length) of the .npy whose first bytes are ``head``; ValueError when malformed."""
    stream = io.BytesIO(head)
    version = np.lib.format.read_magic(stream)
    read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
    shape, _, dtype = read(stream, max_header_size=MAX_NPY_HEADER)
    if dtype.hasobject:
        raise ValueError("an object array (would need pickle)")
    return tuple(shape), dtype, stream.tell()


def read_entry(path: Path, key: str, shape: tuple[int | None, ...] | None = None) -> bytes | None:
    """The verified .npy bytes of the cache entry ``path`` written for ``key``, or None when there is none.

    ValueError when the entry is not a regular file, its header's shape differs from ``shape`` (``None``
    dimensions match anything), its size is not what that header implies, or its trailer does not match:
    all checked before the data is read.
    """
    from isoscope.paths import NotRegularFile, open_regular

    try:
        f = open_regular(path)
    except FileNotFoundError:
        return None
    except NotRegularFile as exc:
        raise ValueError(exc.strerror) from None
    with f:
        size = os.fstat(f.fileno()).st_size
        head = f.read(min(size, MAX_NPY_HEADER))
        got, dtype, header = _npy_layout(head)
        if shape is not None and (
            len(got) != len(shape) or any(w is not None and g != w for g, w in zip(got, shape, strict=True))
        ):
            raise ValueError(f"shape {got} does not match the expected {shape}")
        expected = header + math.prod(got) * dtype.itemsize + TRAILER_BYTES
        if size != expected:
            raise ValueError(f"{size:,} bytes where its header implies {expected:,}")
        data = head + f.read(size - len(head) + 1)
    if len(data) != size:
        raise ValueError("the file changed while it was read")
    return verified(data, key)


class ArrayCache:
    """A folder of .npy files named by key, each with a checksum trailer verified on every read.

    Reads never unpickle; a damaged, foreign or mismatching file is deleted and recomputed. Folders or
    files that cannot be read or written are skipped (one warning per folder): the caller computes.
    """

    def __init__(self, root: str | Path | None = None) -> None:
        self.root = Path(root) if root is not None else default_cache_dir() / "embeddings"

    def path(self, key: str) -> Path:
        return self.root / f"{key}.npy"

    def get(self, key: str, expected_rows: int | None = None, expected_cols: int | None = None) -> np.ndarray | None:
        """The cached array, or None when absent, unreadable, damaged, written for another key, of the wrong
        shape or not finite. With ``expected_rows`` or ``expected_cols`` the entry must be 2-D."""
        p = self.path(key)
        shape = None if expected_rows is None and expected_cols is None else (expected_rows, expected_cols)
        try:
            data = read_entry(p, key, shape)
            if data is None:
                return None
            arr = np.load(io.BytesIO(data), allow_pickle=False)
            if not isinstance(arr, np.ndarray):  # an .npz archive under our name
                raise ValueError("not a single array")
            if arr.dtype.kind not in "fiub" or not np.isfinite(arr).all():
                raise ValueError("not finite numbers")
        except OSError as exc:  # no permission, an I/O error: compute instead
            warn_once(self.root, "unusable", "cannot use the cache in %s (%s); computing without it", self.root, exc)
            return None
        except Exception as exc:  # damaged, foreign, swapped or special file: drop it and recompute
            log.warning("dropping the damaged cache file %s: %s", p, exc)
            try:
                p.unlink(missing_ok=True)
            except OSError:
                pass
            return None
        return arr

    def lock(self, name: str) -> contextlib.AbstractContextManager[None]:
        """Held by one process at a time (``file_lock`` on ``.locks/<name>.lock``), so that two processes asking
        for the same cold entries compute them once: the second waits, then reads. A folder that cannot be
        written is no lock."""
        try:
            (self.root / ".locks").mkdir(parents=True, exist_ok=True)
        except OSError:
            return contextlib.nullcontext()
        return file_lock(self.root / ".locks" / f"{name}.lock")

    def has(self, key: str) -> bool:
        """Whether an entry for ``key`` is on disk (not verified: ``get`` checks it when it is read)."""
        try:
            return self.path(key).is_file()
        except OSError:
            return False

    def put(self, key: str, array: np.ndarray) -> None:
        try:
            atomic_write_bytes(self.path(key), with_checksum(npy_bytes(array), key))
        except OSError as exc:  # a read-only or full disk must not break the computation
            warn_once(self.root, "unusable", "cannot use the cache in %s (%s); computing without it", self.root, exc)
