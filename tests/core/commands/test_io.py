"""What the CLI reads and writes (issue 17): caches that cannot lie and cannot break a run, outputs that follow
the umask, an honest Ctrl-C message, correlations that are never silently null, and one set of rules for a
.txt whether it is loaded or streamed."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import numpy as np
import pytest

import isoscope.cache as cache_mod
from isoscope.paths import DEMO_PAIRS
from tests.core.commands.cli_checks import one_error_line

CORPUS = "".join(f"Sentence number {i} talks about topic {i % 4}.\n" for i in range(12)).encode()


def _json(capsys) -> dict:
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def _sts(cli, capsys, *extra: str) -> dict:
    assert cli(["sts", "--pairs", str(DEMO_PAIRS), "--json", "--quiet", *extra]) == 0
    return _json(capsys)


# ---------------------------------------------------------------- caches


def test_sts_ignores_a_half_zeroed_cache_entry(cli, capsys, tmp_cache) -> None:
    """Issue 17: an entry half overwritten with zeros (header intact, values finite) was served: Spearman null."""
    clean = _sts(cli, capsys, "--calibrate", "whitening:32")
    entries = sorted(tmp_cache.root.glob("*.npy"))
    assert entries
    for p in entries:
        data = bytearray(p.read_bytes())
        half = len(data) // 2
        data[half : len(data) - cache_mod.TRAILER_BYTES] = bytes(len(data) - cache_mod.TRAILER_BYTES - half)
        p.write_bytes(bytes(data))
    again = _sts(cli, capsys, "--calibrate", "whitening:32")
    assert again["spearman"] == clean["spearman"] and again["calibrated"]["spearman"] == clean["calibrated"]["spearman"]
    assert all(cache_mod.verified(p.read_bytes()) for p in entries)  # recomputed and stored again


def test_sts_with_an_unreadable_cache_warns_once_and_computes(cli, capsys, tmp_cache, monkeypatch, caplog) -> None:
    """Issue 17: an unreadable cache folder made the CLI exit 2 'Permission denied'. (Root ignores file modes,
    so the folder's refusal is simulated here; tests/core/test_cache.py checks real modes as another user.)"""
    clean = _sts(cli, capsys)
    root = str(tmp_cache.root)
    real_exists, real_open = Path.exists, os.open

    def exists(self):
        if str(self).startswith(root):
            raise PermissionError(errno.EACCES, "Permission denied", str(self))
        return real_exists(self)

    def os_open(path, *a, **k):
        if str(path).startswith(root):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_open(path, *a, **k)

    monkeypatch.setattr(Path, "exists", exists)
    monkeypatch.setattr(cache_mod.os, "open", os_open)
    cache_mod._warned.clear()
    with caplog.at_level("WARNING"):
        again = _sts(cli, capsys, "--pooling", "mean")
        _sts(cli, capsys)
    assert again["spearman"] == clean["spearman"]
    warned = [r.getMessage() for r in caplog.records if r.name == "isoscope.cache"]
    assert len(warned) == 1 and "Permission denied" in warned[0], warned


# ---------------------------------------------------------------- permissions of outputs


@pytest.mark.parametrize("chunked", [False, True], ids=["embed", "embed_chunked"])
def test_embed_output_follows_the_umask(cli, capsys, tmp_path: Path, chunked: bool) -> None:
    """Issue 17: non-chunked embed wrote 0600 whatever the umask (chunked wrote 0644)."""
    (tmp_path / "c.txt").write_bytes(CORPUS)
    out = tmp_path / "v.npy"
    old = os.umask(0o027)
    try:
        argv = ["embed", "--input", str(tmp_path / "c.txt"), "--out", str(out), "--quiet"]
        assert cli(argv + (["--chunk-size", "5"] if chunked else [])) == 0
    finally:
        os.umask(old)
    assert out.stat().st_mode & 0o777 == 0o640


def test_calibrate_output_follows_the_umask(cli, capsys, tmp_path: Path) -> None:
    (tmp_path / "c.txt").write_bytes(CORPUS)
    old = os.umask(0o002)
    try:
        argv = [
            "calibrate",
            "--input",
            str(tmp_path / "c.txt"),
            "--method",
            "whitening:4",
            "--out",
            str(tmp_path / "cal"),
        ]
        assert cli([*argv, "--quiet"]) == 0
    finally:
        os.umask(old)
    files = list((tmp_path / "cal").iterdir())
    assert files and all(p.stat().st_mode & 0o777 == 0o664 for p in files), [oct(p.stat().st_mode) for p in files]


# ---------------------------------------------------------------- Ctrl-C


def test_ctrl_c_in_chunked_embed_says_the_chunks_are_kept_and_they_are(
    cli, capsys, tmp_path: Path, monkeypatch
) -> None:
    import isoscope.encode.chunked

    (tmp_path / "c.txt").write_bytes(CORPUS)
    out = tmp_path / "v.npy"
    argv = ["embed", "--input", str(tmp_path / "c.txt"), "--out", str(out), "--chunk-size", "5", "--quiet", "--json"]
    real, calls = isoscope.encode.chunked.encode, []

    def interrupted(*a, **k):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*a, **k)

    monkeypatch.setattr(isoscope.encode.chunked, "encode", interrupted)
    assert cli(argv) == 130
    line = capsys.readouterr().err.strip()
    assert line.startswith("interrupted; ") and "resume" in line and "v.npy.partial" in line, line
    monkeypatch.undo()
    assert cli(argv) == 0
    result = _json(capsys)
    assert result["resumed_chunks"] == 1 and result["computed_chunks"] == 2  # what the message promised


