"""On-disk cache of arrays, keyed by content; atomic writes that follow the umask; every entry carries a
checksum that is verified on read, so a damaged entry is dropped and recomputed, never served.

A cache must never break the computation it speeds up: an entry or folder that cannot be read or written
(permissions, a read-only or full disk) is skipped with one warning per folder, and the work is done anyway.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import secrets
import threading
from collections.abc import Iterable
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

CHECKSUM_MAGIC = b"ISOSHA2\x00"  # then the 32-byte SHA-256 of every byte before it
TRAILER_BYTES = len(CHECKSUM_MAGIC) + 32
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


def _create_temp(folder: Path, name: str) -> tuple[int, Path]:
    """A new file next to the target, created with mode 0666 so the umask decides its permissions
    (``tempfile.mkstemp`` would make it 0600 whatever the umask)."""
    for _ in range(100):
        tmp = folder / f".{name}.{secrets.token_hex(6)}.tmp"
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"could not create a temporary file in {folder}")


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write to a temporary file in the same folder, fsync, then rename over ``path``.

    The file gets the permissions the umask gives a new file (0644 under the usual umask 022).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = _create_temp(path.parent, path.name)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def npy_bytes(array: np.ndarray) -> bytes:
    """The bytes of a .npy file of ``array`` (never pickled: object arrays raise ValueError)."""
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(array), allow_pickle=False)
    return buf.getvalue()


def atomic_save_npy(path: Path, array: np.ndarray) -> None:
    """Save an array as .npy atomically (never a half-written file under the final name)."""
    atomic_write_bytes(path, npy_bytes(array))


def with_checksum(data: bytes) -> bytes:
    """``data`` followed by a checksum trailer (a .npy stays loadable: numpy ignores bytes after the array)."""
    return data + CHECKSUM_MAGIC + hashlib.sha256(data).digest()


def verified(data: bytes) -> bytes:
    """The payload of ``with_checksum(payload)``; ValueError when the trailer is missing or does not match."""
    if len(data) < TRAILER_BYTES or data[-TRAILER_BYTES:-32] != CHECKSUM_MAGIC:
        raise ValueError("no checksum (written by an older version, or cut short)")
    payload = data[:-TRAILER_BYTES]
    if hashlib.sha256(payload).digest() != data[-32:]:
        raise ValueError("checksum mismatch (the file was changed or damaged after it was written)")
    return payload


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
        """The cached array, or None when absent, unreadable, damaged, of the wrong shape or not finite."""
        p = self.path(key)
        try:
            if not p.exists():
                return None
            data = p.read_bytes()
        except OSError as exc:  # no permission, an I/O error: compute instead
            warn_once(self.root, "unusable", "cannot use the cache in %s (%s); computing without it", self.root, exc)
            return None
        try:
            arr = np.load(io.BytesIO(verified(data)), allow_pickle=False)
            if not isinstance(arr, np.ndarray):  # an .npz archive under our name
                raise ValueError("not a single array")
            if expected_rows is not None and (arr.ndim != 2 or arr.shape[0] != expected_rows):
                raise ValueError(f"shape {arr.shape} does not match {expected_rows} rows")
            if expected_cols is not None and (arr.ndim != 2 or arr.shape[1] != expected_cols):
                raise ValueError(f"shape {arr.shape} does not match {expected_cols} columns")
            if arr.dtype.kind not in "fiub" or not np.isfinite(arr).all():
                raise ValueError("not finite numbers")
        except Exception as exc:  # damaged or foreign file: drop it and recompute
            log.warning("dropping the damaged cache file %s: %s", p, exc)
            try:
                p.unlink(missing_ok=True)
            except OSError:
                pass
            return None
        return arr

    def put(self, key: str, array: np.ndarray) -> None:
        try:
            atomic_write_bytes(self.path(key), with_checksum(npy_bytes(array)))
        except OSError as exc:  # a read-only or full disk must not break the computation
            warn_once(self.root, "unusable", "cannot use the cache in %s (%s); computing without it", self.root, exc)
