"""Issue 51, item 2, on shard folders: a folder of Parquet shards holding a FIFO, a link loop or a dangling link
named ``part-1.parquet`` built an atlas of the *other* shards' rows with no word (the entry was skipped as
"not a file"). Every ``*.parquet`` entry is now listed with ``isoscope.paths.regular_files``, so the shard that
cannot be read stops the build naming it: exit status 2, one line, nothing written, no shard changed, and the
refusal costs little (peak under 1 GiB in a child)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from isoscope.atlas.synthetic import synthetic_vectors
from isoscope.data.sharded import ParquetShards
from isoscope.errors import InputError
from tests.hostile.cli_child import assert_refused, run_cli_child, snapshot
from tests.hostile.conftest import assert_cli_refused
from tests.hostile.peak import GiB


def _shards(folder: Path) -> Path:
    """Three shards of 70 rows (texts and 8-dimension vectors): part-0, part-1, part-2."""
    texts, _, vectors = synthetic_vectors(210, 8, seed=3)
    folder.mkdir(parents=True)
    for i in range(3):
        rows = slice(70 * i, 70 * (i + 1))
        emb = pa.FixedSizeListArray.from_arrays(pa.array(vectors[rows].ravel(), pa.float32()), 8)
        pq.write_table(pa.table({"text": texts[rows], "embedding": emb}), folder / f"part-{i}.parquet")
    return folder


def _fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def _loop(path: Path) -> None:
    path.unlink()
    path.symlink_to(path.name)


def _dangling(path: Path) -> None:
    path.unlink()
    path.symlink_to(path.parent / "moved" / path.name)


CASES: list[tuple[str, Callable[[Path], None], str]] = [
    ("fifo", _fifo, "FIFO"),
    ("link_loop", _loop, "link loop"),
    ("dangling_link", _dangling, "cannot be read"),
]


def _damaged(tmp_path: Path, case: str, make: Callable[[Path], None]) -> Path:
    folder = _shards(tmp_path / case)
    make(folder / "part-1.parquet")
    return folder


@pytest.mark.parametrize(("case", "make", "what"), CASES, ids=[c[0] for c in CASES])
def test_a_shard_that_cannot_be_read_stops_the_build_naming_it(cli, tmp_path, case, make, what) -> None:
    folder = _damaged(tmp_path, case, make)
    with pytest.raises(InputError, match=f"part-1.parquet .*{what}") as info:
        ParquetShards.open(folder, vector_column="embedding")
    assert "\n" not in str(info.value)
    was = snapshot(folder)
    out = tmp_path / "atlas"
    r = cli("atlas", "--vectors", str(folder), "--out", str(out), "--layout", "pca", "--calibrate", "none", "--quiet")
    assert_cli_refused(r, "part-1.parquet", what)
    assert not out.exists() and snapshot(folder) == was  # nothing written, no shard touched


def test_the_refusals_cost_little(tmp_path) -> None:
    """The same command lines in a child: the peak memory of all three refusals stays under 1 GiB."""
    folders = [_damaged(tmp_path, case, make) for case, make, _ in CASES]
    argvs = [
        ["atlas", "--vectors", str(f), "--out", str(tmp_path / f"{f.name}-atlas"), "--layout", "pca", "--quiet"]
        for f in folders
    ]
    run = run_cli_child(argvs, tmp_path, timeout=240)
    for (_, _, what), result in zip(CASES, run.results, strict=True):
        assert_refused(result, "part-1.parquet", what)
    assert run.peak < GiB, f"peak {run.peak / 2**20:.0f} MiB"