def test_ctrl_c_in_embed_says_nothing_was_written_and_nothing_is(
    cli, capsys, tmp_path: Path, tmp_cache, monkeypatch
) -> None:
    import isoscope.encode.embed

    (tmp_path / "c.txt").write_bytes(CORPUS)
    out = tmp_path / "v.npy"

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(isoscope.encode.embed, "_encode_uncached", interrupted)
    assert cli(["embed", "--input", str(tmp_path / "c.txt"), "--out", str(out), "--quiet"]) == 130
    assert capsys.readouterr().err.strip() == "interrupted; nothing was written"
    assert not out.exists() and not list(tmp_cache.root.glob("*.npy")) if tmp_cache.root.exists() else not out.exists()


# ---------------------------------------------------------------- correlations


@pytest.mark.parametrize(
    "rows",
    [
        ["A man plays a guitar.,Someone plays music.,4"],
        ["A man plays a guitar.,Someone plays music.,4", "A cat sleeps.,Stocks fell.,0.5"],
        ["A man plays a guitar.,Someone plays music.,3", "A cat sleeps.,Stocks fell.,3", "Rain.,Sun.,3"],
    ],
    ids=["one_pair", "two_pairs", "one_score_value"],
)
def test_sts_refuses_an_undefined_correlation(cli, capsys, tmp_path: Path, rows: list[str]) -> None:
    """Issue 17: one or two pairs printed Spearman null with exit 0 and no warning; refused now, like pooling."""
    path = tmp_path / "p.csv"
    path.write_text("sentence1,sentence2,score\n" + "\n".join(rows) + "\n")
    assert cli(["sts", "--pairs", str(path), "--quiet"]) == 2
    assert "at least 3 pairs whose scores differ" in one_error_line(capsys)


# ---------------------------------------------------------------- streamed and loaded .txt: one set of rules


MIXED = "Café au lait\n".encode() + "Crème brûlée\n".encode("latin-1") + "Été\n".encode() + b"x" * 3000 + b"\nend\n"


def _embed(cli, capsys, path: Path, out: Path, *extra: str) -> tuple[int, dict | str]:
    code = cli(["embed", "--input", str(path), "--out", str(out), "--quiet", "--json", *extra])
    captured = capsys.readouterr()
    return code, (json.loads(captured.out.strip().splitlines()[-1]) if code == 0 else captured.err.strip())


def test_streamed_and_loaded_txt_read_the_same_texts(cli, capsys, tmp_path: Path) -> None:
    """Issue 17: streaming refused a Latin-1 line and cut long lines silently; loading decoded the whole file
    as cp1252. Both now decode line by line, warn about the same lines and truncations, embed the same texts."""
    path = tmp_path / "mixed.txt"
    path.write_bytes(MIXED)
    code1, loaded = _embed(cli, capsys, path, tmp_path / "a.npy")
    code2, streamed = _embed(cli, capsys, path, tmp_path / "b.npy", "--chunk-size", "2")
    assert code1 == code2 == 0, (loaded, streamed)
    assert loaded["warnings"] == streamed["warnings"]
    assert any("line 2" in w and "Latin-1" in w for w in loaded["warnings"])
    assert any("1 text(s) longer than 2000" in w for w in loaded["warnings"])
    from isoscope.data import load_corpus
    from isoscope.encode.chunked import iter_texts

    assert list(iter_texts(path)) == load_corpus(path).texts  # the very same texts, in the same order
    # the two runs batch the texts differently (padding changes float32 summation order: ~1e-6 apart)
    np.testing.assert_allclose(np.load(tmp_path / "a.npy"), np.load(tmp_path / "b.npy"), rtol=0, atol=1e-5)


@pytest.mark.parametrize(
    ("data", "fragment"),
    [(b"fine\n" * 50 + b"a NUL \x00 here\n", "binary"), (b"fine\n\x81\x8d\x8f\x90 bytes\n", "line 2")],
    ids=["nul_byte", "not_text"],
)
def test_streamed_and_loaded_txt_refuse_alike(cli, capsys, tmp_path: Path, data: bytes, fragment: str) -> None:
    path = tmp_path / "bad.txt"
    path.write_bytes(data)
    code1, loaded = _embed(cli, capsys, path, tmp_path / "a.npy")
    code2, streamed = _embed(cli, capsys, path, tmp_path / "b.npy", "--chunk-size", "2")
    assert code1 == code2 == 2 and loaded == streamed and fragment in loaded, (loaded, streamed)
    assert not (tmp_path / "a.npy").exists() and not (tmp_path / "b.npy").exists()
