"""Vectors from a Hugging Face ``datasets`` folder written by ``Dataset.save_to_disk``, read without ``datasets``.

Such a folder holds ``state.json`` (its Arrow shards, ``_data_files``), ``dataset_info.json`` (its features,
sometimes split sizes) and the shards: Arrow IPC streams, read by ``isoscope.data.vectors.arrow`` with their
batch headers checked first. A ``DatasetDict`` folder (``dataset_dict.json``) holds one folder per split: the
message names them. Its JSON files go through ``isoscope.data.jsonfile``; shard names must be relative paths
inside the folder (``isoscope.paths.inside``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from isoscope.data.jsonfile import Int, ListOf, MapOf, Nullable, Str, Struct, read_json
from isoscope.data.limits import DecodeLimits
from isoscope.data.vectors.arrow import ipc_sources, read_arrow
from isoscope.data.vectors.table import VectorTable
from isoscope.errors import InputError
from isoscope.paths import inside

MAX_JSON = 4 * 2**20
STATE = Struct({"_data_files": ListOf(Struct({"filename": Str()}), min_len=1)})
INFO = Struct({}, {"splits": Nullable(MapOf(Struct({}, {"num_examples": Nullable(Int(lo=0))})))})
SPLITS = Struct({"splits": ListOf(Str())})


def is_dataset_folder(path: Path) -> bool:
    return path.is_dir() and any((path / f).is_file() for f in ("state.json", "dataset_dict.json"))


def _json(path: Path, name: str, schema: Struct) -> Any:
    """A dataset's JSON file through the bounded reader (``isoscope.data.jsonfile``) and its schema."""
    return read_json(
        path,
        what=f"{name}: {path.name}",
        schema=schema,
        max_bytes=MAX_JSON,
        fix="save the dataset again with save_to_disk",
    )


def _claimed_rows(info: dict) -> int:
    splits = info.get("splits") or {}
    return sum(s.get("num_examples") or 0 for s in splits.values())


def dataset_shards(folder: Path, limits: DecodeLimits) -> list[Path]:
    """The Arrow shards ``state.json`` lists, each a plain name of an existing file in ``folder``."""
    name = folder.name
    if (folder / "dataset_dict.json").is_file() and not (folder / "state.json").is_file():
        listed = ", ".join(_json(folder / "dataset_dict.json", name, SPLITS)["splits"])[:200]
        raise InputError(f"{name}: a dataset with splits ({listed}); give one split's folder, e.g. {name}/train")
    files = _json(folder / "state.json", name, STATE)["_data_files"]
    info_path = folder / "dataset_info.json"
    if info_path.is_file() and (claimed := _claimed_rows(_json(info_path, name, INFO))) > limits.max_rows:
        raise InputError(f"{name}: {claimed:,} rows is over the limit of {limits.max_rows:,}; sample the dataset first")
    shards = []
    for entry in files:
        file = entry["filename"]
        path = inside(folder, file, what=f"{name}: state.json names a data file")
        if not path.is_file():
            raise InputError(f"{name}: its data file {file} is missing")
        shards.append(path)
    return shards


def read_dataset(folder: Path, *, column: str | None, text_column: str | None, limits: DecodeLimits) -> VectorTable:
    name = folder.name
    shards = dataset_shards(folder, limits)
    return read_arrow(ipc_sources(list(shards), name, limits), column=column, text_column=text_column, limits=limits)
