"""On-disk cache of arrays, keyed by content; atomic writes; corrupt files are detected and dropped."""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)


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


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write to a temporary file in the same folder, fsync, then rename over ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_save_npy(path: Path, array: np.ndarray) -> None:
    """Save an array as .npy atomically (never a half-written file under the final name)."""
    import io

    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(array), allow_pickle=False)
    atomic_write_bytes(path, buf.getvalue())


class ArrayCache:
    """A folder of .npy files named by key. Reads never unpickle; bad files are deleted and recomputed."""

    def __init__(self, root: str | Path | None = None) -> None:
        self.root = Path(root) if root is not None else default_cache_dir() / "embeddings"

    def path(self, key: str) -> Path:
        return self.root / f"{key}.npy"

    def get(self, key: str, expected_rows: int | None = None, expected_cols: int | None = None) -> np.ndarray | None:
        """The cached array, or None when absent, unreadable, of the wrong shape or not finite."""
        p = self.path(key)
        if not p.exists():
            return None
        try:
            arr = np.load(p, allow_pickle=False)
            if not isinstance(arr, np.ndarray):  # an .npz archive under our name
                arr.close()
                raise ValueError("not a single array")
            if expected_rows is not None and (arr.ndim != 2 or arr.shape[0] != expected_rows):
                raise ValueError(f"shape {arr.shape} does not match {expected_rows} rows")
            if expected_cols is not None and (arr.ndim != 2 or arr.shape[1] != expected_cols):
                raise ValueError(f"shape {arr.shape} does not match {expected_cols} columns")
            if not np.isfinite(arr).all():
                raise ValueError("non-finite values")
        except Exception as exc:  # corrupt or foreign file: drop it and recompute
            log.warning("dropping corrupt cache file %s: %s", p, exc)
            p.unlink(missing_ok=True)
            return None
        return arr

    def put(self, key: str, array: np.ndarray) -> None:
        try:
            atomic_save_npy(self.path(key), array)
        except OSError as exc:  # a read-only or full disk must not break the computation
            log.warning("could not write cache %s: %s", self.path(key), exc)
