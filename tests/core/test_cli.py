"""The command line: JSON results, exit status 2 with one stderr line on bad input, .npy output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from isoscope.cli import COMMANDS, COMMANDS_FOLDER
from isoscope.data import load_pairs
from isoscope.encode.embed import encode
from isoscope.geometry.pairs import correlations, cosine_pairs
from tests.core.commands.cli_checks import exit_status, one_error_line

PAIRS = [
    ("A man is strumming a guitar.", "A man plays the guitar.", 4.8),
    ("A woman is chopping an onion.", "Someone is cutting an onion.", 4.2),
    ("A dog runs in the park.", "A dog is running on the grass.", 3.6),
    ("The stock market fell today.", "Shares dropped on the exchange.", 3.4),
    ("A child is reading a book.", "A kid plays football outside.", 1.0),
    ("The sun is shining.", "A man is cooking pasta.", 0.2),
    ("Two birds sit on a wire.", "Birds are perched on a cable.", 4.0),
    ("She is writing a letter.", "The train leaves at noon.", 0.0),
]


@pytest.fixture()
def pairs_file(tmp_path: Path) -> Path:
    path = tmp_path / "pairs.csv"
    path.write_text("".join(f'"{a}","{b}",{s}\n' for a, b, s in PAIRS))
    return path


def test_sts_json(cli, encoder, pairs_file: Path, capsys) -> None:
    assert cli(["sts", "--pairs", str(pairs_file), "--json", "--quiet"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1
    result = json.loads(out[0])
    assert result["n_pairs"] == len(PAIRS)
    pairs = load_pairs(pairs_file)
    vecs = encode(encoder, pairs.texts)
    expected = correlations(cosine_pairs(vecs[: len(PAIRS)], vecs[len(PAIRS) :]), pairs.scores)
    assert result["spearman"] == pytest.approx(expected["spearman"], abs=1e-6)
    assert result["pearson"] == pytest.approx(expected["pearson"], abs=1e-6)
    assert 50 < result["spearman"] <= 100  # x100 scale, and these pairs are easy


def test_sts_text_output_and_pooling(cli, pairs_file: Path, capsys) -> None:
    assert cli(["sts", "--pairs", str(pairs_file), "--pooling", "cls", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "spearman" in out and "pooling cls" in out and "8 pairs" in out


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["sts", "--pairs", "{tmp}/missing.csv"], "not found"),
        (["sts", "--pairs", "{pairs}", "--pooling", "median"], "unknown pooling"),
        (["sts", "--pairs", "{pairs}", "--pooling", "layer:99"], "layer"),
        (["sts", "--pairs", "{pairs}", "--pooling", "enc_first"], "encoder-decoder"),
        (["sts", "--pairs", "{noscores}"], "score"),
        (["sts", "--pairs", "{binary}"], "binary"),
        (["sts", "--pairs", "{pairs}", "--max-length", "0"], "max-length"),
        (["embed", "--input", "{corpus}", "--out", "{tmp}/x.txt"], ".npy"),
        (["embed", "--input", "{tmp}/missing.txt", "--out", "{tmp}/x.npy"], "not found"),
    ],
)
def test_bad_input_exit_2_and_one_stderr_line(cli, tmp_path: Path, pairs_file: Path, capsys, argv, match) -> None:
    (tmp_path / "noscores.csv").write_text("sentence1,sentence2\na cat,a dog\n")
    (tmp_path / "junk.csv").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    (tmp_path / "corpus.txt").write_text("one\ntwo\n")
    names = {
        "tmp": tmp_path,
        "pairs": pairs_file,
        "noscores": tmp_path / "noscores.csv",
        "binary": tmp_path / "junk.csv",
        "corpus": tmp_path / "corpus.txt",
    }
    argv = [a.format(**names) for a in argv]
    assert exit_status(cli, argv) == 2  # a pooling that does not parse is a usage error
    line = one_error_line(capsys)
    assert match.lower() in line.lower(), line
    assert not (tmp_path / "x.npy").exists()


def test_embed_writes_float32_npy(cli, encoder, tmp_path: Path, capsys) -> None:
    texts = ["The first text.", "A second, longer text about something else entirely.", "Third"]
    work = tmp_path / "work"
    work.mkdir()
    corpus = work / "corpus.txt"
    corpus.write_text("\n".join(texts) + "\n\n")
    out = work / "x.npy"
    assert cli(["embed", "--input", str(corpus), "--out", str(out), "--json", "--quiet"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["n"] == 3 and result["dim"] == 384 and result["out"] == str(out)
    vecs = np.load(out, allow_pickle=False)
    assert vecs.dtype == np.float32 and vecs.shape == (3, 384)
    np.testing.assert_allclose(vecs, encode(encoder, texts), atol=1e-6)
    assert sorted(p.name for p in work.iterdir()) == ["corpus.txt", "x.npy"]  # no temp files


def test_embed_csv_with_text_column(cli, tmp_path: Path, capsys) -> None:
    corpus = tmp_path / "c.csv"
    corpus.write_text("id,body\n1,hello world\n2,goodbye moon\n")
    out = tmp_path / "v.npy"
    assert cli(["embed", "--input", str(corpus), "--text-column", "body", "--out", str(out), "--quiet"]) == 0
    assert "wrote 2 x 384" in capsys.readouterr().out
    assert np.load(out, allow_pickle=False).shape == (2, 384)


def test_python_m_core_end_to_end(pairs_file: Path, tmp_path: Path, repo_root: Path) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "ISOSCOPE_CACHE": str(tmp_path / "cache")}
    proc = subprocess.run(
        [sys.executable, "-m", "isoscope", "sts", "--pairs", str(pairs_file), "--json", "--quiet"],
        cwd=repo_root,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["n_pairs"] == len(PAIRS) and 50 < result["spearman"] <= 100
    assert (
        result["model"] == "all-MiniLM-L6-v2 (embedded)" and result["pooling"] == "model"
    )  # its recipe: mean, then normalise
    assert list((tmp_path / "cache" / "embeddings").glob("*.npy"))  # the cache went where it was told


# ---------------------------------------------------------------- the command itself (issue: a real package)

HEAVY = (
    "torch",
    "transformers",
    "faiss",
    "sklearn",
    "umap",
    "pandas",
    "numpy",
    "scipy",
    "streamlit",
    "onnxruntime",
    "ray",
)


@pytest.mark.parametrize("command", [None, *COMMANDS])
def test_help_imports_no_heavy_library(command: str | None, tmp_path: Path) -> None:
    """``isoscope --help`` and ``isoscope COMMAND --help`` answer at once: no torch, transformers, faiss,
    pandas, numpy or streamlit (every command; a command module imports them inside ``run``, and its option
    tuples come from light modules such as ``isoscope.geometry.options``)."""
    argv = ["--help"] if command is None else [command, "--help"]
    code = (
        f"import sys\nfrom isoscope.cli import main\ntry:\n    main({argv!r})\nexcept SystemExit as e:\n    assert e.code == 0\n"
        f"print('LOADED:' + ','.join(sorted(m for m in {HEAVY!r} if m in sys.modules)))"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    help_text, loaded = proc.stdout.rsplit("LOADED:", 1)
    assert "usage: isoscope" in help_text
    assert loaded.strip() == "", f"{command or 'isoscope'} --help imported {loaded.strip()}"


def test_a_bug_is_reported_as_a_bug_with_the_traceback_under_v(cli, monkeypatch, pairs_file: Path, capsys) -> None:
    import isoscope.evaluate.sts

    def broken(*args, **kwargs):
        raise ValueError("operands could not be broadcast together with shapes (3,) (4,)")

    monkeypatch.setattr(
        isoscope.evaluate.sts, "calibrated_sts", broken
    )  # a deliberate bug inside core (looked up at run time)
    assert cli(["sts", "--pairs", str(pairs_file), "--quiet"]) == 1  # not 2: this is not the user's input
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "bug in Isoscope" in err and "ValueError" in err and "run with -v" in err
    assert cli(["-v", "sts", "--pairs", str(pairs_file), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "broken" in err and "bug in Isoscope" in err


def test_ray_engine_without_ray_names_the_extra(cli, monkeypatch, tmp_path: Path, capsys) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # as if `pip install isoscope` (no [ray] extra)
    monkeypatch.setitem(sys.modules, "ray.data", None)
    (tmp_path / "c.txt").write_text("one\ntwo\n")
    argv = ["embed", "--input", str(tmp_path / "c.txt"), "--engine", "ray", "--shard-dir", str(tmp_path / "s")]
    assert cli(argv) == 2
    assert 'pip install "isoscope[ray]"' in one_error_line(capsys)
    assert not (tmp_path / "s").exists()
    # the atlas asks before any work: a corpus that is not there is not even read (it once loaded the model first)
    argv = ["atlas", "--input", str(tmp_path / "absent.txt"), "--engine", "ray", "--out", str(tmp_path / "a")]
    assert cli(argv) == 2
    assert 'pip install "isoscope[ray]"' in one_error_line(capsys)


def test_app_binds_localhost_and_carries_the_packaged_config(cli, capsys) -> None:
    assert cli(["app", "--dry-run", "--port", "8600"]) == 0
    command = capsys.readouterr().out
    assert "streamlit run" in command and "dashboard/serve.py" in command  # app.py behind the Atlas map routes
    assert "--server.address 127.0.0.1" in command and "--server.port 8600" in command
    assert "--server.headless true" in command and "--browser.gatherUsageStats false" in command


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["app", "{tmp}/missing.parquet"], "not found"),
        (["app", "{bad}"], "text column"),
        (["app", "--text-column", "body"], "DATA_FILE"),
        (["app", "--port", "0"], "--port"),
    ],
)
def test_app_refuses_a_bad_data_file_before_starting(cli, tmp_path: Path, capsys, argv, match) -> None:
    (tmp_path / "bad.csv").write_text("id,score\n1,2\n")
    argv = [a.format(tmp=tmp_path, bad=tmp_path / "bad.csv") for a in argv]
    assert cli([*argv, "--dry-run"]) == 2
    assert match.lower() in one_error_line(capsys).lower()


def test_app_hands_the_data_file_to_the_dashboard(cli, tmp_path: Path, capsys) -> None:
    from isoscope.commands import app

    corpus = tmp_path / "corpus.csv"
    corpus.write_text("body,topic\nhello world,a\ngoodbye moon,b\nthird text,a\n")
    assert cli(["app", str(corpus), "--text-column", "body", "--dry-run"]) == 0
    capsys.readouterr()
    args = app_args(["app", str(corpus), "--text-column", "body", "--dry-run"])
    assert app.run(args)["env"] == {
        "ISOSCOPE_DATA_FILE": str(corpus.resolve()),
        "ISOSCOPE_DATA_KIND": "corpus",  # what the file holds, told to every page (issue 26)
        "ISOSCOPE_TEXT_COLUMN": "body",
    }
    capsys.readouterr()


def app_args(argv: list[str]):
    from isoscope.cli import build_parser

    return build_parser(argv).parse_args(argv)


def test_a_command_is_its_file(tmp_path: Path, monkeypatch, capsys) -> None:
    """CONVENTIONS' "Add a command": a module of isoscope/commands/ that declares COMMAND is listed by
    ``isoscope --help`` at its order and runs, with nothing else edited (a module without it is a helper)."""
    import isoscope.cli
    import isoscope.commands

    (tmp_path / "hello.py").write_text(
        "from isoscope.commands.common import add_json_argument, emit\n"
        'COMMAND = {"order": 15, "help": "say hello to a name"}\n'
        "def add_arguments(p):\n"
        '    p.add_argument("--name", required=True)\n'
        "    add_json_argument(p)\n"
        "def run(args):\n"
        '    emit(args, {"hello": args.name}, [f"hello {args.name}"])\n'
    )
    (tmp_path / "helpers.py").write_text("X = 1\n")
    monkeypatch.setattr(isoscope.commands, "__path__", [*isoscope.commands.__path__, str(tmp_path)])
    table = isoscope.cli._commands(isoscope.cli.COMMANDS_FOLDER, tmp_path)
    assert list(table)[:3] == ["embed", "hello", "sts"] and "helpers" not in table and "common" not in table
    monkeypatch.setattr(isoscope.cli, "COMMANDS", table)
    with pytest.raises(SystemExit):
        isoscope.cli.main(["--help"])
    assert "say hello to a name" in capsys.readouterr().out
    assert isoscope.cli.main(["hello", "--name", "Ada", "--json"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1]) == {"hello": "Ada"}


def test_the_commands_are_the_files_that_declare_one() -> None:
    declared = {p.stem for p in COMMANDS_FOLDER.glob("*.py") if "\nCOMMAND = {" in p.read_text()}
    assert set(COMMANDS) == declared and len(COMMANDS) == 16
    assert [COMMANDS[n][0] for n in ("embed", "app")] == ["isoscope.commands.embed", "isoscope.commands.app"]
