"""Crashes and wrong error types (issue 40): a full disk, a tile URL with a 5,000-digit zoom, lone surrogates in
a Space's texts and name, array-likes the Space API cannot use, and the classroom guard's own answers.

- A full disk is one line, ``disk full: N MB needed at PATH`` (exit status 2), never a SIGBUS, for
  ``embed --chunk-size`` and ``atlas``; both finish when run again with room, keeping what was done.
- Tile coordinates are checked as text before ``int`` converts them: 404, with the security headers.
- A lone surrogate in a Space's texts or name is replaced (with a warning), so ``report()`` and the card work.
- Sparse and meta torch tensors, DataFrames with text columns and ``metadata=`` that is not a table are
  ``InputError`` with one line, not TypeError, ValueError or NotImplementedError.
- Every answer of a classroom server carries X-Frame-Options and the CSP, the guard's own 404 and 403 too.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from isoscope.errors import InputError
from tests.dashboard.test_tiles import secured, served  # noqa: F401 (the fixture)
from tests.hostile.conftest import assert_one_line
from tests.hostile.peak import ROOT

# ---------------------------------------------------------------- a full disk

DISK_FULL_DRIVER = r"""
import json, os, subprocess, sys
mount, out_file, corpus = sys.argv[1], sys.argv[2], sys.argv[3]
results = {}

def size(kb):
    opts = f"size={kb}k" if not os.path.ismount(mount) else f"remount,size={kb}k"
    subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", mount], check=True)

def cli(name, *args):
    done = subprocess.run([sys.executable, "-m", "isoscope", *args], capture_output=True, text=True)
    results[name] = {"code": done.returncode, "err": done.stderr, "out": done.stdout}

size(256)  # room for the inputs' copies and an atlas's small files, not for 600 x 384 float32 (0.9 MB)
embed = ["embed", "--input", corpus, "--out", f"{mount}/v.npy", "--chunk-size", "100", "--quiet"]
cli("embed_full", *embed)
atlas = ["atlas", "--input", corpus, "--out", f"{mount}/atlas", "--layout", "pca", "--quiet", "--json"]
cli("atlas_full", *atlas)
size(16_384)
cli("embed_room", *embed)
cli("atlas_room", *atlas)
with open(out_file, "w") as f:
    json.dump(results, f)
