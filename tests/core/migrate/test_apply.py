"""``apply_adapter`` (issue 53.4): stored vectors mapped through a saved adapter, chunk by chunk, in the input's own
format with every other column kept; memory that does not grow with the rows; a run killed half-way leaves
nothing under the output's name and its rerun keeps the chunks it had finished (checked, a damaged one redone);
a folder of Parquet shards shard by shard; what cannot be mapped is refused in one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tracemalloc

import numpy as np
import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.parquet as pq
import pytest

from isoscope.data.vectors import load_vector_file
from isoscope.errors import InputError
from isoscope.migrate.adapters import Adapter, unit_rows
from isoscope.migrate.apply import COMPUTE_ROWS, LEDGER, SHARDS_LEDGER, WORK_SUFFIX, apply_adapter
from isoscope.migrate.methods import make_adapter

D, E = 24, 32


def _rel(got: np.ndarray, want: np.ndarray) -> float:
    return float((np.linalg.norm(got - want, axis=1) / np.linalg.norm(want, axis=1)).max())


@pytest.fixture(scope="module")
def adapter_dir(tmp_path_factory):
    """A ridge adapter 24 -> 32 saved as ``isoscope migrate --out`` saves one."""
    rng = np.random.default_rng(0)
    X = unit_rows(rng.normal(size=(600, D)) + 1.0, "X")
    Y = X @ rng.normal(size=(D, E)) + 0.3 + 0.05 * rng.normal(size=(600, E))
    folder = tmp_path_factory.mktemp("adapter") / "ridge"
    make_adapter("ridge").fit(X, Y).save(folder, metadata={"direction": "old->new"})
    return folder


def _vectors(n: int, seed: int = 1, dtype=np.float32) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, D)).astype(dtype)


def _table(V: np.ndarray, start: int = 0, fixed: bool = True) -> pa.Table:
    n = len(V)
    flat = pa.array(np.ascontiguousarray(V, np.float32).ravel())
    emb = (
        pa.FixedSizeListArray.from_arrays(flat, D)
        if fixed
        else pa.ListArray.from_arrays(pa.array(np.arange(0, (n + 1) * D, D, dtype=np.int32)), flat)
    )
    ids = pa.array(np.arange(start, start + n))
    return pa.table({"id": ids, "text": [f"text {i}" for i in range(start, start + n)], "emb": emb})


def _read(path, column="emb") -> tuple[np.ndarray, pa.Table]:
    table = pq.read_table(path) if path.suffix == ".parquet" else feather.read_table(path)
    return np.stack(table.column(column).to_numpy(zero_copy_only=False)), table


def test_every_format_maps_as_the_adapter_does_and_keeps_the_other_columns(tmp_path, adapter_dir):
    from isoscope.migrate.adapters import Adapter

    adapter = Adapter.load(adapter_dir)
    V = _vectors(7_000)
    np.save(tmp_path / "v.npy", V.astype(np.float64))  # stored as float64: read as Isoscope's loader reads it
    pq.write_table(_table(V, fixed=False), tmp_path / "v.parquet", row_group_size=2_500)  # list<float32>
    feather.write_feather(_table(V), tmp_path / "v.feather", chunksize=3_000)
    for name in ("v.npy", "v.parquet", "v.feather"):
        out = tmp_path / f"mapped-{name}"
        report = apply_adapter(adapter_dir, tmp_path / name, out, chunk_rows=1_000)  # chunks cut across batches
        assert (report.rows, report.dim_in, report.dim_out, report.units) == (7_000, D, E, 7)
        assert report.direction == "old->new" and report.resumed == 0
        want = adapter.transform(load_vector_file(str(tmp_path / name)).vectors)  # (7000, 32)
        if name.endswith(".npy"):
            got = np.load(out)
        else:
            got, table = _read(out)
            assert table.column("id").to_pylist() == list(range(7_000))  # row order and the other columns kept
            assert table.column("text").to_pylist()[:2] == ["text 0", "text 1"]
            assert table.schema.field("emb").type == pa.list_(pa.float32(), E)
        # float32 rows of the same float64 arithmetic, blocked differently: equal to a float32 rounding
        assert got.dtype == np.float32 and got.shape == (7_000, E) and _rel(got, want) <= 1e-6, name
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no work folder left


def test_memory_does_not_grow_with_the_rows(tmp_path, adapter_dir):
    """The peak of what numpy allocates while mapping 4x more rows is the same: a block, never the file. (The
    adapter is loaded before: its JSON reader allocates its byte limit, 16 MiB, whatever the file's size.)"""
    adapter, peaks = Adapter.load(adapter_dir), []
    for n in (2 * COMPUTE_ROWS, 8 * COMPUTE_ROWS):
        np.save(tmp_path / f"{n}.npy", _vectors(n))
        tracemalloc.start()
        apply_adapter(adapter, tmp_path / f"{n}.npy", tmp_path / f"out-{n}.npy", chunk_rows=COMPUTE_ROWS)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    whole = 8 * COMPUTE_ROWS * (D + E) * 4  # the larger input and output held whole
    assert peaks[1] < 1.25 * peaks[0] and peaks[1] < whole, peaks


KILL = """
import os, sys
from isoscope.migrate.apply import apply_adapter
adapter, source, out, at = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
def progress(done, total):
    if done >= at:
        os.kill(os.getpid(), 9)  # killed as a worker is: no cleanup runs
apply_adapter(adapter, source, out, chunk_rows=1000, progress=progress)
"""


def _killed_run(adapter_dir, source, out, at: int) -> None:
    proc = subprocess.run([sys.executable, "-c", KILL, str(adapter_dir), str(source), str(out), str(at)], timeout=300)
    assert proc.returncode == -9


@pytest.mark.parametrize("suffix", [".npy", ".parquet"])
def test_a_killed_run_leaves_no_output_and_its_rerun_keeps_the_finished_chunks(tmp_path, adapter_dir, suffix):
    V = _vectors(6_000)
    source = tmp_path / f"v{suffix}"
    np.save(source, V) if suffix == ".npy" else pq.write_table(_table(V), source, row_group_size=1_500)
    apply_adapter(adapter_dir, source, tmp_path / f"whole{suffix}", chunk_rows=1000)  # the same job, uninterrupted
    out = tmp_path / f"out{suffix}"
    _killed_run(adapter_dir, source, out, at=3_500)
    work = tmp_path / f".{out.name}{WORK_SUFFIX}"
    assert not out.exists() and work.is_dir()  # nothing under the final name
    done = json.loads((work / LEDGER).read_text())["chunks"]
    assert 3 <= len(done) < 6  # the chunks finished before the kill, recorded
    report = apply_adapter(adapter_dir, source, out, chunk_rows=1000)
    assert report.resumed == len(done) and report.units == 6 and not work.exists()
    if suffix == ".npy":
        assert np.array_equal(np.load(out), np.load(tmp_path / f"whole{suffix}"))
    else:
        assert pq.read_table(out).equals(pq.read_table(tmp_path / f"whole{suffix}"))


def test_a_damaged_chunk_is_redone_and_a_changed_input_starts_over(tmp_path, adapter_dir):
    V = _vectors(6_000)
    np.save(tmp_path / "v.npy", V)
    out = tmp_path / "out.npy"
    _killed_run(adapter_dir, tmp_path / "v.npy", out, at=3_500)
    work = tmp_path / f".out.npy{WORK_SUFFIX}"
    done = len(json.loads((work / LEDGER).read_text())["chunks"])
    with open(work / "mapped.npy", "r+b") as f:  # a byte of chunk 0 changed after it was recorded
        f.seek(200)
        f.write(b"\x7f")
    report = apply_adapter(adapter_dir, tmp_path / "v.npy", out, chunk_rows=1000)
    assert report.resumed == done - 1
    whole = apply_adapter(adapter_dir, tmp_path / "v.npy", tmp_path / "whole.npy", chunk_rows=1000)
    assert whole.resumed == 0 and np.array_equal(np.load(out), np.load(tmp_path / "whole.npy"))
    _killed_run(adapter_dir, tmp_path / "v.npy", tmp_path / "again.npy", at=3_500)
    np.save(tmp_path / "v.npy", _vectors(6_000, seed=2))  # the input changed since
    report = apply_adapter(adapter_dir, tmp_path / "v.npy", tmp_path / "again.npy", chunk_rows=1000)
    assert report.resumed == 0 and "discarded" in report.warnings[0]


def _shards(folder, sizes=(1_000, 2_500, 700)) -> list[np.ndarray]:
    folder.mkdir()
    parts, start = [], 0
    for i, n in enumerate(sizes):
        V = _vectors(n, seed=10 + i)
        pq.write_table(_table(V, start), folder / f"part-{i}.parquet", row_group_size=600)
        parts.append(V)
        start += n
    return parts


def test_a_shard_folder_is_mapped_shard_by_shard_and_resumed(tmp_path, adapter_dir):
    from isoscope.migrate.adapters import Adapter

    adapter = Adapter.load(adapter_dir)
    parts = _shards(tmp_path / "in")
    report = apply_adapter(adapter_dir, tmp_path / "in", tmp_path / "out")
    assert (report.format, report.units, report.resumed, report.rows) == ("shards", 3, 0, 4_200)
    start = 0
    for i, V in enumerate(parts):
        got, table = _read(tmp_path / "out" / f"part-{i}.parquet")
        assert _rel(got, adapter.transform(V)) <= 1e-6
        assert table.column("id").to_pylist() == list(range(start, start + len(V)))
        start += len(V)
    ledger = json.loads((tmp_path / "out" / SHARDS_LEDGER).read_text())
    assert sorted(ledger["shards"]) == ["part-0.parquet", "part-1.parquet", "part-2.parquet"]
    assert apply_adapter(adapter_dir, tmp_path / "in", tmp_path / "out").resumed == 3  # nothing to do
    pq.write_table(_table(_vectors(1_000, seed=99)), tmp_path / "in" / "part-0.parquet")  # one shard changed
    assert apply_adapter(adapter_dir, tmp_path / "in", tmp_path / "out").resumed == 2


def test_what_cannot_be_mapped_is_refused_in_one_line(tmp_path, adapter_dir):
    V = _vectors(3_000)
    V[2_345, 3] = np.nan
    np.save(tmp_path / "nan.npy", V)
    V[2_345, 3], V[1_234] = 0.0, 0.0
    np.save(tmp_path / "zero.npy", V)
    np.save(tmp_path / "narrow.npy", V[:, :10])
    np.save(tmp_path / "ok.npy", _vectors(100))
    pq.write_table(_table(_vectors(100)), tmp_path / "ok.parquet")
    _shards(tmp_path / "in")
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "mine.txt").write_text("keep")
    cases = [
        ("nan.npy", "nan-out.npy", {}, "row 2,345 .counting from 0. holds NaN"),
        ("zero.npy", "zero-out.npy", {}, "row 1,234 .counting from 0. is all zeros"),
        ("narrow.npy", "narrow-out.npy", {}, "holds 10-dimensional vectors but ridge maps 24"),
        ("ok.npy", "ok.npy", {}, "is the input --vectors"),
        ("ok.npy", adapter_dir / "x.npy", {}, "is inside the input folder --adapter"),  # absolute: tmp_path / it
        ("ok.npy", "ok.parquet", {}, "write the mapped vectors as .npy"),
        ("ok.npy", "x.npy", {"engine": "ray"}, "--engine ray maps a folder"),
        ("ok.npy", "x.npy", {"column": "emb"}, "a .npy file has no columns"),
        ("ok.parquet", "x.parquet", {"column": "nope"}, "no column 'nope'"),
        ("ok.npy", "x.npy", {"chunk_rows": 0}, "--chunk-rows must be between"),
        ("in", "in/sub", {}, "overlaps the input folder"),
        ("in", "busy", {}, "holding other files"),
    ]
    for source, out, kwargs, words in cases:
        with pytest.raises(InputError, match=words) as err:
            apply_adapter(adapter_dir, tmp_path / source, tmp_path / out, **kwargs)
        assert "\n" not in str(err.value), source
    assert (tmp_path / "busy" / "mine.txt").read_text() == "keep"
    assert not (tmp_path / "nan-out.npy").exists() and not (tmp_path / "in" / "sub").exists()
    apply_adapter(adapter_dir, tmp_path / "ok.npy", tmp_path / "done.npy")
    assert apply_adapter(adapter_dir, tmp_path / "ok.npy", tmp_path / "done.npy").rows == 100  # a .npy: replaced
    (tmp_path / "notes.npy").write_text("mine")
    with pytest.raises(InputError, match=r"exists and is not a \.npy array; add --force"):
        apply_adapter(adapter_dir, tmp_path / "ok.npy", tmp_path / "notes.npy")
    assert (tmp_path / "notes.npy").read_text() == "mine"
    assert apply_adapter(adapter_dir, tmp_path / "ok.npy", tmp_path / "notes.npy", force=True).rows == 100
    other = make_adapter("procrustes").fit(_vectors(100), _vectors(100, seed=3))
    apply_adapter(adapter_dir, tmp_path / "in", tmp_path / "mapped")
    with pytest.raises(InputError, match="holds the output of another adapter"):
        apply_adapter(other, tmp_path / "in", tmp_path / "mapped")
    assert apply_adapter(other, tmp_path / "in", tmp_path / "mapped", force=True).resumed == 0


def test_the_ray_engine_maps_each_shard_as_the_local_one(tmp_path, adapter_dir):
    _shards(tmp_path / "in", sizes=(1_500, 900, 2_000, 300))
    local = apply_adapter(adapter_dir, tmp_path / "in", tmp_path / "local")
    ray = apply_adapter(adapter_dir, tmp_path / "in", tmp_path / "ray", engine="ray")
    assert (ray.engine, ray.units, ray.rows) == ("ray", 4, local.rows)
    for i in range(4):
        name = f"part-{i}.parquet"
        assert pq.read_table(tmp_path / "ray" / name).equals(pq.read_table(tmp_path / "local" / name))
    assert os.path.exists(tmp_path / "ray" / SHARDS_LEDGER)
