"""``isoscope data demo``: the demo data shipped inside the package (``isoscope.assets``), copied into a folder of
the user's, so that every command reads it by a plain file name from any folder (``--pairs demo_pairs.csv``)
after a ``pip install`` that has no checkout and no ``assets/``.

``write_demo(dest)`` copies ``isoscope.paths.DEMO_FILES`` under ``dest``: a file already there with the demo's
bytes is kept, and one with other bytes is refused (an InputError naming it) before anything is written, so a
user's own file of the same name is never overwritten.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from isoscope.errors import InputError
from isoscope.paths import ASSETS, DEMO_FILES


def _same_bytes(a: Path, b: Path) -> bool:
    if a.stat().st_size != b.stat().st_size:
        return False
    return a.read_bytes() == b.read_bytes()  # the demo's files are small (under 1 MB)


def write_demo(dest: str | Path) -> tuple[list[Path], list[Path]]:
    """Copy the demo files into ``dest`` (created): returns (the files written, the files already there)."""
    dest = Path(dest).expanduser()
    todo, kept = [], []
    for name in DEMO_FILES:
        source, target = ASSETS / name, dest / name
        if target.is_file() and _same_bytes(source, target):
            kept.append(target)
        elif os.path.lexists(target):
            raise InputError(f"{target} exists and is not the demo's file: move it, or pass --out ANOTHER_FOLDER")
        else:
            todo.append((source, target))
    for source, target in todo:
        target.parent.mkdir(parents=True, exist_ok=True)
        part = target.with_name(f".{target.name}.part")
        shutil.copyfile(source, part)
        part.replace(target)
    return [target for _, target in todo], kept
