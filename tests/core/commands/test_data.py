"""``isoscope data stsb`` (issue 41): STS-B for a user who has no checkout beside ``../shared``. Offline it is
refused in one line; the conversion from the Hub's Parquet files writes the very CSV files the examples read
(checked against the checkout's copy of STS-B); where ``stsb_dir()`` looks, in order."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from isoscope import paths
from isoscope.cli import main
from isoscope.data import load_pairs
from isoscope.data.benchmarks import STSB_SPLITS, stsb_from_snapshot
from isoscope.paths import STSB_FILES
from tests.core.commands.cli_checks import one_error_line


def test_offline_the_download_is_refused_in_one_line(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # as every test runs; said again: this test is about it
    assert main(["data", "stsb", "--out", str(tmp_path / "stsb")]) == 2
    line = one_error_line(capsys)
    assert "cannot download STS-B offline" in line and "ISOSCOPE_STSB_DIR" in line
    assert not (tmp_path / "stsb").exists()


def _hub_snapshot(stsb_dir: Path, root: Path) -> Path:
    """The layout of the dataset's English configuration on the Hub: ``en/{split}-00000-of-00001.parquet`` with
    sentence1, sentence2, similarity_score (here written from the checkout's CSV files)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    (root / "en").mkdir(parents=True)
    (root / "de").mkdir()
    for split in STSB_SPLITS:
        with open(stsb_dir / f"stsb-en-{split}.csv", newline="", encoding="utf-8") as f:
            rows = list(csv.reader(f))
        table = pa.table(
            {
                "sentence1": [r[0] for r in rows],
                "sentence2": [r[1] for r in rows],
                "similarity_score": pa.array([float(r[2]) for r in rows], pa.float32()),
            }
        )
        pq.write_table(table, root / "en" / f"{split}-00000-of-00001.parquet")
        pq.write_table(table.slice(0, 3), root / "de" / f"{split}-00000-of-00001.parquet")  # another language
    return root


def test_the_hubs_files_become_the_csv_files_the_examples_read(stsb_dir: Path, tmp_path: Path, capsys) -> None:
    out = stsb_from_snapshot(_hub_snapshot(stsb_dir, tmp_path / "snapshot"), tmp_path / "stsb")
    assert sorted(p.name for p in out.iterdir()) == sorted(STSB_FILES)
    for split, n in STSB_SPLITS.items():
        ours, theirs = load_pairs(out / f"stsb-en-{split}.csv"), load_pairs(stsb_dir / f"stsb-en-{split}.csv")
        assert (
            len(ours) == n and ours.texts == theirs.texts and ours.scores == pytest.approx(theirs.scores, abs=1e-5)
        )  # float32 on the Hub
    # a complete folder is kept as it is, even offline: the command says so
    assert main(["data", "stsb", "--out", str(out), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["downloaded"] is False and result["files"] == [str(out / name) for name in STSB_FILES]


def test_where_stsb_is_looked_for(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("ISOSCOPE_STSB_DIR", str(tmp_path / "mine"))
    assert paths.stsb_dir() == tmp_path / "mine"  # the variable first
    monkeypatch.delenv("ISOSCOPE_STSB_DIR")
    monkeypatch.setenv("ISOSCOPE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(paths, "CHECKOUT_STSB", tmp_path / "no-checkout")  # an installed package: no ../shared
    assert paths.stsb_dir() == tmp_path / "cache" / "data" / "stsb" == paths.user_stsb_dir()  # isoscope data's


def test_the_demo_is_copied_into_the_current_folder_and_read_by_name(tmp_path: Path, capsys, monkeypatch) -> None:
    """``isoscope data demo`` (issue 50): after a plain ``pip install`` there is no ``assets/``; the command writes
    the packaged demo files into the current folder, where every command reads them by name."""
    monkeypatch.chdir(tmp_path)
    assert main(["data", "demo", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["written"] == len(paths.DEMO_FILES) and result["folder"] == str(tmp_path.resolve())
    for name in paths.DEMO_FILES:
        assert (tmp_path / name).read_bytes() == (paths.ASSETS / name).read_bytes(), name
    assert load_pairs(Path("demo_pairs.csv")).texts == load_pairs(paths.DEMO_PAIRS).texts  # a relative name
    # again: the same files are kept, nothing rewritten
    assert main(["data", "demo", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["written"] == 0


def test_the_demo_never_overwrites_a_file_of_the_users(tmp_path: Path, capsys) -> None:
    (tmp_path / "demo_retrieval").mkdir()
    (tmp_path / "demo_retrieval" / "queries.jsonl").write_text("mine\n")
    assert main(["data", "demo", "--out", str(tmp_path)]) == 2
    line = one_error_line(capsys)
    assert "queries.jsonl exists and is not the demo's file" in line and "--out" in line
    assert (tmp_path / "demo_retrieval" / "queries.jsonl").read_text() == "mine\n"
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["demo_retrieval", "queries.jsonl"]  # nothing written


def test_the_demo_files_are_every_data_file_of_the_assets() -> None:
    """What ``data demo`` copies is what the package ships as demo data (a new demo file cannot be left out)."""
    shipped = {
        p.relative_to(paths.ASSETS).as_posix()
        for p in paths.ASSETS.rglob("*")
        if p.is_file() and p.suffix in (".csv", ".jsonl", ".tsv")
    }
    assert shipped == set(paths.DEMO_FILES)
