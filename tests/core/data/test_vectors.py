"""isoscope.data.vectors: every format read to the same checked float32 table, with its provenance."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from isoscope.data import (
    DecodeLimits,
    VectorOrigin,
    load_vector_file,
    load_vector_input,
    parse_vectors_ref,
    vectors_from_array,
)
from isoscope.errors import InputError
from tests.vector_files import (
    bfloat16_round,
    safetensors_bytes,
    vector_table,
    write_arrow_stream,
    write_dataset_folder,
    write_feather,
    write_parquet,
)

RNG = np.random.default_rng(0)
X = RNG.standard_normal((20, 8)).astype(np.float32)  # (n, d)
TEXTS = [f"sentence number {i}" for i in range(len(X))]


def _npy(path: Path, arr: np.ndarray) -> Path:
    np.save(path, arr, allow_pickle=False)
    return path


def _same_table(table, vectors=X, texts=TEXTS) -> None:
    np.testing.assert_array_equal(table.vectors, vectors)
    assert table.vectors.dtype == np.float32 and table.vectors.flags.c_contiguous
    assert table.texts == (list(texts) if texts is not None else None)


# ---------------------------------------------------------------- every format gives the same table


def test_npy_with_a_texts_file(tmp_path: Path) -> None:
    (tmp_path / "texts.txt").write_text("\n".join(TEXTS) + "\n")
    table = load_vector_file(_npy(tmp_path / "v.npy", X), texts=tmp_path / "texts.txt")
    _same_table(table)
    assert table.origin.file == "v.npy" and table.origin.column is None and table.origin.text_column == "texts.txt"
    assert table.warnings == []


def test_npy_from_bytes_and_from_disk_agree(tmp_path: Path) -> None:
    path = _npy(tmp_path / "v.npy", X)
    a, b = load_vector_file(path), load_vector_file(path.read_bytes(), name="v.npy")
    _same_table(a, texts=None)
    assert a.origin == b.origin and a.origin.fingerprint == b.origin.fingerprint


@pytest.mark.parametrize("fixed", [False, True])
def test_parquet_vector_and_text_columns(tmp_path: Path, fixed: bool) -> None:
    path = write_parquet(tmp_path / "v.parquet", X, TEXTS, fixed=fixed, extra={"topic": ["a", "b"] * 10})
    table = load_vector_file(path)
    _same_table(table)
    assert table.origin.column == "emb" and table.origin.text_column == "text"
    assert list(table.meta["topic"]) == ["a", "b"] * 10
    assert load_vector_file(f"{path}:emb").origin == table.origin


def test_feather_lz4_and_arrow_stream(tmp_path: Path) -> None:
    _same_table(load_vector_file(write_feather(tmp_path / "v.feather", X, TEXTS)))
    _same_table(load_vector_file(write_feather(tmp_path / "z.feather", X, TEXTS, compression="zstd")))
    stream = write_arrow_stream(tmp_path / "v.arrow", vector_table(X, TEXTS), compression="lz4", batch_rows=7)
    _same_table(load_vector_file(stream))


def test_safetensors_one_tensor_and_bfloat16(tmp_path: Path) -> None:
    path = tmp_path / "v.safetensors"
    path.write_bytes(safetensors_bytes({"embeddings": X}))
    table = load_vector_file(path)
    _same_table(table, texts=None)
    assert table.origin.column == "embeddings"
    path.write_bytes(
        safetensors_bytes({"embeddings": X, "ids": np.arange(20)[:, None].astype(np.int8)}, bf16=["embeddings"])
    )
    with pytest.raises(InputError, match="several 2-D tensors"):
        load_vector_file(path)
    table = load_vector_file(path, column="embeddings")
    np.testing.assert_array_equal(table.vectors, bfloat16_round(X))  # bfloat16 widened exactly
    assert table.origin.dtype == "bfloat16" and any("bfloat16" in w for w in table.warnings)


def test_datasets_folder(tmp_path: Path) -> None:
    folder = write_dataset_folder(tmp_path / "ds", vector_table(X, TEXTS, column="embedding"), shards=3)
    table = load_vector_file(folder)
    _same_table(table)
    assert table.origin.file == "ds" and table.origin.column == "embedding"


def test_datasets_dict_folder_names_its_splits(tmp_path: Path) -> None:
    write_dataset_folder(tmp_path / "dd" / "train", vector_table(X, TEXTS))
    (tmp_path / "dd" / "dataset_dict.json").write_text(json.dumps({"splits": ["train", "test"]}))
    with pytest.raises(InputError, match=r"splits \(train, test\).*dd/train"):
        load_vector_file(tmp_path / "dd")
    _same_table(load_vector_file(tmp_path / "dd" / "train"))


def test_datasets_folder_refuses_paths_outside_it(tmp_path: Path) -> None:
    folder = write_dataset_folder(tmp_path / "ds", vector_table(X, TEXTS))
    state = json.loads((folder / "state.json").read_text())
    state["_data_files"] = [{"filename": "../secret.arrow"}]
    (folder / "state.json").write_text(json.dumps(state))
    with pytest.raises(InputError, match="outside the folder"):
        load_vector_file(folder)


def test_the_same_vectors_have_the_same_digest_in_every_format(tmp_path: Path) -> None:
    digests = {
        load_vector_file(_npy(tmp_path / "v.npy", X)).origin.digest,
        load_vector_file(write_parquet(tmp_path / "v.parquet", X)).origin.digest,
        load_vector_file(write_feather(tmp_path / "v.feather", X)).origin.digest,
        vectors_from_array(X).origin.digest,
    }
    assert len(digests) == 1
    other = X.copy()
    other[0, 0] += 1
    assert vectors_from_array(other).origin.digest not in digests


def test_fingerprint_carries_file_column_and_digest() -> None:
    base = VectorOrigin("v.parquet", "emb", "text", "float32", "d1")
    assert base.fingerprint.startswith("vectors-")
    changed = [
        VectorOrigin("w.parquet", "emb", "text", "float32", "d1"),
        VectorOrigin("v.parquet", "emb2", "text", "float32", "d1"),
        VectorOrigin("v.parquet", "emb", "text", "float32", "d2"),
    ]
    assert len({base.fingerprint, *(o.fingerprint for o in changed)}) == 4


# ---------------------------------------------------------------- codes and precisions are accepted and said


@pytest.mark.parametrize(
    ("dtype", "word"), [(np.float16, "float16"), (np.int8, "int8"), (np.uint8, "uint8"), (bool, "binary")]
)
def test_codes_and_half_precision_are_accepted_with_a_warning(tmp_path: Path, dtype, word: str) -> None:
    arr = (X > 0) if dtype is bool else (X * (40 if dtype in (np.int8, np.uint8) else 1)).astype(dtype)
    table = load_vector_file(_npy(tmp_path / "v.npy", np.asarray(arr)))
    assert any(word in w for w in table.warnings), table.warnings
    want = np.where(arr, 1.0, -1.0) if dtype is bool else np.asarray(arr).astype(np.float32)
    np.testing.assert_array_equal(table.vectors, want.astype(np.float32))


def test_parquet_float16_and_bool_columns(tmp_path: Path) -> None:
    half = pa.ListArray.from_arrays(
        pa.array(np.arange(0, 161, 8, dtype=np.int32)), pa.array(X.reshape(-1).astype(np.float16))
    )
    pq.write_table(pa.table({"emb": half}), tmp_path / "h.parquet")
    table = load_vector_file(tmp_path / "h.parquet")
    np.testing.assert_array_equal(table.vectors, X.astype(np.float16).astype(np.float32))
    assert table.origin.dtype == "float16" and "float16" in table.warnings[0]


# ---------------------------------------------------------------- what is refused, in one line


def test_ragged_rows_are_named(tmp_path: Path) -> None:
    emb = pa.array([[1.0, 2.0, 3.0]] * 5 + [[1.0, 2.0]] + [[1.0, 2.0, 3.0]] * 4, pa.list_(pa.float32()))
    pq.write_table(pa.table({"emb": emb}), tmp_path / "r.parquet")
    with pytest.raises(InputError, match=r"ragged vectors in 'emb': row 5 .* has 2 values, row 0 has 3"):
        load_vector_file(tmp_path / "r.parquet")


def test_ragged_across_batches(tmp_path: Path) -> None:
    rows = [[0.5, 1.0, 2.0]] * 9000 + [[1.0, 2.0]] * 10
    pq.write_table(pa.table({"emb": pa.array(rows, pa.list_(pa.float32()))}), tmp_path / "r.parquet")
    with pytest.raises(InputError, match="ragged"):
        load_vector_file(tmp_path / "r.parquet")


def test_nan_rows_are_named(tmp_path: Path) -> None:
    bad = X.copy()
    bad[[3, 11], 1] = np.nan
    bad[17, 0] = np.inf
    for path in (_npy(tmp_path / "v.npy", bad), write_parquet(tmp_path / "v.parquet", bad)):
        with pytest.raises(InputError, match=r"3 row\(s\) contain NaN or infinite values .*rows 3, 11, 17"):
            load_vector_file(path)


def test_missing_vectors_and_values(tmp_path: Path) -> None:
    emb = pa.array([[1.0, 2.0]] * 3 + [None] + [[1.0, 2.0]], pa.list_(pa.float32()))
    pq.write_table(pa.table({"emb": emb}), tmp_path / "n.parquet")
    with pytest.raises(InputError, match=r"row 3 .* hold no vector"):
        load_vector_file(tmp_path / "n.parquet")
    emb = pa.array([[1.0, 2.0]] * 3 + [[1.0, None]] + [[1.0, 2.0]], pa.list_(pa.float32()))
    pq.write_table(pa.table({"emb": emb}), tmp_path / "n.parquet")
    with pytest.raises(InputError, match=r"row 3 .* missing values"):
        load_vector_file(tmp_path / "n.parquet")


@pytest.mark.parametrize(
    ("table", "fragment"),
    [
        (pa.table({"emb": ["[0.1, 0.2]"] * 4}), "holds strings, not vectors"),
        (pa.table({"emb": pa.array([["a", "b"]] * 4)}), "not lists of numbers"),
        (pa.table({"text": ["a"] * 4}), "no vector column"),
        (pa.table({"a": pa.array([[1.0, 2.0]] * 4), "b": pa.array([[1.0, 2.0]] * 4)}), "several vector columns (a, b)"),
    ],
)
def test_schema_problems(tmp_path: Path, table: pa.Table, fragment: str) -> None:
    pq.write_table(table, tmp_path / "s.parquet")
    column = "emb" if ("emb" in table.column_names and "strings" in fragment) or "numbers" in fragment else None
    with pytest.raises(InputError) as err:
        load_vector_file(tmp_path / "s.parquet", column=column)
    assert fragment in str(err.value) and "\n" not in str(err.value)


def test_a_texts_file_with_another_row_count(tmp_path: Path) -> None:
    (tmp_path / "texts.txt").write_text("\n".join(TEXTS[:-1]))
    with pytest.raises(InputError, match=r"texts.txt: 19 texts .* for the 20 rows of v.npy"):
        load_vector_file(_npy(tmp_path / "v.npy", X), texts=tmp_path / "texts.txt")


def test_claims_are_checked_before_decoding(tmp_path: Path) -> None:
    limits = DecodeLimits(max_rows=10)
    for path in (
        _npy(tmp_path / "v.npy", X),
        write_parquet(tmp_path / "v.parquet", X),
        write_feather(tmp_path / "v.feather", X),
        write_dataset_folder(tmp_path / "ds", vector_table(X, TEXTS)),
    ):
        with pytest.raises(InputError, match="20 rows is over the limit of 10"):
            load_vector_file(path, limits=limits)
    small = DecodeLimits(max_vector_bytes=20 * 8 * 4 - 1)
    with pytest.raises(InputError, match="ISOSCOPE_MAX_VECTOR_BYTES"):
        load_vector_file(write_parquet(tmp_path / "f.parquet", X, fixed=True), limits=small)
    with pytest.raises(InputError, match="ISOSCOPE_MAX_VECTOR_BYTES"):
        load_vector_file(_npy(tmp_path / "v.npy", X), limits=small)


def test_parse_vectors_ref(tmp_path: Path) -> None:
    assert parse_vectors_ref("v.parquet:emb") == ("v.parquet", "emb")
    assert parse_vectors_ref("v.parquet") == ("v.parquet", None)
    odd = tmp_path / "a:b.npy"
    _npy(odd, X)
    assert parse_vectors_ref(str(odd)) == (str(odd), None)  # an existing name with a colon is whole
    assert parse_vectors_ref("C:/data/v.npy") == ("C:/data/v.npy", None)


def test_arrays_get_the_same_checks() -> None:
    with pytest.raises(InputError, match="not numbers"):
        vectors_from_array(np.array([["a", "b"]] * 3))
    with pytest.raises(InputError, match="at least 3 rows"):
        vectors_from_array(X[:2])
    with pytest.raises(InputError, match="19 texts for 20 vectors"):
        vectors_from_array(X, TEXTS[:-1])
    table = vectors_from_array(X.astype(np.float64), TEXTS, name="mine")
    _same_table(table)
    assert table.name == "mine"


# ---------------------------------------------------------------- the vectors of other texts


def test_vectors_for_by_text_and_by_position(tmp_path: Path) -> None:
    with_texts = load_vector_file(write_parquet(tmp_path / "v.parquet", X, TEXTS))
    order = [TEXTS[5], TEXTS[0], TEXTS[5]]
    np.testing.assert_array_equal(with_texts.vectors_for(order), X[[5, 0, 5]])
    with pytest.raises(InputError, match=r"1 of the 2 texts are not in its text column .*'unknown'"):
        with_texts.vectors_for([TEXTS[0], "unknown"])
    plain = vectors_from_array(X)
    np.testing.assert_array_equal(plain.vectors_for(TEXTS), X)
    np.testing.assert_array_equal(plain.vectors_for(["x", "y"], rows=[4, 2], n_input=20), X[[4, 2]])
    with pytest.raises(InputError, match="20 vectors for 19 input texts"):
        plain.vectors_for(TEXTS[:-1])


def test_load_vector_input_looks_texts_up(tmp_path: Path) -> None:
    path = write_parquet(tmp_path / "v.parquet", X, TEXTS)
    (tmp_path / "some.txt").write_text("\n".join(TEXTS[::-2]))
    given = load_vector_input(path, tmp_path / "some.txt")
    np.testing.assert_array_equal(given.vectors, X[::-2])
    assert given.texts.texts == TEXTS[::-2] and given.name == "v.parquet:emb"
    own = load_vector_input(f"{path}:emb")
    assert own.texts.texts == TEXTS and own.has_texts
    bare = load_vector_input(_npy(tmp_path / "v.npy", X))
    assert not bare.has_texts and bare.texts.texts[:2] == ["row 0", "row 1"]


def test_npy_bytes_api_kept_for_uploads() -> None:
    from isoscope.data import load_vectors

    buf = io.BytesIO()
    np.save(buf, X, allow_pickle=False)
    np.testing.assert_array_equal(load_vectors(buf.getvalue(), "v.npy"), X)
