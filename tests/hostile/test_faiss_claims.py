"""FAISS files whose sizes lie (the last round's ledger): an index file claiming 2**33 floats of codes, or an
inverted list of 2**28 rows, in a file of a few hundred bytes, its description's SHA-256 recomputed by the forger.
``isoscope.neighbours.index.read_faiss`` compares every claim to the file's real size (the description's rows
before a byte is read; each array FAISS reads, through its deserialisation limit set to the file's size): one
InputError line naming the file, and memory stays bounded."""

from __future__ import annotations

import hashlib
import json
import struct
from pathlib import Path

import numpy as np
import pytest

from isoscope.errors import InputError
from isoscope.neighbours.index import IndexParams, VectorIndex, build_index, sidecar_path
from tests.hostile.conftest import assert_one_line
from tests.hostile.peak import GiB, child_peak

MiB = 2**20
ROWS, DIM = 10, 8


def _reseal(path: Path, data: bytes, **meta_changes: object) -> Path:
    """``data`` written as ``path`` with its description's SHA-256 recomputed (a forger's whole job)."""
    path.write_bytes(data)
    meta = json.loads(sidecar_path(path).read_text())
    sidecar_path(path).write_text(json.dumps({**meta, "sha256": hashlib.sha256(data).hexdigest(), **meta_changes}))
    return path


def forged_flat(folder: Path, claim: int) -> Path:
    """A flat index of 10 x 8 rows whose stored-vectors array claims ``claim`` floats instead of 80."""
    path = folder / "flat.faiss"
    build_index(np.random.default_rng(0).normal(size=(ROWS, DIM)), "flat").save(path)
    data = bytearray(path.read_bytes())
    at = data.find(struct.pack("<Q", ROWS * DIM))
    assert at > 0, "the array's size field was not found"
    data[at : at + 8] = struct.pack("<Q", claim)
    return _reseal(path, bytes(data))


def forged_ivf(folder: Path, claim: int) -> Path:
    """An IVF index of 400 rows whose first inverted list claims ``claim`` rows."""
    path = folder / "ivf.faiss"
    rows = np.random.default_rng(0).normal(size=(400, DIM))
    build_index(rows, "ivf", IndexParams(nlist=4, nprobe=4)).save(path)
    data = bytearray(path.read_bytes())
    at = data.find(b"ilar") + 24  # "ilar", nlist, code size, "full": then the list sizes (a count, then sizes)
    assert struct.unpack("<Q", data[at : at + 8])[0] == 4
    data[at + 8 : at + 16] = struct.pack("<Q", claim)
    return _reseal(path, bytes(data))


@pytest.mark.parametrize(
    ("forge", "claim"),
    [(forged_flat, 2**33), (forged_flat, 2**60), (forged_flat, 2**20), (forged_ivf, 2**28), (forged_ivf, 2**60)],
    ids=["flat-2^33", "flat-2^60", "flat-2^20", "ivf-2^28", "ivf-2^60"],
)
def test_a_faiss_file_claiming_more_than_it_holds_is_refused(tmp_path: Path, forge, claim: int) -> None:
    """Before: 2**33 floats were allocated (a MemoryError under a 6 GiB cap: an internal error), 2**60 read as a
    bare FAISS assertion."""
    path = forge(tmp_path, claim)
    with pytest.raises(InputError) as info:
        VectorIndex.load(path)
    assert_one_line(str(info.value))
    assert f"{path.name} claims more data than its {path.stat().st_size:,} bytes hold" in str(info.value)


def test_a_description_claiming_more_rows_than_the_file_holds_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "flat.faiss"
    build_index(np.random.default_rng(1).normal(size=(ROWS, DIM)), "flat").save(path)
    _reseal(path, path.read_bytes(), ntotal=10**12)
    with pytest.raises(InputError, match=r"flat\.faiss: its description claims 1,000,000,000,000 rows"):
        VectorIndex.load(path)


def test_after_a_refusal_faiss_reads_big_files_again(tmp_path: Path) -> None:
    """The limit is FAISS's global setting: set for one read and put back."""
    import faiss

    before = faiss.get_deserialization_vector_byte_limit()
    with pytest.raises(InputError):
        VectorIndex.load(forged_flat(tmp_path, 2**33))
    assert faiss.get_deserialization_vector_byte_limit() == before


LOAD_CHILD = """
import sys
from isoscope.errors import InputError
from isoscope.neighbours.index import VectorIndex
try:
    VectorIndex.load(sys.argv[2])
except InputError as exc:
    print(exc, file=sys.stderr)
    sys.exit(3)
"""


def test_a_claim_of_32_gib_costs_no_memory(tmp_path: Path) -> None:
    path = forged_flat(tmp_path, 2**33)  # 2**33 floats: 32 GiB
    code, err, peak = child_peak([LOAD_CHILD, str(path)], tmp_path, limit=8 * GiB)
    assert code == 3, err[-2000:]
    assert_one_line(err.strip().splitlines()[-1])
    assert peak < 1 * GiB, f"peak {peak / MiB:,.0f} MiB"
