"""Hostile vector uploads (.npy) for the Neighbours page: isoscope.data.load_vectors and the upload.

A .npy is loaded with allow_pickle=False: a pickle disguised as .npy (np.save of an object array whose
element's __reduce__ would create a marker file) is refused and never unpickled.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

from isoscope.data import load_vectors
from isoscope.errors import InputError
from tests.dashboard.conftest import open_page
from tests.hostile.cases import GOOD_CORPUS_TXT, junk, npy, pickled_npy, raw_pickle
from tests.hostile.conftest import assert_app_refused, assert_one_line, new_app

N_GOOD, D_GOOD = 32, 384  # GOOD_CORPUS_TXT has 32 lines; 384 = the embedded model's dimension


def header_claiming(shape: tuple[int, ...], descr: str = "<f4", payload: int = 64) -> bytes:
    """A tiny .npy whose header claims ``shape`` (the data is missing)."""
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": descr, "fortran_order": False, "shape": shape})
    return buf.getvalue() + b"\x00" * payload


GOOD = np.random.default_rng(0).standard_normal((N_GOOD, D_GOOD)).astype(np.float32)  # (n, d)


def _with_nan() -> bytes:
    a = GOOD.copy()
    a[3, 2] = np.nan
    return npy(a)


def _with_inf() -> bytes:
    a = GOOD.astype(np.float64)
    a[5, 0] = np.inf
    return npy(a)


def _overflows_float32() -> bytes:
    a = GOOD.astype(np.float64)
    a[1, 1] = 1e300  # finite as float64, inf once stored as float32
    return npy(a)


def _truncated() -> bytes:
    data = npy(GOOD)
    return data[: len(data) - 100]


def _header_lies(rows: int) -> bytes:
    """GOOD's bytes under a header claiming ``rows`` rows (np.load reads what the header claims, ignores the rest)."""
    data = npy(GOOD)
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": "<f4", "fortran_order": False, "shape": (rows, D_GOOD)})
    header = buf.getvalue()
    assert data[len(header) - 1 : len(header)] == b"\n"  # the same header length: only the shape changed
    return header + data[len(header) :]


def _npz() -> bytes:
    buf = io.BytesIO()
    np.savez(buf, vectors=GOOD)
    return buf.getvalue()


