"""Verified folders: a manifest of every file's SHA-256, written last by an export (``isoscope.export``) and
checked whenever Isoscope loads the folder again, so a damaged or edited exported model is refused in one line
instead of giving silently different vectors. A folder without a manifest (any other model) is not checked.

The manifest is read by the bounded JSON reader (``isoscope.data.jsonfile``, its ``SCHEMA``), and every name it
lists must be a relative path inside the folder (``isoscope.paths.inside``), all of them checked before any file
is read or hashed.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from isoscope.cache import atomic_write_bytes, file_sha256
from isoscope.data.jsonfile import ANY, SHA256, Int, MapOf, Str, Struct, read_json
from isoscope.errors import InputError
from isoscope.paths import inside

MANIFEST_FILE = "isoscope-export.json"
MANIFEST_FORMAT = "isoscope-export"
MANIFEST_VERSION = 1
SCHEMA = Struct({"format": Str((MANIFEST_FORMAT,)), "files": MapOf(SHA256)}, {"version": Int(lo=1), "provenance": ANY})


def folder_files(folder: Path) -> list[str]:
    """Every regular file under ``folder`` (relative POSIX paths, sorted), the manifest left out."""
    return sorted(
        p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file() and p.name != MANIFEST_FILE
    )


def write_manifest(folder: str | Path, provenance: dict[str, Any]) -> Path:
    """Write ``isoscope-export.json``: the SHA-256 of every file now in ``folder`` and ``provenance`` (JSON-able)."""
    folder = Path(folder)
    files = {name: file_sha256(folder / name) for name in folder_files(folder)}
    doc = {"format": MANIFEST_FORMAT, "version": MANIFEST_VERSION, "provenance": provenance, "files": files}
    path = folder / MANIFEST_FILE
    atomic_write_bytes(path, (json.dumps(doc, indent=1) + "\n").encode("utf-8"))
    return path


def read_manifest(folder: str | Path) -> dict[str, Any] | None:
    """The manifest of an exported folder, checked against the files (InputError in one line naming the first
    file that is missing, changed or added); None for a folder with no manifest."""
    folder = Path(folder)
    path = folder / MANIFEST_FILE
    if not os.path.lexists(path):
        return None
    doc = read_json(path, what=f"{folder.name}/{MANIFEST_FILE}", schema=SCHEMA, fix="export the model again")
    files = doc["files"]
    targets = {name: inside(folder, name, what=f"{folder.name}/{MANIFEST_FILE} lists a file") for name in files}
    for name, digest in sorted(files.items()):
        target = targets[name]
        if not target.is_file():
            raise InputError(f"{folder.name}: exported file {name} is missing; the folder is damaged: export it again")
        if file_sha256(target) != digest:
            raise InputError(
                f"{folder.name}: exported file {name} does not match its checksum in {MANIFEST_FILE}; the folder "
                "was changed or damaged: export it again"
            )
    extra = sorted(set(folder_files(folder)) - set(files))
    if extra:
        raise InputError(
            f"{folder.name}: file {extra[0]} is not part of the export ({MANIFEST_FILE}); remove it or export again"
        )
    return doc
