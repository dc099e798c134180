"""Commands in a script or a CI log (issue 50 item 3): stderr is not a terminal there, so progress is whole lines
(one when a stage opens, at most one more per tenth of a long stage: no carriage-return frames piling up into one
line), ``--quiet`` prints nothing, and every diagnostic goes to stderr while stdout holds the result alone (a
warning about a lone surrogate was printed on stdout, so ``> out.txt 2> log`` hid it from the log).

In-process runs write stderr to a real file (``_stderr_to``); one child process writes both to pipes.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from argparse import Namespace
from pathlib import Path

import pytest

from isoscope.data import load_corpus, load_pairs
from isoscope.paths import DEMO_CORPUS, DEMO_PAIRS
from isoscope.space import progress as progress_module

# a stage's line: "embed: 0/80 texts", "flow: 1/2 epochs (50%, 3 s), bits_per_dim=1.2345"
STAGE = re.compile(r"^(?P<stage>[\w :-]+): [\d,]+/[\d,]+ \w+( \(\d+%, \d+ s\))?(, \w+=-?[\d.]+)?$")
SURROGATE_JSONL = b'{"text": "an emoji cut in half: \\ud83d"}\n{"text": "a whole one"}\n'


@pytest.fixture()
def every_tenth(monkeypatch) -> None:
    """Every tenth of a stage written (no interval between lines): the most a long stage can write."""
    monkeypatch.setattr(progress_module, "LINE_INTERVAL_S", 0.0)


def _stderr_to(path: Path, monkeypatch):
    """sys.stderr as a file on disk, as in ``2> log``: not a terminal."""
    stream = open(path, "w", encoding="utf-8")  # closed by the caller
    monkeypatch.setattr(sys, "stderr", stream)
    return stream


def _run(cli_main, argv: list[str], tmp_path: Path, monkeypatch, capsys) -> tuple[int, str, str]:
    """(exit status, stdout, stderr as written to a file)."""
    log = tmp_path / "stderr.log"
    stream = _stderr_to(log, monkeypatch)
    capsys.readouterr()
    try:
        code = cli_main(argv)
    finally:
        stream.close()
        monkeypatch.undo()
    return code, capsys.readouterr().out, log.read_text(encoding="utf-8")


def _stages(err: str) -> dict[str, int]:
    """Lines per stage; every line of ``err`` is a stage's line or a warning."""
    assert "\r" not in err and (err == "" or err.endswith("\n")), repr(err[-300:])
    counts: dict[str, int] = {}
    for line in err.splitlines():
        if line.startswith("warning: "):
            continue
        match = STAGE.match(line)
        assert match, f"not a stage's line: {line!r}"
        counts[match["stage"]] = counts.get(match["stage"], 0) + 1
    return counts


@pytest.fixture()
def corpus_file(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(load_corpus(DEMO_CORPUS).texts[:80]) + "\n")
    return path


def test_every_stage_in_a_log_is_whole_lines(cli_main, corpus_file, tmp_path, monkeypatch, capsys, every_tenth):
    """calibrate: the embedding (texts) and the flow (epochs, with bits/dim), each a few lines at most."""
    argv = ["calibrate", "--input", str(corpus_file), "--out", str(tmp_path / "flow"), "--flow-epochs", "2"]
    code, out, err = _run(cli_main, [*argv, "--no-cache"], tmp_path, monkeypatch, capsys)
    assert code == 0, err
    stages = _stages(err)
    assert set(stages) == {"embed", "flow"}, err
    assert all(1 <= n <= 11 for n in stages.values()), stages  # opened, then at most one per tenth
    assert "flow: 1/2 epochs, bits_per_dim=" in err  # the flow reports from its first epoch's end
    assert "flow fitted in" in out and not any(line.startswith(("warning", "flow:", "embed:")) for line in out.split())


