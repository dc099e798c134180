"""isoscope.space.sources: any array-like becomes the same checked (n, d) float32 array; bad input says what to fix."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
import torch

from isoscope.data.vectors import vectors_digest
from isoscope.errors import InputError
from isoscope.space import Space
from isoscope.space.sources import as_matrix, as_metadata, as_texts

RNG = np.random.default_rng(0)
X = RNG.normal(size=(7, 5)).astype(np.float32)


@pytest.mark.parametrize(
    "make",
    [
        lambda: X,
        lambda: X.astype(np.float64),
        lambda: torch.from_numpy(X.copy()),
        lambda: pd.Series(list(X)),  # a pandas column of arrays
        lambda: pd.Series([row.tolist() for row in X]),  # ... of lists
        lambda: pd.DataFrame(X),  # one column per dimension
        lambda: pa.array([row.tolist() for row in X], type=pa.list_(pa.float32())),
        lambda: pa.array([row.tolist() for row in X], type=pa.list_(pa.float32(), 5)),  # fixed_size_list
        lambda: pa.chunked_array([pa.array([r.tolist() for r in X[:3]]), pa.array([r.tolist() for r in X[3:]])]),
        lambda: [row.tolist() for row in X],
    ],
    ids=[
        "numpy",
        "float64",
        "torch",
        "series-arrays",
        "series-lists",
        "frame",
        "arrow-list",
        "arrow-fixed",
        "arrow-chunked",
        "lists",
    ],
)
def test_every_array_like_gives_the_same_float32_matrix(make) -> None:
    out = as_matrix(make())
    assert out.dtype == np.float32 and out.flags.c_contiguous
    np.testing.assert_array_equal(out, X)


def test_half_precision_tensors_widen_exactly() -> None:
    for dtype in (torch.float16, torch.bfloat16):
        t = torch.from_numpy(X).to(dtype)
        np.testing.assert_array_equal(as_matrix(t), t.float().numpy())


def test_a_sliced_arrow_array_keeps_its_own_rows() -> None:
    arr = pa.array([row.tolist() for row in X], type=pa.list_(pa.float32())).slice(2, 4)
    np.testing.assert_array_equal(as_matrix(arr), X[2:6])


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        ([[1.0, 2.0], [3.0], [4.0, 5.0]], "every vector needs the same"),
        (pa.array([[1.0, 2.0], [3.0], [4.0, 5.0]]), "every vector needs the same"),
        (pa.array(["a", "b", "c"]), "not vectors"),
        (np.array([["a", "b"]] * 3), "real numbers"),
        (np.zeros(5), "2-D"),
        (np.zeros((2, 4)), "at least 3 rows"),
        (np.zeros((5, 1)), "2 dimensions"),
        (np.array([[1 + 1j, 0]] * 3), "real numbers"),
        (pa.array([[1.0, 2.0], None, [3.0, 4.0]]), "null"),
    ],
)
def test_bad_vectors_say_what_to_fix(bad, says: str) -> None:
    with pytest.raises(InputError, match=says):
        as_matrix(bad)


def test_non_finite_rows_are_named() -> None:
    bad = X.copy()
    bad[[1, 4], 2] = [np.nan, np.inf]
    with pytest.raises(InputError, match=r"2 row\(s\) contain NaN or infinite values \(rows 1, 4\)"):
        as_matrix(bad)


def test_texts_and_metadata_must_match_the_rows() -> None:
    assert as_texts(pd.Series(["a", None, "c"]), 3) == ["a", "", "c"]
    with pytest.raises(InputError, match="2 texts for 3 vectors"):
        as_texts(["a", "b"], 3)
    with pytest.raises(InputError, match="not one string"):
        as_texts("abc", 3)
    meta = as_metadata(pd.DataFrame({"t": [1, 2, 3]}, index=[10, 11, 12]), 3)
    assert list(meta.index) == [0, 1, 2] and meta["t"].tolist() == [1, 2, 3]
    with pytest.raises(InputError, match="metadata: 2 rows for 3 vectors"):
        as_metadata({"t": [1, 2]}, 3)


def test_a_space_keeps_a_read_only_view_and_the_digest_of_what_it_holds() -> None:
    given = X.copy()
    space = Space(given, [f"t{i}" for i in range(7)], {"k": list("abcdefg")}, name="mine")
    assert space.shape == (7, 5) and len(space) == 7 and space.name == "mine"
    with pytest.raises(ValueError, match="read-only"):
        space.vectors[0, 0] = 1.0
    given[0, 0] = 5.0  # the caller's own array stays writeable
    assert space.provenance["digest"] == vectors_digest(space.vectors)
    assert space.provenance["source"] == "array" and space.provenance["calibration"] == []
    assert Space(X).digest != Space(X + 1).digest
    sub = space[[1, 3]]
    assert sub.texts == ["t1", "t3"] and sub.metadata["k"].tolist() == ["b", "d"]
    np.testing.assert_array_equal(sub.vectors, X[[1, 3]])
    mask = np.zeros(7, bool)
    mask[[0, 6]] = True
    assert space[mask].texts == ["t0", "t6"]


def test_a_space_from_a_vectors_file_keeps_its_texts_metadata_and_provenance(tmp_path) -> None:
    from tests.vector_files import write_parquet

    texts = [f"text {i}" for i in range(7)]
    path = write_parquet(tmp_path / "v.parquet", X, texts, extra={"topic": list("aabbccd")})
    space = Space.from_file(f"{path}:emb", cache=False)
    np.testing.assert_array_equal(space.vectors, X)
    assert space.texts == texts and space.metadata["topic"].tolist() == list("aabbccd")
    p = space.provenance
    assert p["source"] == "file" and p["file"] == "v.parquet" and p["column"] == "emb" and p["dtype"] == "float32"
    assert p["digest"] == space.digest == vectors_digest(X) and p["fingerprint"].startswith("vectors-")
    assert "vectors from v.parquet:emb" in space._repr_html_()
    assert space.neighbours(0, k=2)["id"].tolist() == Space(X).neighbours(0, k=2)["id"].tolist()
    with pytest.raises(InputError, match="cannot embed new texts"):
        space.embed_texts(["a new text"])


def test_a_space_from_npy_takes_its_texts_from_a_texts_file(tmp_path) -> None:
    np.save(tmp_path / "v.npy", X.astype(np.float16))
    (tmp_path / "t.txt").write_text("".join(f"line {i}\n" for i in range(7)), encoding="utf-8")
    space = Space.from_file(tmp_path / "v.npy", texts=tmp_path / "t.txt", name="half", cache=False)
    np.testing.assert_array_equal(space.vectors, X.astype(np.float16).astype(np.float32))
    assert space.name == "half" and space.texts[6] == "line 6" and space.provenance["dtype"] == "float16"
    assert any("float16" in w for w in space.warnings)
    (tmp_path / "six.txt").write_text("".join(f"line {i}\n" for i in range(6)), encoding="utf-8")
    with pytest.raises(InputError, match=r"6 texts .* for the 7 rows"):
        Space.from_file(tmp_path / "v.npy", texts=tmp_path / "six.txt", cache=False)
