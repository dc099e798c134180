"""Calibrated vectors written in the input file's own format: a ``.npy`` array, the same tensor of a
``.safetensors``, or the same column of a Parquet / Arrow table with every other column kept as it was, so a
retrieval system's file is replaced by its calibrated twin (``isoscope export --vectors V[:COL]``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from isoscope.errors import InputError

if TYPE_CHECKING:
    from isoscope.calibrate import Calibrator

VECTOR_OUTPUTS: tuple[str, ...] = ("npy", "parquet", "arrow", "safetensors")  # isoscope.data.vectors formats


def _same_format(source: Path, out: Path) -> str:
    from isoscope.data.vectors import vector_format

    fmt = vector_format(source)
    if fmt not in VECTOR_OUTPUTS:
        raise InputError(f"{source.name}: calibrated vectors are written as {', '.join(VECTOR_OUTPUTS)}; not {fmt}")
    if out.suffix.lower() != source.suffix.lower():
        raise InputError(f"--out {out.name}: write the calibrated vectors as {source.suffix} like {source.name}")
    if out.resolve() == source.resolve():
        raise InputError(f"--out {out.name} is the input file; give a new file for the calibrated vectors")
    return fmt


def _table_with(table, column: str | None, Z: np.ndarray):
    """``table`` (pyarrow) with its vector ``column`` replaced by ``Z`` (n, k) as fixed_size_list<float32>[k]."""
    import pyarrow as pa

    names = table.column_names
    if column is None:
        lists = [
            n
            for n in names
            if pa.types.is_list(table.schema.field(n).type) or pa.types.is_fixed_size_list(table.schema.field(n).type)
        ]
        if len(lists) != 1:
            raise InputError(f"name the vector column (FILE:COLUMN); list columns: {', '.join(lists) or 'none'}")
        column = lists[0]
    if column not in names:
        raise InputError(f"no column '{column}'; columns: {', '.join(names)}")
    if table.num_rows != len(Z):
        raise InputError(f"the table has {table.num_rows} rows but {len(Z)} vectors were calibrated")
    flat = pa.array(np.ascontiguousarray(Z, np.float32).ravel())
    values = pa.FixedSizeListArray.from_arrays(flat, Z.shape[1])
    return table.set_column(names.index(column), column, values)


def write_vectors(
    source: str | Path, column: str | None, Z: np.ndarray, out: str | Path, *, force: bool = False
) -> Path:
    """Write ``Z`` (n, k), the calibrated rows of ``source``, to ``out`` in ``source``'s format (Parquet and Arrow
    keep every other column and the table's metadata; ``column`` names the vector column or tensor). Written
    beside ``out`` and renamed over it (``isoscope.data.outputs.atomic_file``): an existing ``out`` that is not
    a file of that format is replaced only with ``force``."""
    from isoscope.data.outputs import VECTOR_FILES, atomic_file

    source, out = Path(source), Path(out)
    fmt = _same_format(source, out)
    Z = np.ascontiguousarray(Z, np.float32)  # (n, k)
    with atomic_file(out, kind=VECTOR_FILES[fmt], force=force) as tmp:
        if fmt == "npy":
            with open(tmp, "wb") as f:
                np.save(f, Z, allow_pickle=False)
        elif fmt == "safetensors":
            from safetensors import safe_open
            from safetensors.numpy import save

            with safe_open(str(source), framework="numpy") as f:
                keys = list(f.keys())
            tmp.write_bytes(save({column or (keys[0] if len(keys) == 1 else "vectors"): Z}))
        elif fmt == "parquet":
            import pyarrow.parquet as pq

            pq.write_table(_table_with(pq.read_table(source), column, Z), tmp)
        else:
            import pyarrow.feather as feather

            feather.write_feather(_table_with(feather.read_table(source), column, Z), tmp)
    return out


def calibrate_vectors(calibrator: Calibrator, vectors: np.ndarray) -> np.ndarray:
    """``calibrator.transform(vectors)`` as float32 (n, k); the one place vectors are calibrated for a file."""
    return np.asarray(calibrator.transform(vectors), np.float32)