def test_quiet_prints_nothing_on_stderr(cli_main, tmp_path, monkeypatch, capsys) -> None:
    pairs = tmp_path / "pairs.csv"
    pairs.write_bytes(load_pairs(DEMO_PAIRS).to_frame().head(40).to_csv(index=False).encode())
    argv = ["sts", "--pairs", str(pairs), "--no-cache"]
    code, out, err = _run(cli_main, argv, tmp_path, monkeypatch, capsys)
    assert code == 0 and _stages(err) == {"embed": 1}, err  # the check can fail: without --quiet, one line
    code, out, err = _run(cli_main, [*argv, "--quiet"], tmp_path, monkeypatch, capsys)
    assert code == 0 and err == "" and "spearman" in out


@pytest.mark.parametrize("json_mode", [False, True], ids=["text", "json"])
def test_a_warning_goes_to_stderr_never_stdout(cli_main, tmp_path, monkeypatch, capsys, json_mode: bool) -> None:
    source = tmp_path / "c.jsonl"
    source.write_bytes(SURROGATE_JSONL)
    argv = ["embed", "--input", str(source), "--out", str(tmp_path / "v.npy"), "--quiet"]
    code, out, err = _run(cli_main, argv + (["--json"] if json_mode else []), tmp_path, monkeypatch, capsys)
    assert code == 0, err
    warning = "c.jsonl: 1 lone UTF-16 surrogate(s)"
    assert err.startswith(f"warning: {warning}") and err.count("\n") == 1 and "U+FFFD" in err, err
    if json_mode:  # the result alone: one JSON object, which keeps its warnings
        assert any(warning in w for w in json.loads(out)["warnings"])
    else:
        assert out == f"wrote 2 x 384 vectors to {tmp_path / 'v.npy'}\n"


def test_the_atlas_stages_in_a_log(tmp_path, monkeypatch, every_tenth) -> None:
    """``isoscope atlas``'s callback (a stage count, and the stages that count their work) writes lines."""
    from isoscope.commands.atlas import _progress

    stream = _stderr_to(tmp_path / "log", monkeypatch)
    stages = ["texts", "embed", "raw_knn"]
    update = _progress(Namespace(quiet=False), stages)
    for stage, total in (("texts", 1), ("embed", 120), ("raw_knn", 120)):
        update(stage, 0, 1)  # the build's marks: the stage started ...
        for done in range(0, total + 1, 8) if total > 1 else ():
            update(stage, done, total)  # ... counted its work ...
        update(stage, 1, 1)  # ... and ended
    stream.close()
    err = (tmp_path / "log").read_text()
    counts = _stages(err)
    assert counts == {"atlas": 4, "embed": 11, "raw_knn": 11}, err  # texts: a mark, no line of its own
    assert "atlas: 0/3 stages\n" in err and "atlas: 3/3 stages (100%, 0 s)\n" in err


@pytest.mark.slow  # a child that imports torch and loads the model
def test_a_child_process_writes_results_to_stdout_and_lines_to_stderr(tmp_path: Path) -> None:
    more = b"".join(b'{"text": "text number %d"}\n' % i for i in range(298))
    (tmp_path / "c.jsonl").write_bytes(SURROGATE_JSONL + more)  # 300 texts: batches, so a stage to show
    env = {**os.environ, "ISOSCOPE_CACHE": str(tmp_path / "cache")}
    code = "import sys; from isoscope.cli import main; sys.exit(main(sys.argv[1:]))"
    argv = [sys.executable, "-c", code, "embed", "--input", "c.jsonl", "--out", "v.npy"]
    run = subprocess.run(argv, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout == "wrote 300 x 384 vectors to v.npy\n"
    stages = _stages(run.stderr)  # no carriage return from Isoscope, transformers or huggingface_hub
    assert set(stages) == {"embed"} and stages["embed"] <= 11, run.stderr
    assert run.stderr.splitlines()[-1].startswith("warning: c.jsonl: 1 lone UTF-16 surrogate(s)")
