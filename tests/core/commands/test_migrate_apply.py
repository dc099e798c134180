"""``isoscope migrate apply`` (issue 53.4), through its module's ``add_arguments`` and ``run`` (the ``migrate``
command registers it as its ``apply`` action): the result on stdout (``--json``: one object), progress as whole
lines on a stderr that is not a terminal and none with ``--quiet``, options refused in one line naming the flag."""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from isoscope.commands import migrate_apply
from isoscope.errors import InputError
from isoscope.migrate import apply as apply_module
from isoscope.migrate.adapters import unit_rows
from isoscope.migrate.methods import make_adapter
from isoscope.space import progress as progress_module


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="isoscope migrate apply")
    migrate_apply.add_arguments(p)
    return p


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("apply")
    rng = np.random.default_rng(0)
    X = unit_rows(rng.normal(size=(300, 16)) + 1.0, "X")
    make_adapter("procrustes").fit(X, X @ rng.normal(size=(16, 20))).save(root / "adapter", metadata={})
    V = rng.normal(size=(5_000, 16)).astype(np.float32)
    np.save(root / "v.npy", V)
    (root / "shards").mkdir()
    emb = pa.FixedSizeListArray.from_arrays(pa.array(V.ravel()), 16)
    pq.write_table(pa.table({"id": np.arange(5_000), "emb": emb}), root / "shards" / "a.parquet")
    return root


def test_the_options_match_the_library():
    assert migrate_apply.ENGINES == apply_module.ENGINES
    assert migrate_apply.DEFAULT_CHUNK_ROWS == apply_module.DEFAULT_CHUNK_ROWS


def test_json_on_stdout_and_progress_lines_on_a_log(tmp_path, files, capsys, monkeypatch):
    monkeypatch.setattr(progress_module, "LINE_INTERVAL_S", 0.0)
    log = open(tmp_path / "log", "w", encoding="utf-8")  # stderr as in `2> log`: not a terminal
    monkeypatch.setattr(sys, "stderr", log)
    argv = ["--adapter", str(files / "adapter"), "--vectors", str(files / "v.npy"), "--out", str(tmp_path / "o.npy")]
    result = migrate_apply.run(_parser().parse_args([*argv, "--chunk-rows", "1000", "--json"]))
    log.close()
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads(json.dumps(result)) and printed["rows"] == 5_000 and printed["units"] == 5
    lines = (tmp_path / "log").read_text().splitlines()
    assert lines and "\r" not in "".join(lines) and all(line.startswith("apply: ") for line in lines)
    assert lines[-1].startswith("apply: 5,000/5,000 rows")
    out = migrate_apply.run(_parser().parse_args([*argv[:4], "--out", str(tmp_path / "q.npy"), "--quiet"]))
    assert out["dim_out"] == 20 and "mapped 5,000 vectors 16 -> 20 with procrustes" in capsys.readouterr().out


def test_a_shard_folder_by_its_flag(tmp_path, files, capsys):
    args = ["--adapter", str(files / "adapter"), "--shards", f"{files / 'shards'}:emb", "--out", str(tmp_path / "m")]
    result = migrate_apply.run(_parser().parse_args([*args, "--quiet"]))
    assert (result["format"], result["column"], result["units"]) == ("shards", "emb", 1)
    assert "1 shard(s)" in capsys.readouterr().out


def test_options_refused_in_one_line(tmp_path, files, capsys):
    adapter = ["--adapter", str(files / "adapter")]
    with pytest.raises(SystemExit):  # argparse: one of --vectors / --shards, not both
        _parser().parse_args([*adapter, "--vectors", "a.npy", "--shards", "d", "--out", "o"])
    assert "not allowed with argument" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        _parser().parse_args([*adapter, "--vectors", "a.npy", "--out", "o", "--chunk-rows", "0"])
    assert "--chunk-rows: must be between 1" in capsys.readouterr().err
    cases = [
        (["--shards", str(files / "v.npy")], "--shards .* not a folder"),
        (["--vectors", str(files / "shards")], "--vectors .* is a folder"),
        (["--vectors", str(files / "v.npy"), "--engine", "ray"], "--engine ray maps a folder"),
    ]
    for extra, words in cases:
        with pytest.raises(InputError, match=words):
            migrate_apply.run(_parser().parse_args([*adapter, *extra, "--out", str(tmp_path / "x.npy"), "--quiet"]))


def test_the_module_imports_nothing_heavy():
    """``isoscope migrate apply --help`` answers at once: numpy, pyarrow, torch, ... load in ``run``."""
    import subprocess

    code = (
        "import sys, isoscope.commands.migrate_apply\n"
        "heavy = [m for m in ('numpy', 'pyarrow', 'torch', 'pandas', 'faiss', 'sklearn') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
