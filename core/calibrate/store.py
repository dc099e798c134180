"""Fitted calibrators kept on disk, so the same fit is never paid twice (a restarted dashboard, a rerun notebook).

A fitted calibrator is named by a ``CalibratorKey``: its method string, its flow settings as JSON ("" for the
defaults) and the key of the vectors it was fitted on (a content key, such as ``services.keyed.Vectors.key``).
It is kept in ``<root>/calibrators/<make_key(method, flow_json, fit_key)>/`` (``root``: the cache folder,
``isoscope.cache.default_cache_dir()``, unless given) as safetensors + JSON (``Calibrator.save``; never pickle),
and read back with ``load_calibrator``, which checks what it reads (bounds, checksum). A folder that does not
load is dropped and the calibrator is fitted again; a disk that cannot be written only costs a refit next time.

key = CalibratorKey("whitening", "", fit_key)
calibrator = load_stored(key)            # None when not kept (or dropped as unreadable)
if calibrator is None:
    calibrator = key.calibrator().fit(x)   # (n, d) float32
    keep(calibrator, key)
"""

from __future__ import annotations

import json
import logging
import shutil
from dataclasses import dataclass
from pathlib import Path

from isoscope.cache import default_cache_dir, make_key
from isoscope.calibrate.base import JSON_NAME, Calibrator, load_calibrator
from isoscope.errors import InputError

log = logging.getLogger(__name__)

STORE_FOLDER = "calibrators"  # under the cache folder


@dataclass(frozen=True)
class CalibratorKey:
    """What names a fitted calibrator: its method (``isoscope.calibrate.methods``), its flow settings and the
    vectors it was fitted on."""

    method: str
    flow_json: str  # the flow's parameters as JSON (Flow().get_params()); "" for the defaults (and for every method without a flow)
    fit_key: str  # the key of the vectors it is fitted on

    def folder(self, root: str | Path | None = None) -> Path:
        """Where the calibrator is kept: ``root`` (default: the cache folder) / calibrators / a hash of the key."""
        base = Path(root) if root is not None else default_cache_dir()
        return base / STORE_FOLDER / make_key(self.method, self.flow_json, self.fit_key)

    def calibrator(self) -> Calibrator:
        """The unfitted calibrator the key names (``make_calibrator`` with the flow settings)."""
        from isoscope.calibrate.factory import make_calibrator
        from isoscope.calibrate.flow import Flow

        flow = Flow(**json.loads(self.flow_json)) if self.flow_json else None
        return make_calibrator(self.method, flow=flow)


def is_stored(key: CalibratorKey, root: str | Path | None = None) -> bool:
    """Whether ``load_stored`` will find the calibrator (and read it, unless its files were damaged since)."""
    try:
        return (key.folder(root) / JSON_NAME).is_file()
    except OSError:
        return False


def load_stored(key: CalibratorKey, root: str | Path | None = None) -> Calibrator | None:
    """The kept calibrator, checked as ``load_calibrator`` checks a folder; None when there is none. A folder that
    does not load (damaged, changed, unreadable) is dropped, so the next fit replaces it."""
    folder = key.folder(root)
    try:  # exists() itself raises PermissionError in a folder we may not enter
        if (folder / JSON_NAME).exists():
            return load_calibrator(folder)
    except (InputError, OSError) as exc:
        log.warning("dropping the unreadable cached calibrator %s: %s", folder, exc)
        shutil.rmtree(folder, ignore_errors=True)
    return None


def keep(calibrator: Calibrator, key: CalibratorKey, root: str | Path | None = None) -> None:
    """Write the fitted ``calibrator`` where ``load_stored(key)`` finds it; a read-only or full disk is logged
    (it only costs a refit next time)."""
    folder = key.folder(root)
    try:
        calibrator.save(folder)
    except OSError as exc:
        log.warning("could not keep the fitted calibrator in %s: %s", folder, exc)
