"""Vectors files written the way other tools write them (numpy, pyarrow, safetensors' layout, a Hugging Face
``save_to_disk`` folder), for the loader, command and hostile tests. Nothing here uses Isoscope."""

from __future__ import annotations

import json
import struct
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.parquet as pq


def vector_array(vectors: np.ndarray, fixed: bool = False, value_type=None) -> pa.Array:
    """(n, d) -> a list<float> (or fixed_size_list<float, d>) Arrow array."""
    vectors = np.asarray(vectors)
    n, d = vectors.shape
    values = pa.array(vectors.reshape(-1), type=value_type)
    if fixed:
        return pa.FixedSizeListArray.from_arrays(values, d)
    return pa.ListArray.from_arrays(pa.array(np.arange(0, n * d + 1, d, dtype=np.int32)), values)


def vector_table(
    vectors: np.ndarray,
    texts: Sequence[str] | None = None,
    column: str = "emb",
    text_column: str = "text",
    fixed: bool = False,
    extra: dict | None = None,
) -> pa.Table:
    cols: dict[str, pa.Array] = {}
    if texts is not None:
        cols[text_column] = pa.array(list(texts), pa.string())
    cols[column] = vector_array(vectors, fixed)
    for k, v in (extra or {}).items():
        cols[k] = pa.array(v)
    return pa.table(cols)


def write_parquet(path: Path, vectors, texts=None, **kw) -> Path:
    pq.write_table(vector_table(vectors, texts, **kw), path)
    return path


def write_feather(path: Path, vectors, texts=None, compression: str = "lz4", **kw) -> Path:
    """Feather v2 (an Arrow IPC file), LZ4-compressed by default as pyarrow writes it."""
    feather.write_feather(vector_table(vectors, texts, **kw), path, compression=compression)
    return path


def write_arrow_stream(path: Path, table: pa.Table, compression: str | None = None, batch_rows: int = 1000) -> Path:
    options = pa.ipc.IpcWriteOptions(compression=compression)
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, table.schema, options=options) as writer:
        for batch in table.to_batches(max_chunksize=batch_rows):
            writer.write_batch(batch)
    return path


SAFETENSORS_DTYPES = {"float32": "F32", "float16": "F16", "float64": "F64", "int8": "I8", "uint8": "U8", "bool": "BOOL"}


def safetensors_bytes(tensors: dict[str, np.ndarray], bf16: Sequence[str] = ()) -> bytes:
    """The safetensors layout (8-byte header length, JSON header, raw little-endian data), written by hand so
    bfloat16 needs no torch: names in ``bf16`` are stored as the top 16 bits of their float32 values."""
    header: dict[str, dict] = {"__metadata__": {"format": "np"}}
    blobs, offset = [], 0
    for name, arr in tensors.items():
        if name in bf16:
            raw = (np.ascontiguousarray(arr, "<f4").view("<u4") >> 16).astype("<u2").tobytes()
            dtype = "BF16"
        else:
            a = np.ascontiguousarray(arr)
            raw, dtype = a.astype(a.dtype.newbyteorder("<")).tobytes(), SAFETENSORS_DTYPES[str(a.dtype)]
        header[name] = {"dtype": dtype, "shape": list(arr.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def bfloat16_round(x: np.ndarray) -> np.ndarray:
    """What a bfloat16 file written by ``safetensors_bytes`` holds (truncated float32), as float32."""
    return (np.ascontiguousarray(x, "<f4").view("<u4") & np.uint32(0xFFFF0000)).view("<f4")


def write_dataset_folder(folder: Path, table: pa.Table, shards: int = 1, num_examples: int | None = None) -> Path:
    """A folder laid out as ``datasets.Dataset.save_to_disk`` lays it out: Arrow streams ``data-0000i-of-0000n.arrow``,
    ``state.json`` listing them, ``dataset_info.json`` with the features (and the split size when given)."""
    folder.mkdir(parents=True, exist_ok=True)
    features = {}
    for f in table.schema:
        if pa.types.is_string(f.type):
            features[f.name] = {"dtype": "string", "_type": "Value"}
        elif pa.types.is_list(f.type) or pa.types.is_fixed_size_list(f.type):
            feat = {"feature": {"dtype": str(f.type.value_type), "_type": "Value"}, "_type": "List"}
            if pa.types.is_fixed_size_list(f.type):
                feat["length"] = f.type.list_size
            features[f.name] = feat
        else:
            features[f.name] = {"dtype": str(f.type), "_type": "Value"}
    meta = {b"huggingface": json.dumps({"info": {"features": features}}).encode()}
    table = table.replace_schema_metadata(meta)
    n = len(table)
    files = []
    for i in range(shards):
        name = f"data-{i:05d}-of-{shards:05d}.arrow"
        part = table.slice(i * n // shards, (i + 1) * n // shards - i * n // shards)
        write_arrow_stream(folder / name, part)
        files.append({"filename": name})
    state = {
        "_data_files": files,
        "_fingerprint": "0123456789abcdef",
        "_format_columns": None,
        "_format_kwargs": {},
        "_format_type": None,
        "_output_all_columns": False,
        "_split": None,
    }
    (folder / "state.json").write_text(json.dumps(state, indent=2))
    info: dict = {"citation": "", "description": "", "features": features, "homepage": "", "license": ""}
    if num_examples is not None:
        info["splits"] = {"train": {"name": "train", "num_bytes": 0, "num_examples": num_examples}}
    (folder / "dataset_info.json").write_text(json.dumps(info, indent=2))
    return folder
