"""Atlas folders that lie (issue 28, "Caches and saved state" and "Classroom"): a truncated layout, a swapped
or lying points.parquet, a NaN layout, neighbour ids out of range, builds of one folder at once, and the
class's row limit on the Atlas upload.

Every damaged file is noticed before use: a rerun of ``isoscope atlas`` rebuilds it (to the same bytes), a
reader refuses it with one line naming the file (the page shows that line, never a bug box), and a build
that another build of the same folder holds waits and then shares its stages.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from isoscope.atlas.folder import LEDGER, AtlasDamaged, file_digest, is_complete, load_atlas
from isoscope.atlas.pipeline import STAGES, AtlasConfig, build_atlas
from isoscope.atlas.synthetic import synthetic_corpus
from tests.hostile.cases import parquet_bomb
from tests.hostile.conftest import assert_cli_refused, assert_one_line

GiB = 2**30
CONFIG = AtlasConfig(layout="pca", calibrate="whitening")


def vectors_of(texts: list[str], dim: int = 16, seed: int = 0) -> np.ndarray:
    """Deterministic vectors for texts (no model: the folder is what is under test)."""
    rng = np.random.default_rng(seed)
    return rng.normal(0, 1, (len(texts), dim)).astype(np.float32)


def build(out: Path, n: int = 300, seed: int = 1):
    texts, topics = synthetic_corpus(n, seed)
    return build_atlas(None, texts, out, config=CONFIG, meta=pd.DataFrame({"topic": topics}), vectors=vectors_of(texts))


def rewrite_ledger(out: Path, rel: str) -> None:
    """Record ``rel`` as it is now (a forger who also fixed the ledger)."""
    ledger = json.loads((out / LEDGER).read_text())
    for entry in ledger["stages"].values():
        if rel in entry["outputs"]:
            entry["outputs"][rel] = [(out / rel).stat().st_size, file_digest(out / rel)]
    (out / LEDGER).write_text(json.dumps(ledger))


def refused(out: Path, *fragments: str) -> str:
    with pytest.raises(AtlasDamaged) as info:
        load_atlas(out)
    message = str(info.value)
    assert_one_line(message)
    for f in fragments:
        assert f in message, message
    assert str(out) not in message  # no server path in the message
    return message


def test_truncated_xy_is_refused_and_a_rerun_rebuilds_it(tmp_path):
    out = tmp_path / "a"
    build(out)
    before = (out / "raw" / "xy.npy").read_bytes()
    (out / "raw" / "xy.npy").write_bytes(before[: len(before) // 2])
    assert not is_complete(out)
    with pytest.raises(Exception) as info:
        load_atlas(out)
    assert_one_line(str(info.value))
    run = build(out)
    assert run.computed == ["raw_layout"]  # the clusters were drawn from the same layout: kept
    assert (out / "raw" / "xy.npy").read_bytes() == before
    load_atlas(out)


def test_a_rerun_of_the_command_rebuilds_a_truncated_layout(cli, tmp_path):
    from tests.vector_files import write_parquet

    texts, _ = synthetic_corpus(80, 2)
    src = write_parquet(tmp_path / "vectors.parquet", vectors_of(texts), texts)  # the command embeds nothing
    out = tmp_path / "atlas"
    args = ("atlas", "--vectors", f"{src}:emb", "--out", str(out), "--layout", "pca", "--calibrate", "none", "--quiet")
    assert cli(*args, "--json").code == 0
    xy = out / "raw" / "xy.npy"
    before = xy.read_bytes()
    xy.write_bytes(before[:-8])
    again = cli(*args, "--json")
    assert again.code == 0, again.err
    result = json.loads(again.out.strip().splitlines()[-1])
    assert result["computed"] == ["raw_layout"] and xy.read_bytes() == before


def test_a_swapped_points_parquet_is_refused_before_it_is_decoded(tmp_path):
    build(tmp_path / "a")
    build(tmp_path / "b", n=200, seed=9)
    (tmp_path / "a" / "points.parquet").write_bytes((tmp_path / "b" / "points.parquet").read_bytes())
    refused(tmp_path / "a", "points.parquet")


def test_a_lying_points_parquet_is_refused_within_the_decode_budget(tmp_path):
    """A Parquet file of 4 GB decoded (1.2 MB on disk) in place of points.parquet: refused at the SHA-256,
    in a child process whose peak memory is measured."""
    out = tmp_path / "a"
    build(out)
    parquet_bomb(out / "points.parquet")
    peak = tmp_path / "peak.txt"
    code = (
        "import sys\n"
        "from isoscope.atlas.folder import load_atlas\n"
        "try:\n"
        f"    load_atlas({str(out)!r})\n"
        "except Exception as exc:\n"
        "    print(type(exc).__name__, exc)\n"
        "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM:')][0].split()[1]\n"
        f"open({str(peak)!r}, 'w').write(hwm)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("AtlasDamaged") and "points.parquet" in done.stdout, done.stdout
    assert int(peak.read_text()) * 1024 < GiB


def test_a_nan_layout_is_refused_even_with_a_forged_ledger_and_rebuilt_by_a_rerun(tmp_path):
    out = tmp_path / "a"
    build(out)
    xy = np.load(out / "cal" / "xy.npy")
    good = (out / "cal" / "xy.npy").read_bytes()
    xy[3] = np.nan
    np.save(out / "cal" / "xy.npy", xy)
    refused(out, "cal/xy.npy", "changed")
    rewrite_ledger(out, "cal/xy.npy")
    refused(out, "cal/xy.npy", "NaN")
    (out / LEDGER).unlink()  # without its ledger every stage is rebuilt, to the same bytes
    run = build(out)
    assert run.computed == list(STAGES) and (out / "cal" / "xy.npy").read_bytes() == good
    load_atlas(out)


def test_neighbour_ids_out_of_range_are_refused(tmp_path):
    out = tmp_path / "a"
    build(out)
    ids = np.load(out / "raw" / "knn_ids.npy")
    ids[5, 2] = len(ids) + 7
    np.save(out / "raw" / "knn_ids.npy", ids)
    rewrite_ledger(out, "raw/knn_ids.npy")
    refused(out, "raw/knn_ids.npy", "outside")
    ids[5, 2] = -3
    np.save(out / "raw" / "knn_ids.npy", ids)
    rewrite_ledger(out, "raw/knn_ids.npy")
    refused(out, "raw/knn_ids.npy")


def test_a_fifo_in_place_of_a_layout_is_refused_without_opening_it(tmp_path):
    out = tmp_path / "a"
    build(out)
    (out / "raw" / "density.npy").unlink()
    os.mkfifo(out / "raw" / "density.npy")
    assert not is_complete(out)
    run = build(out)  # rebuilt in place of the FIFO (no read ever blocks on it)
    assert run.computed == ["raw_clusters"] and (out / "raw" / "density.npy").is_file()


def test_the_page_shows_one_line_for_a_damaged_atlas_folder(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from tests.dashboard.conftest import APP

    out = tmp_path / "a"
    build(out)
    xy = np.load(out / "raw" / "xy.npy")
    xy[0, 0] = np.inf
    np.save(out / "raw" / "xy.npy", xy)
    monkeypatch.setenv("ISOSCOPE_ATLAS_DIR", str(out))
    monkeypatch.setenv("ISOSCOPE_CACHE", str(tmp_path / "cache"))
    at = AppTest.from_file(APP, default_timeout=300)
    at.session_state["atlas_source"] = "Atlas folder"
    at.switch_page("views/atlas.py").run()
    assert not at.exception, at.exception
    (err,) = [e.value for e in at.error]
    assert_one_line(err)
    assert "raw/xy.npy" in err.replace("\\", "") and str(out) not in err


def test_concurrent_builds_of_one_folder_wait_and_share(tmp_path):
    """Four threads and two processes build the same folder at once: one computes, the others wait and reuse."""
    out = tmp_path / "a"
    runs, errors = [], []

    def one() -> None:
        try:
            runs.append(build(out))
        except Exception as exc:  # any failure is the bug under test
            errors.append(exc)

    threads = [threading.Thread(target=one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    assert not errors, errors
    assert sorted(len(r.computed) for r in runs) == [0, 0, 0, len(STAGES)]
    assert sum(r.waited_seconds > 0 for r in runs) >= 1
    load_atlas(out)

    other = tmp_path / "b"
    code = (  # the same build in two fresh processes, raw only (a calibrator would import torch there)
        "import sys\n"
        "import numpy as np\n"
        "from isoscope.atlas.pipeline import AtlasConfig, build_atlas\n"
        "from isoscope.atlas.synthetic import synthetic_corpus\n"
        "texts, _ = synthetic_corpus(300, 1)\n"
        "vectors = np.random.default_rng(0).normal(size=(300, 16)).astype(np.float32)\n"
        "run = build_atlas(None, texts, sys.argv[1], config=AtlasConfig(layout='pca', calibrate='none'), vectors=vectors)\n"
        "print(len(run.computed))\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(other)], stdout=subprocess.PIPE, text=True) for _ in range(2)
    ]
    outputs = sorted(int(p.communicate(timeout=600)[0].strip()) for p in procs)
    assert all(p.returncode == 0 for p in procs) and outputs[0] == 0 and outputs[1] > 0, outputs
    assert set(load_atlas(other).spaces) == {"raw"}


def test_a_classroom_atlas_upload_keeps_the_class_row_limit(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from isoscope.dashboard.launch import CLASSROOM_MAX_ROWS, code_hash
    from tests.dashboard.conftest import APP

    monkeypatch.setenv("ISOSCOPE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("ISOSCOPE_CLASSROOM", "1")
    monkeypatch.setenv("ISOSCOPE_ACCESS_CODE_SHA256", code_hash("TULIP-TULIP"))
    monkeypatch.setenv("ISOSCOPE_MAX_ROWS", str(CLASSROOM_MAX_ROWS))
    from isoscope.dashboard.services import atlas as svc

    assert svc.max_rows() == CLASSROOM_MAX_ROWS
    data = ("\n".join(f"sentence number {i} about the class" for i in range(CLASSROOM_MAX_ROWS + 1)) + "\n").encode()
    with pytest.raises(Exception) as info:
        svc.parse_upload.__wrapped__(data, "big.txt", svc.max_rows())
    assert "20,000" in str(info.value) and type(info.value).__name__ == "InputError"
    at = AppTest.from_file(APP, default_timeout=300)
    at.session_state["_classroom_admitted"] = True
    at.session_state["atlas_source"] = "Upload a file"  # the upload path (the demo would build its atlas first)
    at.switch_page("views/atlas.py").run()
    assert not at.exception, at.exception
    assert any("up to 20,000" in c.value for c in at.caption)
    monkeypatch.delenv("ISOSCOPE_CLASSROOM")
    assert svc.max_rows() == 1_000_000  # outside a classroom the Atlas takes a million texts


def test_cli_refuses_a_damaged_folder_of_other_settings_in_one_line(cli, tmp_path):
    texts, _ = synthetic_corpus(40, 3)
    src = tmp_path / "c.txt"
    src.write_text("\n".join(texts) + "\n")
    out = tmp_path / "atlas"
    assert cli("atlas", "--input", str(src), "--out", str(out), "--layout", "pca", "--quiet").code == 0
    (out / "manifest.json").write_text("{not json")
    assert_cli_refused(cli("atlas", "--input", str(src), "--out", str(out), "--layout", "pca", "--quiet"), "manifest")