# (case id, bytes or a function of the marker path, fragments of the message)
REFUSED = [
    ("pickle_disguised_as_npy", pickled_npy, ("npy",)),
    ("raw_pickle", raw_pickle, ("not a numpy .npy",)),
    ("binary_junk", junk(2048), ("not a numpy .npy",)),
    ("empty", b"", ("not a numpy .npy",)),
    ("text_file", b"0.1,0.2\n0.3,0.4\n", ("not a numpy .npy",)),
    ("npz_archive", _npz(), ("not a numpy .npy",)),
    ("truncated", _truncated(), ("unreadable",)),
    ("corrupt_header", b"\x93NUMPY\x01\x00" + junk(200), ("unreadable",)),
    ("object_header", header_claiming((3, 3), "|O"), ("npy",)),
    ("nan_row", _with_nan(), ("nan",)),
    ("inf_row", _with_inf(), ("infinite",)),
    ("overflows_float32", _overflows_float32(), ("infinite",)),
    ("one_dimensional", npy(np.arange(10, dtype=np.float32)), ("2-d",)),
    ("three_dimensional", npy(np.zeros((4, 3, 2), np.float32)), ("2-d",)),
    ("too_few_rows", npy(np.zeros((2, 8), np.float32)), ("at least 3 rows",)),
    ("strings", npy(np.array([["a", "b"], ["c", "d"], ["e", "f"]])), ("not numbers",)),
    ("complex", npy(np.ones((4, 4), np.complex64)), ("not numbers",)),
    ("structured", npy(np.zeros(4, dtype=[("a", "<f4"), ("b", "<f4")])), ("not numbers",)),
    ("rows_200k", npy(np.zeros((200_000, 2), np.float32)), ("over the limit",)),
    ("negative_shape", header_claiming((-1, 5)), ("unreadable",)),
    ("claims_400mb", header_claiming((100_000, 1000)), ("over the limit",)),
    ("claims_exabytes", header_claiming((10**7, 10**7)), ("over the limit",)),
    ("claims_exabytes_few_rows", header_claiming((100, 10**15)), ("unreadable",)),
    # issue 17: a header claiming fewer rows than the data was accepted (the rest silently dropped)
    ("header_claims_fewer_rows", _header_lies(N_GOOD // 2), ("unreadable", "16 x 384", "holds 49,152 bytes")),
    ("header_claims_more_rows", _header_lies(N_GOOD + 1), ("unreadable", "33 x 384")),
]


def _bytes(data, marker: Path) -> bytes:
    return data(marker) if callable(data) else data


@pytest.mark.parametrize(("case", "data", "fragments"), REFUSED, ids=[c[0] for c in REFUSED])
def test_load_vectors_refuses(case: str, data, fragments: tuple[str, ...], tmp_path: Path) -> None:
    marker = tmp_path / "MARKER"
    name = f"{case}.npy"
    try:
        load_vectors(_bytes(data, marker), name)
    except InputError as exc:
        msg = str(exc)
        assert_one_line(msg)
        assert name in msg
        for f in fragments:
            assert f.lower() in msg.lower(), f"{f!r} not in {msg!r}"
    except Exception as exc:
        raise AssertionError(f"{type(exc).__name__} instead of InputError: {str(exc)[:200]}") from None
    else:
        raise AssertionError(f"{case} was accepted")
    assert not marker.exists(), "the pickle inside the .npy was executed"


@pytest.mark.parametrize(
    "data", [_header_lies(N_GOOD // 2), header_claiming((100, 10**15)), header_claiming((100_000, 1000))]
)
def test_header_messages_are_whole(data: bytes) -> None:
    """Issue 17: the "header lies" messages were wrapped twice ("unreadable .npy (v.npy: unreadable .npy (...")
    and cut off at 80 characters, losing the advice."""
    with pytest.raises(InputError) as err:
        load_vectors(data, "v.npy")
    msg = str(err.value)
    assert msg.count("v.npy") == 1 and msg.count("unreadable") <= 1 and "..." not in msg, msg
    assert msg.endswith("sample the vectors first") or msg.endswith("allow_pickle=False)"), msg


@pytest.mark.parametrize("dtype", [np.float16, np.float64, np.int8, np.uint16])
def test_load_vectors_accepts_numbers_as_float32(dtype) -> None:
    out = load_vectors(npy(GOOD.astype(dtype)), "v.npy")
    assert out.dtype == np.float32 and out.shape == (N_GOOD, D_GOOD) and out.flags.c_contiguous


def test_load_vectors_reads_booleans_as_binary_codes() -> None:
    """Booleans were refused as "not numbers"; with vectors computed elsewhere (isoscope.data.vectors) they are
    binary codes, read as -1/+1 (tests/core/data/test_vectors.py checks the warning that says so)."""
    bits = GOOD > 0
    np.testing.assert_array_equal(load_vectors(npy(bits), "v.npy"), np.where(bits, 1.0, -1.0).astype(np.float32))


def test_fortran_order_and_big_endian_load() -> None:
    for arr in (np.asfortranarray(GOOD), GOOD.astype(">f4")):
        np.testing.assert_array_equal(load_vectors(npy(arr), "v.npy"), GOOD)


# ---------------------------------------------------------------- the Neighbours upload (AppTest)

PAGE = "neighbours"
APP_REFUSED = [c for c in REFUSED if c[0] not in ("rows_200k", "claims_400mb")]  # keep the session light


def _set(at, key: str, name: str, data: bytes):
    at.file_uploader(key=key).set_value((name, data, "application/octet-stream")).run()
    return at


@pytest.fixture(scope="module")
def loaded():
    """The Neighbours page with good vectors and their texts uploaded."""
    at = open_page(new_app(), PAGE)
    at.radio(key="nb_source").set_value("Upload vectors (.npy)").run()
    _set(at, "nb_meta_upload", "texts.txt", GOOD_CORPUS_TXT)
    _set(at, "nb_vec_upload", "good.npy", npy(GOOD))
    assert not at.exception and not at.error, [e.value for e in at.error]
    caption = " ".join(c.value for c in at.caption).replace("\\", "")
    assert f"good.npy: {N_GOOD} vectors of dimension {D_GOOD}" in caption
    return at


@pytest.mark.parametrize(("case", "data", "fragments"), APP_REFUSED, ids=[c[0] for c in APP_REFUSED])
def test_app_upload_refused_keeps_good_vectors(loaded, case, data, fragments, tmp_path: Path) -> None:
    marker = tmp_path / "MARKER"
    charts = len(loaded.get("plotly_chart"))
    _set(loaded, "nb_vec_upload", f"{case}.npy", _bytes(data, marker))
    assert_app_refused(loaded, *fragments)
    caption = " ".join(c.value for c in loaded.caption).replace("\\", "")
    assert "good.npy" in caption  # the previous vectors are still in use
    assert len(loaded.get("plotly_chart")) == charts
    assert not marker.exists()


def test_app_low_dimension_vectors_work() -> None:
    """Valid 16-dimensional vectors load without an error box."""
    at = open_page(new_app(), PAGE)
    at.radio(key="nb_source").set_value("Upload vectors (.npy)").run()
    _set(at, "nb_meta_upload", "texts.txt", GOOD_CORPUS_TXT)
    _set(at, "nb_vec_upload", "small.npy", npy(GOOD[:, :16]))
    assert not at.exception
    assert not at.error, [e.value for e in at.error]


def test_app_upload_wrong_row_count(loaded) -> None:
    _set(loaded, "nb_vec_upload", "short.npy", npy(GOOD[:10]))
    msg = assert_app_refused(loaded, "10 rows", "32 texts")
    assert "short.npy" in msg
    _set(loaded, "nb_vec_upload", "good.npy", npy(GOOD))  # back to a matching pair
    assert not loaded.error
