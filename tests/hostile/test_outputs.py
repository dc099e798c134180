"""Outputs that would overwrite what the user keeps (issue 51, class 5): ``--out`` naming an input, a folder
holding one, an unrelated file, a folder where a file goes (and the reverse), and exports killed half-way.

Every command's output goes through ``isoscope.data.outputs``: each case ends in exit status 2 with one line
naming the option, before any work, and every byte the user had is still there. A run killed mid-write leaves
the final name absent or holding the previous complete version.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tests.hostile.conftest import assert_cli_refused

ROOT = Path(__file__).resolve().parents[2]


def _tree(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` (relative name -> SHA-256): what the user had."""
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


@pytest.fixture()
def desk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user's folder (the working directory): vectors, a corpus, notes, a folder of papers; nothing in it may
    change."""
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    np.save(tmp_path / "in.npy", rng.normal(size=(200, 16)).astype(np.float32), allow_pickle=False)
    (tmp_path / "corpus.txt").write_text("".join(f"sentence number {i}\n" for i in range(200)))
    (tmp_path / "precious.csv").write_text("name,notes\nme,years of work\n")
    (tmp_path / "notes.npy").write_text("not an array: a text file named .npy\n")
    (tmp_path / "page.html").write_text("<html><body>my own page</body></html>\n")
    (tmp_path / "papers").mkdir()
    (tmp_path / "papers" / "thesis.tex").write_text("\\chapter{One}\n")
    return tmp_path


def _refused(cli, desk: Path, argv: list[str], *fragments: str) -> None:
    before = _tree(desk)
    result = cli(*argv)
    assert_cli_refused(result, *fragments)
    assert _tree(desk) == before, "a file the user had changed"


OVERLAPS = {
    "faiss_over_its_input": ["export", "--vectors", "in.npy", "--calibrate", "centre", "--faiss", "--out", "in.npy"],
    "vectors_over_their_input": ["export", "--vectors", "in.npy:x", "--calibrate", "centre", "--out", "in.npy"],
    "embed_over_its_input": ["embed", "--vectors", "in.npy", "--out", "in.npy"],
    "embed_through_a_link": ["embed", "--vectors", "in.npy", "--out", "link.npy"],
    "calibrate_into_the_inputs_folder": ["calibrate", "--vectors", "in.npy", "--method", "centre", "--out", "."],
    "atlas_into_the_inputs_folder": ["atlas", "--vectors", "in.npy", "--layout", "pca", "--out", "."],
    "report_over_its_input": ["report", "--vectors", "in.npy", "--out", "in.npy"],
    "export_model_over_its_fit_corpus": ["export", "--calibrate", "centre", "--fit-on", "corpus.txt", "--out", "."],
    "embed_into_its_corpus": ["embed", "--input", "corpus.txt", "--out", "corpus.txt/x.npy"],
}


@pytest.mark.parametrize("case", list(OVERLAPS))
def test_an_output_that_is_or_holds_an_input_is_refused_before_any_work(cli, desk: Path, case: str) -> None:
    (desk / "link.npy").symlink_to(desk / "in.npy")
    argv = OVERLAPS[case]
    fragments = ["--out"] + ([] if case == "embed_into_its_corpus" else ["input"])
    _refused(cli, desk, argv, *fragments)


UNRELATED = {
    "faiss_over_a_csv": (["export", "--vectors", "in.npy", "--calibrate", "centre", "--faiss"], "precious.csv"),
    "embed_over_a_text_named_npy": (["embed", "--vectors", "in.npy"], "notes.npy"),
    "export_vectors_over_a_text_named_npy": (["export", "--vectors", "in.npy", "--calibrate", "centre"], "notes.npy"),
    "report_over_a_page": (["report", "--vectors", "in.npy"], "page.html"),
    "calibrate_over_a_file": (["calibrate", "--vectors", "in.npy", "--method", "centre"], "precious.csv"),
    "calibrate_into_a_folder_of_papers": (["calibrate", "--vectors", "in.npy", "--method", "centre"], "papers"),
    "export_model_into_a_folder_of_papers": (["export", "--calibrate", "centre", "--fit-on", "corpus.txt"], "papers"),
    "atlas_into_a_folder_of_papers": (["atlas", "--vectors", "in.npy", "--layout", "pca"], "papers"),
    "landscape_over_a_file": (["landscape", "--task", "demo-topic"], "precious.csv"),
    "stsb_over_a_file": (["data", "stsb"], "precious.csv"),
}


@pytest.mark.parametrize("case", list(UNRELATED))
def test_an_unrelated_file_or_folder_is_refused_and_kept(cli, desk: Path, case: str) -> None:
    argv, target = UNRELATED[case]
    _refused(cli, desk, [*argv, "--out", target], "--out", target)


def test_a_per_query_file_over_an_unrelated_csv_is_refused(cli, desk: Path) -> None:
    _refused(cli, desk, ["retrieval", "--per-query-out", "precious.csv"], "--per-query-out", "precious.csv")


def test_shards_into_a_folder_of_papers_are_refused(cli, desk: Path) -> None:
    pytest.importorskip("ray.data")
    argv = ["embed", "--input", "corpus.txt", "--engine", "ray", "--shard-dir", "papers"]
    _refused(cli, desk, argv, "--shard-dir", "papers")


@pytest.mark.parametrize(
    "argv",
    [
        ["export", "--vectors", "in.npy", "--calibrate", "centre", "--faiss", "--out", "papers"],
        ["report", "--vectors", "in.npy", "--out", "papers"],
        ["retrieval", "--per-query-out", "papers"],
        ["export", "--vectors", "in.npy", "--calibrate", "centre", "--faiss", "--out", "papers", "--force"],
    ],
    ids=["faiss", "report", "per_query", "faiss_forced"],
)
def test_a_folder_given_for_a_file_is_refused_even_with_force(cli, desk: Path, argv: list[str]) -> None:
    option = "--per-query-out" if "--per-query-out" in argv else "--out"
    _refused(cli, desk, argv, option, "is a folder")


def test_force_replaces_an_unrelated_file_and_nothing_else(cli, desk: Path) -> None:
    argv = ["export", "--vectors", "in.npy", "--calibrate", "centre", "--faiss", "--out", "precious.csv", "--force"]
    result = cli(*argv)
    assert result.code == 0, result.err
    assert (desk / "precious.csv").read_bytes()[:4] == b"IxPT"  # the index, as asked
    assert (desk / "in.npy").stat().st_size > 0 and (desk / "papers" / "thesis.tex").is_file()
    assert not [p.name for p in desk.iterdir() if p.name.startswith(".")]  # no temporary file left


def test_rerunning_a_command_replaces_its_own_output(cli, desk: Path) -> None:
    for _ in range(2):
        assert cli("export", "--vectors", "in.npy", "--calibrate", "centre", "--faiss", "--out", "x.faiss").code == 0
        assert cli("calibrate", "--vectors", "in.npy", "--method", "centre", "--out", "cal").code == 0
    assert sorted(p.name for p in (desk / "cal").iterdir()) == ["calibrator.json", "calibrator.safetensors"]


# ---------------------------------------------------------------- killed half-way

KILL_FAISS = """
import os, signal, sys
import faiss

