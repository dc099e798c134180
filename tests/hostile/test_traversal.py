"""Paths out of their folder (issue 51, class 6): a name read from a file or typed as a name is never a path.

``--split ../../outside`` is a name (``[A-Za-z0-9_-]+``) or refused before any file is looked for; a name an export
manifest, a recipe's modules.json or a dataset's state.json lists goes through ``isoscope.paths.inside`` (a relative
path that resolves inside its folder, symlinks followed) before anything under it is opened or hashed. Each
refusal: exit status 2 and one line naming the option or the file."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from isoscope.encode.manifest import MANIFEST_FILE, read_manifest, write_manifest
from isoscope.encode.models import default_model_path
from isoscope.encode.recipe import read_card
from isoscope.errors import InputError
from isoscope.paths import inside
from isoscope.retrieval.load import beir_splits, load_beir, load_beir_zip
from tests.hostile.conftest import assert_cli_refused, assert_one_line
from tests.retrieval_helpers import write_beir
from tests.vector_files import vector_table, write_dataset_folder

QUERIES = [("q1", "where do penguins live"), ("q2", "how hot is the sun")]
DOCS = [("a", "Penguins live in the south."), ("b", "The Sun is hot."), ("c", "Cats sleep a lot.")]
QRELS = [("q1", "a", 1), ("q2", "b", 1)]


# ---------------------------------------------------------------- the one check of a name


@pytest.mark.parametrize(
    "name",
    ["../x", "a/../../x", "/etc/passwd", "..", "C:\\x", "\\\\server\\share", "a\\..\\..\\x", "", "a\x00b", "\ud800"],
)
def test_inside_refuses_names_that_leave_the_folder(tmp_path: Path, name: str) -> None:
    with pytest.raises(InputError) as info:
        inside(tmp_path, name, what="list.json names a file")
    assert_one_line(str(info.value))
    assert str(info.value).startswith("list.json names a file: ")


def test_inside_follows_links_and_keeps_names_within(tmp_path: Path) -> None:
    (tmp_path / "outside.txt").write_text("secret")
    folder = tmp_path / "folder"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "ok.txt").write_text("ok")
    (folder / "escape").symlink_to(tmp_path / "outside.txt")
    (folder / "loop").symlink_to(folder / "loop")
    assert inside(folder, "sub/ok.txt", what="w") == folder / "sub" / "ok.txt"
    with pytest.raises(InputError, match="is a link to outside the folder folder"):
        inside(folder, "escape", what="w")
    with pytest.raises(InputError, match=r"link loop|outside the folder"):
        inside(folder, "loop", what="w")


# ---------------------------------------------------------------- a split is a name


@pytest.mark.parametrize("split", ["../../outside", "../qrels/test", "/etc/passwd", "test/../../x", "a b", ""])
def test_a_split_that_is_a_path_is_refused_by_the_option(cli, tmp_path: Path, split: str) -> None:
    """Before: ``qrels/../../outside.tsv`` was read (a TSV outside the task's folder scored as its qrels)."""
    folder = write_beir(tmp_path / "task", QUERIES, DOCS, QRELS)
    write_beir(tmp_path / "outside-task", QUERIES, DOCS, QRELS)
    shutil.copy(folder / "qrels" / "test.tsv", tmp_path / "outside.tsv")  # what ../../outside would have read
    line = assert_cli_refused(cli("retrieval", "--beir", str(folder), "--split", split, "--quiet"), "--split")
    assert "letters, digits, _ and -" in line


@pytest.mark.parametrize("split", ["../../outside", "x/../test"])
def test_every_beir_reader_checks_the_split(tmp_path: Path, split: str) -> None:
    folder = write_beir(tmp_path / "task", QUERIES, DOCS, QRELS)
    (folder / "qrels" / "not a name.tsv").write_text("q1\ta\t1\n")
    assert beir_splits(folder) == ["test"]  # a file whose stem is no split name is not offered
    archive = tmp_path / "task.zip"
    shutil.make_archive(str(archive.with_suffix("")), "zip", folder)
    for load in (lambda: load_beir(folder, split), lambda: load_beir_zip(archive.read_bytes(), "task.zip", split)):
        with pytest.raises(InputError, match="is not a split name") as info:
            load()
        assert_one_line(str(info.value))
    assert load_beir(folder, "test").n_queries == 2  # a name still reads


# ---------------------------------------------------------------- an export manifest


@pytest.fixture()
def exported(tmp_path: Path) -> Path:
    """A folder with a manifest (as ``isoscope.export`` writes it) whose model files are the embedded model's: its
    small files copied, its weights hard-linked where one file system holds both (a symlink would lead out of the
    folder, and is refused as such)."""
    src, out = Path(default_model_path()), tmp_path / "export"
    shutil.copytree(src, out, ignore=shutil.ignore_patterns("model.safetensors", ".git*", "README.md"))
    try:
        os.link(src / "model.safetensors", out / "model.safetensors")
    except OSError:
        shutil.copyfile(src / "model.safetensors", out / "model.safetensors")
    write_manifest(out, {"note": "test"})
    read_manifest(out)  # intact
    return out


def _list(folder: Path, name: str, digest: str) -> None:
    doc = json.loads((folder / MANIFEST_FILE).read_text())
    doc["files"][name] = digest
    (folder / MANIFEST_FILE).write_text(json.dumps(doc))


@pytest.mark.parametrize("name", ["../../../../../etc/passwd", "z/../../outside.txt", "/etc/passwd"])
def test_a_manifest_naming_a_file_outside_is_refused_before_any_read(
    cli, exported: Path, tmp_path: Path, name: str
) -> None:
    """Before: the loader read and hashed ``/etc/passwd`` (and, with its true SHA-256 listed, accepted it). Now the
    names are checked before any file is: the same manifest also lists ``config.json`` with a wrong checksum,
    which a reader going file by file would have reported first."""
    (tmp_path / "outside.txt").write_text("secret")
    target = (exported / name) if not name.startswith("/") else Path(name)
    digest = hashlib.sha256(target.read_bytes()).hexdigest() if target.is_file() else "0" * 64
    _list(exported, name, digest)
    _list(exported, "config.json", "f" * 64)
    line = assert_cli_refused(cli("params", "--model", str(exported)), MANIFEST_FILE, "outside the folder")
    assert "checksum" not in line


def test_a_manifest_naming_a_link_out_of_its_folder_is_refused(cli, exported: Path, tmp_path: Path) -> None:
    (tmp_path / "outside.txt").write_text("secret")
    (exported / "notes.txt").symlink_to(tmp_path / "outside.txt")
    _list(exported, "notes.txt", hashlib.sha256(b"secret").hexdigest())
    assert_cli_refused(cli("params", "--model", str(exported)), MANIFEST_FILE, "notes.txt", "link to outside")
    assert (tmp_path / "outside.txt").read_text() == "secret"


# ---------------------------------------------------------------- a recipe's module folders, a dataset's files


def test_a_module_folder_that_is_a_link_out_of_the_model_is_refused(tmp_path: Path) -> None:
    src, out = Path(default_model_path()), tmp_path / "model"
    shutil.copytree(src, out, ignore=shutil.ignore_patterns("model.safetensors", ".git*"))
    shutil.move(out / "1_Pooling", tmp_path / "elsewhere")
    (out / "1_Pooling").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(InputError, match="module 1's path: '1_Pooling' is a link to outside the folder") as info:
        read_card(out)
    assert_one_line(str(info.value))


def test_a_dataset_naming_a_link_out_of_its_folder_is_refused(cli, tmp_path: Path) -> None:
    folder = write_dataset_folder(tmp_path / "ds", vector_table(np.eye(4, 8, dtype=np.float32), list("abcd")))
    state = json.loads((folder / "state.json").read_text())
    shard = folder / state["_data_files"][0]["filename"]
    shutil.move(shard, tmp_path / "elsewhere.arrow")
    shard.symlink_to(tmp_path / "elsewhere.arrow")
    out = tmp_path / "cal"
    line = assert_cli_refused(
        cli("calibrate", "--vectors", str(folder), "--method", "centre", "--out", str(out)), "state.json"
    )
    assert "link to outside the folder ds" in line
    assert not out.exists()


def test_a_landscape_summary_naming_a_folder_outside_is_refused(tmp_path: Path) -> None:
    """Before: ``summary.json``'s ``inits`` were joined to the folder as paths (``../../x/results.json`` read)."""
    from isoscope.landscape.results import load_results

    run = tmp_path / "runs" / "run"
    run.mkdir(parents=True)
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "results.json").write_text("{}")
    (run / "summary.json").write_text(json.dumps({"inits": ["../../x"]}))
    with pytest.raises(InputError, match=r"summary\.json lists an initialisation: '\.\./\.\./x' is outside") as info:
        load_results(run)
    assert_one_line(str(info.value))
