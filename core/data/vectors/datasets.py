"""Vectors from a Hugging Face ``datasets`` folder written by ``Dataset.save_to_disk``, read without ``datasets``.

Such a folder holds ``state.json`` (its Arrow shards, ``_data_files``), ``dataset_info.json`` (its features,
sometimes split sizes) and the shards: Arrow IPC streams, read by ``isoscope.data.vectors.arrow`` with their
batch headers checked first. A ``DatasetDict`` folder (``dataset_dict.json``) holds one folder per split: the
message names them. Shard names must be plain file names inside the folder.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from isoscope.data.limits import DecodeLimits
from isoscope.data.vectors.arrow import ipc_sources, read_arrow
from isoscope.data.vectors.table import VectorTable
from isoscope.errors import InputError

MAX_JSON = 4 * 2**20
_PLAIN = re.compile(r"[\w.\-]+")


def is_dataset_folder(path: Path) -> bool:
    return path.is_dir() and any((path / f).is_file() for f in ("state.json", "dataset_dict.json"))


def _json(path: Path, name: str) -> Any:
    try:
        if path.stat().st_size > MAX_JSON:
            raise InputError(f"{name}: {path.name} is larger than {MAX_JSON // 2**20} MiB")
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        if isinstance(exc, InputError):
            raise
        raise InputError(
            f"{name}: {path.name} is not readable JSON; save the dataset again with save_to_disk"
        ) from None


def _claimed_rows(info: Any) -> int:
    splits = info.get("splits") if isinstance(info, dict) else None
    if not isinstance(splits, dict):
        return 0
    return sum(int(s.get("num_examples") or 0) for s in splits.values() if isinstance(s, dict))


def dataset_shards(folder: Path, limits: DecodeLimits) -> list[Path]:
    """The Arrow shards ``state.json`` lists, each a plain name of an existing file in ``folder``."""
    name = folder.name
    if (folder / "dataset_dict.json").is_file() and not (folder / "state.json").is_file():
        splits = _json(folder / "dataset_dict.json", name)
        names = splits.get("splits") if isinstance(splits, dict) else None
        listed = ", ".join(str(s) for s in names or [])[:200] if isinstance(names, list) else "?"
        raise InputError(f"{name}: a dataset with splits ({listed}); give one split's folder, e.g. {name}/train")
    state = _json(folder / "state.json", name)
    files = state.get("_data_files") if isinstance(state, dict) else None
    if not isinstance(files, list) or not files:
        raise InputError(f"{name}: state.json lists no data files; save the dataset again with save_to_disk")
    info_path = folder / "dataset_info.json"
    if info_path.is_file() and (claimed := _claimed_rows(_json(info_path, name))) > limits.max_rows:
        raise InputError(f"{name}: {claimed:,} rows is over the limit of {limits.max_rows:,}; sample the dataset first")
    shards = []
    for entry in files:
        file = entry.get("filename") if isinstance(entry, dict) else None
        if not isinstance(file, str) or not _PLAIN.fullmatch(file) or file.startswith("."):
            raise InputError(f"{name}: state.json names a data file outside the folder ({str(file)[:80]!r}); refused")
        path = folder / file
        if not path.is_file():
            raise InputError(f"{name}: its data file {file} is missing")
        shards.append(path)
    return shards


def read_dataset(folder: Path, *, column: str | None, text_column: str | None, limits: DecodeLimits) -> VectorTable:
    name = folder.name
    shards = dataset_shards(folder, limits)
    return read_arrow(ipc_sources(list(shards), name, limits), column=column, text_column=text_column, limits=limits)