"""


def _can_mount_tmpfs(tmp_path: Path) -> bool:
    """Whether an unprivileged user namespace may mount a small tmpfs here (Linux; some kernels forbid it)."""
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        return False
    probe = tmp_path / "probe"
    probe.mkdir()
    done = subprocess.run(
        ["unshare", "-Urm", "sh", "-c", f"mount -t tmpfs -o size=64k tmpfs {probe} && touch {probe}/x"],
        capture_output=True,
    )
    return done.returncode == 0


def test_a_full_disk_is_one_line_and_the_work_resumes(tmp_path) -> None:
    """Issue 40: a full disk killed `embed --chunk-size` and `atlas` with SIGBUS (writes through mmap). Here the
    output folder is a 256 KB tmpfs of its own (a user and mount namespace), then remounted with room."""
    if not _can_mount_tmpfs(tmp_path):
        pytest.skip("this kernel does not let an unprivileged user mount a tmpfs (unshare -Urm)")
    words = ("river", "cake", "map", "train", "garden", "violin")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(f"Text {i} about a {words[i % 6]} and a {words[i % 5]}." for i in range(600)) + "\n")
    mount, results = tmp_path / "disk", tmp_path / "results.json"
    mount.mkdir()
    driver = tmp_path / "driver.py"
    driver.write_text(DISK_FULL_DRIVER)
    subprocess.run(
        ["unshare", "-Urm", sys.executable, str(driver), str(mount), str(results), str(corpus)],
        check=True,
        cwd=ROOT,
        timeout=900,
    )
    r = json.loads(results.read_text())
    for name in ("embed_full", "atlas_full"):
        assert r[name]["code"] == 2, (name, r[name]["code"], r[name]["err"][-2000:])  # not -7 (SIGBUS)
        lines = [x for x in r[name]["err"].splitlines() if x.strip()]
        assert len(lines) == 1, (name, lines)
        assert_one_line(lines[0])
        assert lines[0].startswith("error: disk full: ") and " MB needed at " in lines[0], lines[0]
        assert str(mount) in lines[0]
    for name in ("embed_room", "atlas_room"):
        assert r[name]["code"] == 0, (name, r[name]["err"][-2000:])
    skipped = json.loads(r["atlas_room"]["out"].strip().splitlines()[-1])["skipped"]
    assert "texts" in skipped  # the stage written before the disk was full is kept


def test_a_write_that_meets_a_full_disk_says_so(tmp_path, monkeypatch) -> None:
    """The free space is checked before the bytes are written: the file is never half-written."""
    import shutil as sh

    from isoscope.cache import atomic_write_bytes
    from isoscope.errors import DiskFull

    usage = sh.disk_usage(tmp_path)
    monkeypatch.setattr(sh, "disk_usage", lambda _p: usage._replace(free=1000))
    with pytest.raises(DiskFull) as info:
        atomic_write_bytes(tmp_path / "f.bin", b"x" * 5_000_000)
    assert str(info.value.strerror) == f"disk full: 5 MB needed at {tmp_path / 'f.bin'}"
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------- tile URLs


@pytest.mark.parametrize("z", ["9" * 5000, "9" * 4000, "99999999999", "-1", "1e3", "0x1"])
def test_tile_coordinates_are_checked_before_conversion(served, z: str) -> None:  # noqa: F811
    """Issue 40: a 5,000-digit zoom was a 500 with a traceback in the log (int conversion limit), before any
    token was checked and without the security headers."""
    from isoscope.dashboard import tiles

    client, path, _ = served
    urls = tiles.publish(path, "raw", "cluster", contours=True, lit=np.array([0, 1]))
    for template in (urls.tiles, urls.highlight):
        for url in (template.format(z=z, x=0, y=0), template.format(z=0, x=z, y=0), template.format(z=0, x=0, y=z)):
            r = client.get(url)
            assert r.status_code == 404, (url[:80], r.status_code)
            secured(r)
    r = client.get(f"/isoscope/atlas/unknown-token/raw/t/style/{'9' * 5000}/0/0.png")
    assert r.status_code == 404
    secured(r)


def test_the_guards_own_answers_carry_the_security_headers(served) -> None:  # noqa: F811
    """Issue 40: the classroom guard's 404 (metrics) and 403 (an upload before the code) had no X-Frame-Options
    and no CSP, though every response should."""
    client, _, _ = served
    metrics = client.get("/_stcore/metrics")
    assert metrics.status_code == 404
    secured(metrics)
    upload = client.put("/_stcore/upload_file/not-a-session/f1", files={"file": ("p.csv", b"a,b\n")})
    assert upload.status_code == 403
    secured(upload)


# ---------------------------------------------------------------- lone surrogates in a Space


def test_a_space_with_lone_surrogates_reports_and_shows_its_card(tmp_path, caplog) -> None:
    """Issue 40: a lone surrogate in a Space's texts or name crashed `space.report()` after all the work
    (UnicodeEncodeError), and the card the same way. Replaced with U+FFFD and said, as file decoding does."""
    import isoscope

    rng = np.random.default_rng(0)
    texts = [f"text {i} \ud83d half an emoji" if i % 7 == 0 else f"text {i}" for i in range(40)]
    space = isoscope.Space(
        rng.normal(size=(40, 8)).astype(np.float32), texts, {"tag": ["a\udc00"] * 40}, name="sp\ud800ce"
    )
    assert space.name == "sp\ufffdce" and space.texts[0] == "text 0 \ufffd half an emoji"
    assert [w for w in space.warnings if "surrogate" in w]
    html = Path(space.report(tmp_path / "r.html", k=5, map="pca")).read_text(encoding="utf-8")
    assert "sp\ufffdce" in html
    card = space._repr_html_()
    assert "sp\ufffdce" in card and "surrogate" in card
    card.encode("utf-8")


# ---------------------------------------------------------------- array-likes the Space API cannot use


def _cases():
    import pandas as pd
    import torch

    x = np.random.default_rng(0).normal(size=(6, 4)).astype(np.float32)
    return {
        "sparse_coo_tensor": (lambda: (torch.tensor(x).to_sparse(),), {}),
        "sparse_csr_tensor": (lambda: (torch.tensor(x).to_sparse_csr(),), {}),
        "meta_tensor": (lambda: (torch.empty(6, 4, device="meta"),), {}),
        "dataframe_with_text": (lambda: (pd.DataFrame({"a": x[:, 0], "b": x[:, 1], "label": list("abcdef")}),), {}),
        "metadata_a_string": (lambda: (x,), {"metadata": "topic"}),
        "metadata_a_scalar_column": (lambda: (x,), {"metadata": {"a": 1}}),
        "metadata_columns_of_other_lengths": (lambda: (x,), {"metadata": {"a": [1, 2, 3], "b": [1, 2]}}),
        "metadata_a_number": (lambda: (x,), {"metadata": 3}),
    }


@pytest.mark.parametrize(
    "case",
    [
        "sparse_coo_tensor",
        "sparse_csr_tensor",
        "meta_tensor",
        "dataframe_with_text",
        "metadata_a_string",
        "metadata_a_scalar_column",
        "metadata_columns_of_other_lengths",
        "metadata_a_number",
    ],
)
def test_the_space_api_refuses_what_it_cannot_use_with_one_line(case: str) -> None:
    import isoscope

    args, kwargs = _cases()[case]
    with pytest.raises(InputError) as info:
        isoscope.Space(*args(), **kwargs)
    assert_one_line(str(info.value))
