"""Hostile vectors files (issue 23): every case one line on stderr, exit 2, before anything heavy is decoded.

Ragged rows, a vector column of strings, 10^9 claimed rows (in a .npy header, a .safetensors header, Parquet
metadata, an Arrow batch header, a datasets folder's info), a texts file with another row count, a dimension
mismatch between A and B where one is needed, NaN rows, and vector columns compressed 1000:1 (Parquet and
Feather), the last ones in a child process whose peak resident memory is measured.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from isoscope.data import load_vector_file
from isoscope.errors import InputError
from tests.hostile.cases import write
from tests.hostile.conftest import assert_cli_refused, assert_one_line
from tests.hostile.test_bombs import GiB, _child_peak
from tests.vector_files import vector_table, write_arrow_stream, write_dataset_folder, write_parquet

X = np.random.default_rng(0).standard_normal((12, 8)).astype(np.float32)  # (n, d)
TEXTS = [f"text {i}" for i in range(12)]
BILLION = 10**9


def _npy_claiming(rows: int, dims: int) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": "<f4", "fortran_order": False, "shape": (rows, dims)})
    return buf.getvalue() + b"\x00" * 64


def _patched(data: bytes, old: int, new: int, size: int = 8) -> bytes:
    a, b = old.to_bytes(size, "little"), new.to_bytes(size, "little")
    assert a in data
    return data.replace(a, b)


def _arrow_stream_claiming(path: Path, rows: int) -> Path:
    """A real Arrow stream of 777 rows whose batch header (RecordBatch.length and field nodes) says ``rows``."""
    table = pa.table({"emb": pa.FixedSizeListArray.from_arrays(pa.array(np.zeros(777 * 2, np.float32)), 2)})
    write_arrow_stream(path, table)
    path.write_bytes(_patched(path.read_bytes(), 777, rows))
    return path


def _parquet_claiming(path: Path, rows: int) -> Path:
    """A real Parquet file whose footer says ``rows`` rows (the thrift varints rewritten, the length fixed)."""

    def varint(n: int) -> bytes:
        z, out = n << 1, bytearray()  # zigzag of a non-negative i64, then LEB128
        while True:
            byte, z = z & 0x7F, z >> 7
            out.append(byte | (0x80 if z else 0))
            if not z:
                return bytes(out)

    write_parquet(path, np.zeros((777, 2), np.float32), fixed=True)
    data = path.read_bytes()
    size = int.from_bytes(data[-8:-4], "little")
    footer = data[-8 - size : -8]
    patched = footer.replace(varint(777), varint(rows))
    assert patched != footer
    path.write_bytes(data[: -8 - size] + patched + len(patched).to_bytes(4, "little") + b"PAR1")
    return path


def _cases(tmp: Path) -> dict[str, tuple[list[str], tuple[str, ...]]]:
    """case -> (geometry arguments, fragments of the message)."""
    ragged = pa.table({"emb": pa.array([[1.0, 2.0, 3.0]] * 6 + [[1.0, 2.0]] * 6, pa.list_(pa.float32()))})
    pq.write_table(ragged, tmp / "ragged.parquet")
    pq.write_table(pa.table({"emb": [json.dumps(v.tolist()) for v in X]}), tmp / "strings.parquet")
    (tmp / "texts.txt").write_text("\n".join(TEXTS[:-1]))
    nan = X.copy()
    nan[[2, 9], 0] = np.nan
    np.save(tmp / "nan.npy", nan, allow_pickle=False)
    np.save(tmp / "v.npy", X, allow_pickle=False)
    (tmp / "big.safetensors").write_bytes(_safetensors_claiming(BILLION))
    folder = write_dataset_folder(tmp / "ds", vector_table(X, TEXTS), num_examples=BILLION)
    return {
        "ragged_rows": (["--vectors", str(tmp / "ragged.parquet")], ("ragged", "row 6", "same dimensions")),
        "vector_column_of_strings": (["--vectors", f"{tmp / 'strings.parquet'}:emb"], ("holds strings, not vectors",)),
        "billion_rows_npy": (
            ["--vectors", str(write(tmp, "big.npy", _npy_claiming(BILLION, 384)))],
            ("1,000,000,000 rows", "over the limit"),
        ),
        "billion_rows_safetensors": (
            ["--vectors", str(tmp / "big.safetensors")],
            ("1,000,000,000 rows", "over the limit"),
        ),
        "billion_rows_parquet": (
            ["--vectors", str(_parquet_claiming(tmp / "big.parquet", BILLION))],
            ("1,000,000,000 rows", "over the limit"),
        ),
        "billion_rows_arrow": (
            ["--vectors", str(_arrow_stream_claiming(tmp / "big.arrow", BILLION))],
            ("1,000,000,000 rows", "over the limit"),
        ),
        "billion_rows_datasets": (["--vectors", str(folder)], ("1,000,000,000 rows", "over the limit")),
        "texts_file_row_count": (
            ["--vectors", str(tmp / "v.npy"), "--input", str(tmp / "texts.txt")],
            ("12 vectors for 11 input texts",),
        ),
        "nan_rows": (["--vectors", str(tmp / "nan.npy")], ("nan", "rows 2, 9")),
    }


def _safetensors_claiming(rows: int) -> bytes:
    header = json.dumps({"e": {"dtype": "F32", "shape": [rows, 384], "data_offsets": [0, rows * 384 * 4]}}).encode()
    return len(header).to_bytes(8, "little") + header + b"\x00" * 64


CASE_IDS = [
    "ragged_rows",
    "vector_column_of_strings",
    "billion_rows_npy",
    "billion_rows_safetensors",
    "billion_rows_parquet",
    "billion_rows_arrow",
    "billion_rows_datasets",
    "texts_file_row_count",
    "nan_rows",
]


@pytest.fixture(scope="module")
def cases(tmp_path_factory) -> dict:
    return _cases(tmp_path_factory.mktemp("hostile_vectors"))


@pytest.mark.parametrize("case", CASE_IDS)
def test_geometry_refuses(cli, cases, case: str) -> None:
    argv, fragments = cases[case]
    assert_cli_refused(cli("geometry", *argv, "--quiet"), *fragments)


@pytest.mark.parametrize("case", CASE_IDS)
def test_compare_refuses(cli, cases, case: str) -> None:
    argv, fragments = cases[case]
    spec = "vectors=" + argv[1]
    extra = ["--input", argv[3]] if "--input" in argv else []
    assert_cli_refused(cli("compare", "--a", spec, "--b", "", *extra, "--quiet"), *fragments)


def test_dimension_mismatch_where_one_is_needed(cli, tmp_path: Path) -> None:
    from isoscope.data import load_pairs
    from isoscope.paths import DEMO_PAIRS

    n = len(load_pairs(DEMO_PAIRS))
    np.save(tmp_path / "a.npy", np.random.default_rng(1).standard_normal((n, 16)).astype(np.float32))
    np.save(tmp_path / "b.npy", np.random.default_rng(2).standard_normal((n, 12)).astype(np.float32))
    result = cli(
        "sts", "--pairs", str(DEMO_PAIRS), "--vectors", str(tmp_path / "a.npy"), "--vectors-b", str(tmp_path / "b.npy")
    )
    assert_cli_refused(result, "16 dimensions", "12", "one space")


def test_the_loader_refuses_with_one_line(cases) -> None:
    for case in CASE_IDS:
        argv, fragments = cases[case]
        if "--input" in argv:
            continue
        with pytest.raises(InputError) as err:
            load_vector_file(argv[1])
        assert_one_line(str(err.value))
        assert all(f in str(err.value) for f in fragments), (case, str(err.value))


# ---------------------------------------------------------------- 1000:1 in a child process, memory measured


def _zero_vectors_parquet(path: Path, rows: int, dims: int, fixed: bool) -> Path:
    """``rows`` x ``dims`` float32 zeros (rows * dims * 4 bytes decoded), written in row groups: a few MB on disk."""
    block = vector_table(np.zeros((min(rows, 2048), dims), np.float32), fixed=fixed)
    with pq.ParquetWriter(path, block.schema, compression="zstd") as w:
        for start in range(0, rows, len(block)):
            w.write_table(block.slice(0, min(len(block), rows - start)))
    return path


def _zero_vectors_feather(path: Path, rows: int, dims: int) -> Path:
    block = vector_table(np.zeros((2048, dims), np.float32))
    options = pa.ipc.IpcWriteOptions(compression="zstd")
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, block.schema, options=options) as w:
        for _ in range(rows // 2048):
            w.write_table(block)
    return path


@pytest.mark.parametrize("kind", ["parquet_list", "parquet_fixed", "feather_zstd"])
def test_vector_bombs_are_refused_in_bounded_memory(tmp_path: Path, kind: str) -> None:
    """45,056 x 8,192 float32 zeros: 1.4 GiB decoded (over the 1 GiB default of ISOSCOPE_MAX_VECTOR_BYTES), a few
    MB on disk. Refused from the metadata or batch headers: exit 2, one line, and the child stays small."""
    rows, dims = 22 * 2048, 8192
    if kind == "feather_zstd":
        path = _zero_vectors_feather(tmp_path / "bomb.feather", rows, dims)
    else:
        path = _zero_vectors_parquet(tmp_path / "bomb.parquet", rows, dims, fixed=kind == "parquet_fixed")
    assert path.stat().st_size < rows * dims * 4 / 1000  # compressed over 1000:1
    stmt = f"from isoscope.cli import main; sys.exit(main(['geometry', '--vectors', {str(path)!r}, '--quiet']))"
    code, err, peak = _child_peak([stmt], tmp_path, {"ISOSCOPE_MAX_ROWS": str(rows)})
    lines = [x for x in err.splitlines() if x.strip()]
    assert code == 2, err[-2000:]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "MAX_VECTOR_BYTES" in lines[0], lines
    assert_one_line(lines[0])
    assert peak < GiB // 2, f"peak {peak / 2**20:.0f} MiB"
