"""Messages (issue 40): ``report --quiet`` drew progress bars, an error line was glued to the progress bar it
interrupted, ``embed --out`` naming a folder failed after the whole embedding and named a hidden temporary
file, and an atlas manifest with an edited row count lost its reason ("points.parquet is not readable
(AtlasDamaged)").
"""

from __future__ import annotations

import json
import re

import pytest

from tests.endpoint_server import Answer, EmbeddingServer
from tests.hostile.conftest import assert_cli_refused, assert_one_line
from tests.hostile.peak import ROOT

PROGRESS_LINE = re.compile(r"^[\w :]+: [\d,]+/[\d,]+ \w+", re.M)  # a stage in a log: "embed: 0/40 texts"


def screen(stream: str) -> list[str]:
    """The lines a terminal shows for ``stream``: a carriage return goes back to the line's start, and what is
    written next overwrites what was there."""
    shown = []
    for line in stream.split("\n"):
        cells: list[str] = []
        for i, part in enumerate(line.split("\r")):
            col = 0 if i else len(cells)
            for ch in part:
                if col < len(cells):
                    cells[col] = ch
                else:
                    cells.append(ch)
                col += 1
        shown.append("".join(cells).rstrip())
    return [x for x in shown if x]


def test_report_quiet_draws_no_progress_bar(cli_main, capsys, tmp_path, monkeypatch) -> None:
    """On a terminal: bars, none with --quiet; in a log (issue 50): lines, never a carriage return."""
    import sys

    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(f"Text number {i} about a {('cat', 'dog', 'map')[i % 3]}." for i in range(40)))
    pairs = tmp_path / "p.csv"
    rows = [f"A cat {i},A dog {i},{i % 6}" for i in range(8)]
    pairs.write_text("sentence1,sentence2,score\n" + "\n".join(rows) + "\n")
    capsys.readouterr()
    out = tmp_path / "r.html"
    argv = ["report", "--input", str(corpus), "--pairs", str(pairs), "--out", str(out), "--map", "pca"]
    code = cli_main(argv)
    logged = capsys.readouterr().err
    assert code == 0 and "\r" not in logged and "%|" not in logged and PROGRESS_LINE.search(logged), logged[-500:]
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)  # a terminal from here on
    code = cli_main(argv)
    loud = capsys.readouterr().err
    assert code == 0 and "%|" in loud  # without --quiet: bars (the check can fail)
    code = cli_main(
        ["report", "--input", str(corpus), "--pairs", str(pairs), "--out", str(out), "--map", "pca", "--quiet"]
    )
    quiet = capsys.readouterr()
    assert code == 0, quiet.err
    assert "%|" not in quiet.err and "\r" not in quiet.err and not PROGRESS_LINE.search(quiet.err), quiet.err[-500:]


@pytest.mark.parametrize("terminal", [True, False], ids=["terminal", "log"])
def test_an_error_line_is_never_glued_to_the_bar_it_interrupted(
    cli_main, capsys, tmp_path, monkeypatch, terminal: bool
) -> None:
    """The endpoint answers the first batch (the bar is at 128 of 200) and refuses the second. In a log the
    progress is whole lines (issue 50), so the error line starts a line of its own there too."""
    import sys

    if terminal:
        monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(f"text {i}" for i in range(200)) + "\n")
    monkeypatch.setenv("ISOSCOPE_TEST_KEY", "sk-test-glued-0123456789")
    with EmbeddingServer(script=[Answer(), Answer(401, {"error": {"message": "revoked"}})]) as server:
        capsys.readouterr()
        argv = ["--model", "openai:m", "--base-url", server.url, "--api-key-env", "ISOSCOPE_TEST_KEY"]
        code = cli_main(["embed", "--input", str(corpus), "--out", str(tmp_path / "v.npy"), *argv])
    err = capsys.readouterr().err
    assert code == 2
    assert ("/200 [" if terminal else "embed: 0/200 texts\n") in err  # drawn, and left unfinished
    errors = [line for line in screen(err) if "error" in line]
    assert len(errors) == 1, screen(err)
    assert errors[0].startswith("error: ") and "401" in errors[0] and "revoked" in errors[0], errors[0]
    assert_one_line(errors[0])


@pytest.mark.parametrize("chunked", [False, True])
def test_embed_out_naming_a_folder_is_refused_before_the_work(cli, tmp_cache, tmp_path, chunked: bool) -> None:
    """Issue 40: the folder was found at the final rename, after the whole embedding, and the message named a
    hidden temporary file."""
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(f"text {i}" for i in range(12)) + "\n")
    folder = tmp_path / "vectors.npy"
    folder.mkdir()
    r = cli("embed", "--input", str(corpus), "--out", str(folder), *(["--chunk-size", "4"] if chunked else []))
    line = assert_cli_refused(r, "--out", "folder")
    assert ".tmp" not in line and ".partial" not in line
    assert list(folder.iterdir()) == [] and not (tmp_path / "vectors.npy.partial").exists()
    assert not tmp_cache.root.exists() or not list(tmp_cache.root.glob("*.npy"))  # nothing was embedded


def test_an_edited_row_count_keeps_its_reason(tmp_path) -> None:
    """Issue 40: a manifest whose row count was edited was "points.parquet is not readable (AtlasDamaged)"."""
    from isoscope.atlas.folder import AtlasDamaged, load_atlas
    from tests.hostile.test_atlas_folder import build

    out = tmp_path / "atlas"
    build(out, n=100)
    manifest = out / "manifest.json"
    data = json.loads(manifest.read_text())
    data["n"] = 101
    manifest.write_text(json.dumps(data))
    with pytest.raises(AtlasDamaged) as info:
        load_atlas(out)
    message = str(info.value)
    assert_one_line(message)
    assert "not readable" not in message and "100" in message and "101" in message, message
    assert str(ROOT) not in message