real = faiss.write_index

def half_then_killed(index, path):  # the write is cut off half-way by a SIGKILL
    real(index, path)
    with open(path, "rb") as f:
        data = f.read()
    with open(path, "wb") as f:
        f.write(data[: len(data) // 2])
    os.kill(os.getpid(), signal.SIGKILL)

faiss.write_index = half_then_killed
from isoscope.cli import main
main(sys.argv[1:])
"""

KILL_EXPORT = """
import os, signal, sys
import isoscope.export.st_folder as st_folder

def killed(*args, **kwargs):  # every model file written, the manifest not yet: a SIGKILL here
    os.kill(os.getpid(), signal.SIGKILL)

st_folder.seal_folder = killed
from isoscope.cli import main
main(sys.argv[1:])
"""


def _child(script: str, argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), *argv], cwd=cwd, env=env, capture_output=True, timeout=300
    )


def test_an_index_killed_mid_write_leaves_the_previous_index(cli, desk: Path) -> None:
    import faiss

    argv = ["export", "--vectors", "in.npy", "--calibrate", "centre", "--faiss", "--out", "docs.faiss"]
    assert cli(*argv).code == 0
    before = (desk / "docs.faiss").read_bytes()
    proc = _child(KILL_FAISS, [*argv[:4], "whitening:8", *argv[5:]], desk)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()[-2000:]
    assert (desk / "docs.faiss").read_bytes() == before
    assert faiss.read_index(str(desk / "docs.faiss")).ntotal == 200


def _tiny_export_argv(tmp_path: Path, desk: Path) -> list[str]:
    """``isoscope export`` of a tiny random BERT (saved as a model folder) to ``fixed``: a second or so to write."""
    from transformers import AutoTokenizer

    from isoscope.encode.models import default_model_path
    from tests.tiny_models import tiny_bert

    model = tmp_path / "tiny-model"
    tiny_bert().model.save_pretrained(model)
    AutoTokenizer.from_pretrained(default_model_path()).save_pretrained(model)
    argv = ["export", "--model", str(model), "--pooling", "mean", "--calibrate", "centre"]
    return [*argv, "--fit-on", str(desk / "corpus.txt"), "--out", "fixed"]


def test_an_export_folder_killed_half_way_leaves_no_folder(desk: Path, tmp_path: Path) -> None:
    proc = _child(KILL_EXPORT, _tiny_export_argv(tmp_path, desk), desk)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()[-2000:]
    assert not (desk / "fixed").exists()  # nothing under the final name: no folder without its manifest


def test_an_export_folder_killed_half_way_leaves_the_previous_export(cli, desk: Path, tmp_path: Path) -> None:
    from isoscope.encode.manifest import read_manifest

    argv = _tiny_export_argv(tmp_path, desk)
    assert cli(*argv).code == 0
    manifest = (desk / "fixed" / "isoscope-export.json").read_bytes()
    proc = _child(KILL_EXPORT, [*argv[:6], "whitening:8", *argv[7:]], desk)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()[-2000:]
    assert (desk / "fixed" / "isoscope-export.json").read_bytes() == manifest
    assert read_manifest(desk / "fixed") is not None  # every file as the previous export wrote it
