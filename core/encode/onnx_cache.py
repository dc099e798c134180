"""ONNX models cached on disk, verified on every read: ``model_bytes(folder, key, build) -> bytes``.

Each model is ``<key>.onnx`` with a sidecar ``<key>.json`` holding its key, size and SHA-256, written atomically
*after* the model (so a model without a matching sidecar is never trusted; a model and sidecar moved under
another key, the pair of another model, are rebuilt, never served). A read opens only a regular file
(never a symlink, a folder or a device: ``O_NOFOLLOW`` plus ``fstat``), reads at most the size the sidecar
states, and checks size and hash; anything else (truncated, changed, missing sidecar, foreign file under the
name) is logged as a warning and rebuilt. The caller hands ONNX Runtime the verified bytes, never the path, so
the file cannot change between the check and the load. Builds go to a temporary folder next to the cache and
are renamed into place (atomic on one file system), so a crash never leaves a half-written model under its name.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

from isoscope.cache import atomic_write_bytes
from isoscope.data.jsonfile import parse_json

log = logging.getLogger(__name__)

SIDECAR_FORMAT = "isoscope-onnx-model"
SIDECAR_VERSION = 2  # 2: the sidecar names its key
MAX_SIDECAR_BYTES = 4096
BuildFn = Callable[[Path], None]  # writes the model file at the given path


class DamagedModel(Exception):
    """A cached model that fails verification (why, in one line)."""


def paths(folder: Path, key: str) -> tuple[Path, Path]:
    """(model, sidecar) of ``key`` in ``folder``."""
    return folder / f"{key}.onnx", folder / f"{key}.json"


def _read_regular(path: Path, limit: int) -> bytes:
    """The bytes of ``path`` if it is a regular file of at most ``limit`` bytes; DamagedModel otherwise."""
    # O_NONBLOCK: opening a FIFO must not wait for a writer (regular files ignore it); fstat then refuses it
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise DamagedModel(f"{path.name} is missing") from None
    except OSError as exc:  # ELOOP: a symlink under O_NOFOLLOW; EACCES, ...
        raise DamagedModel(f"{path.name} cannot be opened as a regular file ({exc.strerror})") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise DamagedModel(f"{path.name} is not a regular file")
    with os.fdopen(fd, "rb") as f:
        if info.st_size > limit:
            raise DamagedModel(f"{path.name} is {info.st_size:,} bytes, more than the {limit:,} expected")
        return f.read(limit + 1)


def _sidecar(key: str, size: int, digest: str) -> bytes:
    meta = {"format": SIDECAR_FORMAT, "version": SIDECAR_VERSION, "key": key, "size": size, "sha256": digest}
    return json.dumps(meta).encode()


def read_verified(folder: Path, key: str) -> bytes:
    """The model bytes of ``key``, checked against its sidecar; DamagedModel (with the reason) when they differ."""
    model, side = paths(folder, key)
    try:
        meta = parse_json(_read_regular(side, MAX_SIDECAR_BYTES), what=side.name)  # isoscope.data.jsonfile
    except ValueError:  # InputError: too deep, not JSON, not an object
        raise DamagedModel(f"{side.name} is not a valid sidecar") from None
    if not isinstance(meta, dict) or meta.get("format") != SIDECAR_FORMAT or meta.get("version") != SIDECAR_VERSION:
        raise DamagedModel(f"{side.name} is not a sidecar of this version")
    if meta.get("key") != key:
        raise DamagedModel(f"{side.name} belongs to another model (files renamed or swapped)")
    size, digest = meta.get("size"), meta.get("sha256")
    if not isinstance(size, int) or size < 0 or not isinstance(digest, str):
        raise DamagedModel(f"{side.name} has no valid size and sha256")
    data = _read_regular(model, size)
    if len(data) != size:
        raise DamagedModel(f"{model.name} is {len(data):,} bytes, the sidecar says {size:,} (cut short?)")
    if hashlib.sha256(data).hexdigest() != digest:
        raise DamagedModel(f"{model.name} does not match its SHA-256 (changed or damaged after it was written)")
    return data


def _build(folder: Path, key: str, build: BuildFn) -> bytes:
    model, side = paths(folder, key)
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder, prefix=".build-") as tmp:
        built = Path(tmp) / "model.onnx"
        build(built)
        data = built.read_bytes()
        os.replace(built, model)  # same folder: atomic; a symlink or junk under the name is replaced, not followed
    atomic_write_bytes(
        side, _sidecar(key, len(data), hashlib.sha256(data).hexdigest())
    )  # after the model, never before
    return data


def model_bytes(folder: Path, key: str, build: BuildFn, *, what: str = "ONNX model") -> bytes:
    """The verified bytes of the cached model ``key`` in ``folder``; built with ``build(path)`` when missing,
    and rebuilt with a warning when the cached copy fails verification."""
    model, side = paths(folder, key)
    if not os.path.lexists(model) and not os.path.lexists(side):
        return _build(folder, key, build)
    try:
        return read_verified(folder, key)
    except DamagedModel as exc:
        log.warning("the cached %s in %s is damaged (%s); rebuilding it", what, folder, exc)
    for p in (side, model):  # the sidecar first: a model is never left with a sidecar that vouches for it
        if p.is_dir() and not p.is_symlink():
            raise IsADirectoryError(f"{p} is a folder where a cached model belongs; remove it")  # never delete it
        p.unlink(missing_ok=True)
    return _build(folder, key, build)
