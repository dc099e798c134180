"""isoscope.data.outputs: the rules every output follows (no input overwritten or swallowed, nothing of another
kind replaced without force, a folder never removed to make room) and the atomic writers (a temporary name
beside the destination, renamed in when complete)."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from isoscope.data import outputs as o
from isoscope.errors import InputError

ROOT = Path(__file__).resolve().parents[3]


def _npy(path: Path, rows: int = 3) -> bytes:
    np.save(path, np.arange(rows * 2, dtype=np.float32).reshape(rows, 2), allow_pickle=False)
    return path.read_bytes()


def test_the_folder_markers_are_the_owning_modules_constants() -> None:
    from isoscope.atlas.folder import MANIFEST as ATLAS_MANIFEST
    from isoscope.atlas.pipeline import FORMAT as ATLAS_FORMAT
    from isoscope.calibrate.base import FORMAT, JSON_NAME, TENSORS_NAME
    from isoscope.encode.manifest import MANIFEST_FILE, MANIFEST_FORMAT
    from isoscope.encode.shards import MANIFEST as SHARDS_MANIFEST
    from isoscope.encode.shards import SHARDS_FORMAT
    from isoscope.landscape.results import SUMMARY
    from isoscope.paths import STSB_FILES

    assert o.EXPORT_FOLDER.markers == (MANIFEST_FILE,) and o.EXPORT_FOLDER.marker_format == MANIFEST_FORMAT
    assert o.CALIBRATOR_FOLDER.markers == (JSON_NAME,) and o.CALIBRATOR_FOLDER.marker_format == FORMAT
    assert set(o.CALIBRATOR_FOLDER.members) == {JSON_NAME, TENSORS_NAME}
    assert o.ATLAS_FOLDER.markers == (ATLAS_MANIFEST,) and o.ATLAS_FOLDER.marker_format == ATLAS_FORMAT
    assert o.SHARDS_FOLDER.markers == (SHARDS_MANIFEST,) and o.SHARDS_FOLDER.marker_format == SHARDS_FORMAT
    assert SUMMARY in o.LANDSCAPE_FOLDER.markers
    assert set(o.STSB_FOLDER.markers) == set(STSB_FILES)


def test_each_file_kind_knows_the_files_its_writer_writes_and_no_other(tmp_path: Path) -> None:
    import faiss
    import pandas as pd
    import pyarrow as pa
    import pyarrow.feather as feather
    import pyarrow.parquet as pq
    from safetensors.numpy import save_file

    from isoscope.cache import npy_bytes
    from isoscope.data.export import safe_csv

    table = pa.table({"x": [1.0, 2.0]})
    made = {
        o.NPY: lambda p: p.write_bytes(npy_bytes(np.zeros(3, np.float32))),
        o.PARQUET: lambda p: pq.write_table(table, p),
        o.ARROW: lambda p: feather.write_feather(table, p),
        o.SAFETENSORS: lambda p: save_file({"v": np.zeros((2, 2), np.float32)}, str(p)),
        o.FAISS: lambda p: faiss.write_index(faiss.IndexFlatIP(4), str(p)),
        o.REPORT: lambda p: p.write_text('<!DOCTYPE html><html><head><meta name="generator" content="Isoscope">'),
        o.PER_QUERY_CSV: lambda p: p.write_bytes(safe_csv(pd.DataFrame({"variant": ["raw"], "query_id": ["q"]}))),
    }
    files = {}
    for i, (kind, write) in enumerate(made.items()):
        files[kind] = tmp_path / f"f{i}.bin"
        write(files[kind])
    for kind in made:
        for other, path in files.items():
            assert o._sniffed(path, kind) == (other is kind), (kind.name, other.name)


def test_the_report_renderer_writes_the_marker_the_report_kind_looks_for() -> None:
    src = (ROOT / "core" / "space" / "report" / "render.py").read_text(encoding="utf-8")
    assert '<meta name="generator" content="Isoscope">' in src


@pytest.mark.parametrize("how", ["same", "link", "hardlink", "holds", "inside"])
def test_an_output_that_is_holds_or_lies_in_an_input_is_refused(tmp_path: Path, how: str) -> None:
    data = tmp_path / "data"
    data.mkdir()
    vectors = data / "in.npy"
    before = _npy(vectors)
    out = {
        "same": vectors,
        "link": tmp_path / "link.npy",
        "hardlink": tmp_path / "hard.npy",
        "holds": data,
        "inside": data / "sub" / "out.npy",
    }[how]
    if how == "link":
        out.symlink_to(vectors)
    if how == "hardlink":
        os.link(vectors, out)
    given = data if how == "inside" else f"{vectors}:emb"  # FILE:COLUMN counts by its file
    with pytest.raises(InputError, match="--out") as err:
        o.check_output(out, kind=o.NPY, inputs=[("--vectors", given)])
    assert "input" in str(err.value)
    assert vectors.read_bytes() == before


def test_names_that_are_not_paths_are_not_inputs(tmp_path: Path) -> None:
    out = tmp_path / "out.npy"
    assert o.check_output(out, kind=o.NPY, inputs=["default", None, "", "openai:text-embedding-3-small"]) == out


def test_an_existing_output_of_the_same_kind_is_replaced_and_another_kind_needs_force(tmp_path: Path) -> None:
    same, other = tmp_path / "old.npy", tmp_path / "precious.npy"
    _npy(same)
    other.write_text("my notes\n")
    assert o.check_destination(same, kind=o.NPY) == same
    with pytest.raises(InputError, match=r"--out .*precious\.npy exists and is not a \.npy array; add --force"):
        o.check_destination(other, kind=o.NPY)
    assert o.check_destination(other, kind=o.NPY, force=True) == other
    assert other.read_text() == "my notes\n"  # checked, not touched


def test_a_fifo_is_another_kind_and_is_never_opened(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.npy"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="not a regular file"):
        o.check_destination(fifo, kind=o.NPY)  # would block forever if it were opened for reading


def test_a_folder_is_never_replaced_by_a_file_nor_a_file_by_a_folder(tmp_path: Path) -> None:
    folder, file = tmp_path / "x.faiss", tmp_path / "notes.txt"
    folder.mkdir()
    file.write_text("keep")
    for force in (False, True):
        with pytest.raises(InputError, match="is a folder"):
            o.check_destination(folder, kind=o.FAISS, force=force)
        with pytest.raises(InputError, match="is a file; give a folder"):
            o.check_destination(file, kind=o.EXPORT_FOLDER)


def test_a_folder_of_another_kind_or_holding_other_files_is_refused(tmp_path: Path) -> None:
    stuff = tmp_path / "stuff"
    stuff.mkdir()
    (stuff / "thesis.tex").write_text("years of work")
    with pytest.raises(InputError, match="is a folder that is not an exported model folder; give a new or empty"):
        o.check_destination(stuff, kind=o.EXPORT_FOLDER)
    cal = tmp_path / "cal"
    cal.mkdir()
    (cal / "calibrator.json").write_text(json.dumps({"format": "isoscope-calibrator"}))
    (cal / "calibrator.safetensors").write_bytes(b"")
    assert o.check_destination(cal, kind=o.CALIBRATOR_FOLDER) == cal
    (cal / "notes.txt").write_text("mine")
    with pytest.raises(InputError, match=r"holds files it would lose \(notes.txt\)"):
        o.check_destination(cal, kind=o.CALIBRATOR_FOLDER)
    atlas = tmp_path / "atlas"
    atlas.mkdir()
    (atlas / "manifest.json").write_text(json.dumps({"format": "isoscope-atlas"}))
    (atlas / "notes.txt").write_text("mine")
    assert o.check_destination(atlas, kind=o.ATLAS_FOLDER) == atlas  # built in place: nothing is removed
    with pytest.raises(InputError, match=r"holds a manifest\.json that does not mark a folder of embedding shards"):
        o.check_destination(atlas, kind=o.SHARDS_FOLDER)  # the same marker name, another format
    (atlas / "manifest.json").write_text("{not json")
    with pytest.raises(InputError, match=r"holds a manifest\.json that does not mark an atlas folder \(damaged"):
        o.check_destination(atlas, kind=o.ATLAS_FOLDER)


def test_an_export_folder_may_be_replaced_when_its_manifest_lists_everything_in_it(tmp_path: Path) -> None:
    from isoscope.encode.manifest import write_manifest

    folder = tmp_path / "fixed"
    (folder / "2_Dense").mkdir(parents=True)
    (folder / "2_Dense" / "model.safetensors").write_bytes(b"w")
    (folder / "config.json").write_text("{}")
    write_manifest(folder, {"format": "sentence-transformers"})
    assert o.check_destination(folder, kind=o.EXPORT_FOLDER) == folder
    (folder / "2_Dense" / "mine.txt").write_text("x")
    with pytest.raises(InputError, match=r"2_Dense/mine\.txt"):
        o.check_destination(folder, kind=o.EXPORT_FOLDER)


def test_atomic_file_keeps_the_previous_version_when_the_writer_fails(tmp_path: Path) -> None:
    out = tmp_path / "v.npy"
    before = _npy(out)
    with pytest.raises(RuntimeError), o.atomic_file(out, kind=o.NPY) as tmp:
        tmp.write_bytes(b"\x93NUMPY half")
        raise RuntimeError("the writer failed")
    assert out.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["v.npy"]  # the temporary file is gone
    with o.atomic_file(out, kind=o.NPY) as tmp:
        assert tmp.parent == tmp_path and tmp.name.startswith(".v.npy.") and tmp.is_file()
        buf = io.BytesIO()
        np.save(buf, np.ones(2, np.float32))
        tmp.write_bytes(buf.getvalue())
    assert np.array_equal(np.load(out), np.ones(2, np.float32))


def test_atomic_file_rechecks_the_destination_at_the_rename(tmp_path: Path) -> None:
    out = tmp_path / "v.npy"
    with pytest.raises(InputError, match="exists and is not"), o.atomic_file(out, kind=o.NPY) as tmp:
        tmp.write_bytes(b"\x93NUMPY")
        out.write_text("written by someone else meanwhile")
    assert out.read_text() == "written by someone else meanwhile"


def test_atomic_folder_replaces_a_previous_version_whole_or_not_at_all(tmp_path: Path) -> None:
    out = tmp_path / "cal"
    with o.atomic_folder(out, kind=o.CALIBRATOR_FOLDER) as tmp:
        (tmp / "calibrator.json").write_text(json.dumps({"format": "isoscope-calibrator", "v": 1}))
    with pytest.raises(RuntimeError), o.atomic_folder(out, kind=o.CALIBRATOR_FOLDER) as tmp:
        (tmp / "calibrator.json").write_text(json.dumps({"format": "isoscope-calibrator", "v": 2}))
        raise RuntimeError("the writer failed")
    assert json.loads((out / "calibrator.json").read_text())["v"] == 1
    with o.atomic_folder(out, kind=o.CALIBRATOR_FOLDER) as tmp:
        (tmp / "calibrator.json").write_text(json.dumps({"format": "isoscope-calibrator", "v": 3}))
    assert json.loads((out / "calibrator.json").read_text())["v"] == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cal"]  # no temporary or old folder left


def test_a_writer_killed_mid_write_leaves_the_previous_version(tmp_path: Path) -> None:
    out = tmp_path / "v.npy"
    before = _npy(out, rows=5)
    script = textwrap.dedent(
        """
        import os, signal, sys
        from isoscope.data.outputs import NPY, atomic_file

        with atomic_file(sys.argv[1], kind=NPY) as tmp:
            with open(tmp, "wb") as f:
                f.write(b"\\x93NUMPY" + b"x" * 100_000)
                f.flush()
                os.kill(os.getpid(), signal.SIGKILL)  # killed mid-write
        """
    )
    proc = subprocess.run([sys.executable, "-c", script, str(out)], capture_output=True, timeout=120, cwd=ROOT)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()[-2000:]
    assert out.read_bytes() == before
