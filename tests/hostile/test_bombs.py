"""Decode bombs (issue 17): small files that expand when decoded, and JSON nested past the recursion limit.

Every command that reads a user file refuses them with one line (exit 2), the app refuses them as uploads
with one error line, and peak memory stays bounded: measured in a child process (the CLI) or with
tracemalloc (Python allocations of the loader).
"""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest

from isoscope.data import load_corpus, load_pairs
from isoscope.errors import InputError
from tests.dashboard.conftest import open_page
from tests.hostile.cases import GOOD_PAIRS_CSV, PARQUET_BOMB, deep_json, parquet_bomb, write
from tests.hostile.conftest import assert_app_refused, assert_cli_refused, assert_one_line, new_app
from tests.hostile.peak import GiB, child_peak

ROOT = Path(__file__).resolve().parents[2]
DEMO_PAIRS = str(ROOT / "assets" / "demo_pairs.csv")


@pytest.fixture(scope="module")
def bomb(tmp_path_factory) -> Path:
    """The issue's bomb, built here (never committed): 2,000 one-row zstd row groups of 1 MB cells."""
    path = tmp_path_factory.mktemp("bomb") / "bomb.parquet"
    parquet_bomb(path)
    assert path.stat().st_size < 2 * 2**20  # small on disk, about 4 GB decoded
    return path


def _child_peak(argv: list[str], tmp_path: Path, env: dict[str, str] | None = None) -> tuple[int, str, int]:
    return child_peak(argv, tmp_path, env)


def test_cli_sts_refuses_the_parquet_bomb_in_bounded_memory(bomb: Path, tmp_path: Path) -> None:
    """Issue 17: 1.2 MB took the CLI to 12 GB. Now one line, exit 2, peak resident memory under 1 GiB."""
    stmt = f"from isoscope.cli import main; sys.exit(main(['sts', '--pairs', {str(bomb)!r}, '--quiet']))"
    code, err, peak = _child_peak([stmt], tmp_path)
    lines = [x for x in err.splitlines() if x.strip()]
    assert code == 2, err[-2000:]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Parquet" in lines[0], lines
    assert_one_line(lines[0])
    assert peak < GiB, f"peak {peak / 2**20:.0f} MiB"


def test_loader_reads_a_dictionary_bomb_in_bounded_memory(tmp_path: Path) -> None:
    """4,000 rows holding the same 500 KB text, stored once in a dictionary page: the metadata says ~1 MB,
    decoded naively it is 4 GB. Read as a dictionary and cut per distinct text, it loads in little memory."""
    path = tmp_path / "dict.parquet"
    parquet_bomb(path, groups=4000, cell=500_000, dictionary=True)
    stmt = (
        "from isoscope.data import load_pairs\n"
        f"p = load_pairs({str(path)!r})\n"
        "assert len(p) == 4000 and set(map(len, p.sentence1)) == {2000}, (len(p), set(map(len, p.sentence1)))\n"
        "assert any('truncated' in w for w in p.warnings), p.warnings\n"
    )
    code, err, peak = _child_peak([stmt], tmp_path)
    assert code == 0, err[-2000:]
    assert peak < GiB // 2, f"peak {peak / 2**20:.0f} MiB"


def _peak_python_bytes(fn) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_40_mb_cell_is_cut_while_reading(tmp_path: Path) -> None:
    """A single-line CSV of 40 MB: the loader never holds the whole cell (it used to hold it three times)."""
    path = tmp_path / "one_line.csv"
    with open(path, "wb") as f:
        f.write(b"sentence1,sentence2,score\n")
        for _ in range(40):
            f.write(b"x" * 2**20)
        f.write(b",short,3\n")

    def load() -> None:
        pairs = load_pairs(path)
        assert pairs.sentence1 == ["x" * 2000] and pairs.sentence2 == ["short"]
        assert any("truncated" in w for w in pairs.warnings)

    assert _peak_python_bytes(load) < 16 * 2**20


def test_rows_are_counted_while_reading(tmp_path: Path) -> None:
    """A million short rows: refused after the limit is passed, without holding a million rows first."""
    path = tmp_path / "rows.csv"
    path.write_bytes(b"sentence1,sentence2,score\n" + b"a,b,1\n" * 1_000_000)

    def load() -> None:
        with pytest.raises(InputError, match="over the limit"):
            load_pairs(path)

    assert _peak_python_bytes(load) < 64 * 2**20


def test_limits_follow_the_environment(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ISOSCOPE_MAX_JSON_DEPTH", "3")
    with pytest.raises(InputError, match="deeper than 3"):
        load_corpus(b'{"text": "a", "m": [[[[1]]]]}\n', "c.jsonl")
    monkeypatch.setenv("ISOSCOPE_MAX_LINE_BYTES", "100")
    with pytest.raises(InputError, match="line 2 is longer"):
        load_corpus(b'{"text": "a"}\n{"text": "' + b"b" * 200 + b'"}\n', "c.jsonl")
    monkeypatch.setenv("ISOSCOPE_MAX_BYTES", "1000")
    with pytest.raises(InputError, match="larger than 1,000 bytes"):
        load_corpus(b"a line\n" * 200, "c.txt")
    with pytest.raises(InputError, match="larger than 1,000 bytes"):
        load_corpus(write(tmp_path, "c.txt", b"a line\n" * 200))
    monkeypatch.setenv("ISOSCOPE_MAX_ROWS", "not a number")
    with pytest.raises(InputError, match="ISOSCOPE_MAX_ROWS must be a whole number"):
        load_corpus(b"a\n", "c.txt")


# ---------------------------------------------------------------- every command that reads a file

MINI_BOMB_ENV = {"ISOSCOPE_MAX_PARQUET_BYTES": str(64 * 2**20)}  # a 100-group bomb (200 MB) is then over


def _commands(path: str, task: str) -> list[list[str]]:
    return [
        ["sts", "--pairs", path],
        ["sts", "--pairs", DEMO_PAIRS, "--calibrate", "whitening:8", "--fit-on", path],
        ["embed", "--input", path, "--out", "{out}/v.npy"],
        ["embed", "--input", path, "--out", "{out}/v.npy", "--chunk-size", "8"],
        ["calibrate", "--input", path, "--out", "{out}/cal"],
        ["geometry", "--input", path],
        ["pooling", "--pairs", path],
        ["landscape", "--task", task, "--out", "{out}/land", "--quiet"],
        ["atlas", "--input", path, "--out", "{out}/atlas"],
        ["compare", "--input", path],
    ]


COMMAND_IDS = [
    "sts",
    "sts_fit_on",
    "embed",
    "embed_chunked",
    "calibrate",
    "geometry",
    "pooling",
    "landscape",
    "atlas",
    "compare",
]


@pytest.mark.parametrize("which", range(len(COMMAND_IDS)), ids=COMMAND_IDS)
@pytest.mark.parametrize(
    ("kind", "fragments"),
    [
        ("deep_json", ("line 1", "deeper than")),
        ("parquet_bomb", ("parquet", "limit")),
        ("huge_number", ("not valid json",)),
    ],
)
def test_every_command_refuses(cli, monkeypatch, tmp_path: Path, which: int, kind: str, fragments) -> None:
    """Issue 17: a 2 KB JSONL nested 1,000 deep gave a RecursionError traceback (exit 1) in each of these."""
    if kind == "deep_json":
        path, task = write(tmp_path, "deep.jsonl", deep_json()), write(tmp_path, "task.jsonl", deep_json(key="label"))
    elif kind == "huge_number":
        data = b'{"sentence1": "a", "sentence2": "b", "text": "t", "label": "x", "score": 1' + b"0" * 5000 + b"}\n"
        path = task = write(tmp_path, "number.jsonl", data)
    else:
        for k, v in MINI_BOMB_ENV.items():
            monkeypatch.setenv(k, v)
        path = task = write(tmp_path, "bomb.parquet", parquet_bomb(groups=20, cell=5_000_000))
    out = tmp_path / "out"
    argv = [a.format(out=out) for a in _commands(str(path), str(task))[which]]
    assert_cli_refused(cli(*argv), *fragments)
    assert not out.exists() or not any(out.iterdir())  # refused before anything was written


# ---------------------------------------------------------------- the app's uploads


@pytest.mark.parametrize(
    ("page", "radio", "uploader", "name", "data", "fragments"),
    [
        ("similarity", "sim_source", "sim_upload", "deep.jsonl", deep_json(), ("deeper than",)),
        ("anisotropy", "ani_source", "ani_upload", "deep.jsonl", deep_json(key="topic"), ("deeper than",)),
        ("similarity", "sim_source", "sim_upload", "bomb.parquet", PARQUET_BOMB, ("parquet", "limit")),
        ("anisotropy", "ani_source", "ani_upload", "bomb.parquet", PARQUET_BOMB, ("parquet", "limit")),
    ],
    ids=["pairs_deep_json", "corpus_deep_json", "pairs_parquet_bomb", "corpus_parquet_bomb"],
)
def test_app_upload_refused(page, radio, uploader, name, data, fragments) -> None:
    at = open_page(new_app(), page)
    at.radio(key=radio).set_value("Upload a file").run()
    at.file_uploader(key=uploader).set_value((name, data, "application/octet-stream")).run()
    assert_app_refused(at, *fragments)


def test_app_classroom_upload_limit(monkeypatch) -> None:
    """The decode limits follow the environment the server runs with (isoscope app --classroom sets them)."""
    monkeypatch.setenv("ISOSCOPE_MAX_BYTES", "100")
    at = open_page(new_app(), "similarity")
    at.radio(key="sim_source").set_value("Upload a file").run()
    at.file_uploader(key="sim_upload").set_value(("good.csv", GOOD_PAIRS_CSV, "text/csv")).run()
    assert_app_refused(at, "larger than 100 bytes")


def test_json_depth_scan_is_exact() -> None:
    from isoscope.data import json_depth_exceeds

    assert not json_depth_exceeds("[" * 5 + "]" * 5, 5) and json_depth_exceeds("[" * 6 + "]" * 6, 5)
    assert not json_depth_exceeds(json.dumps({"a": "[[[[[[[[[[", "b": '{"x": "\\"[[["}'}), 1)  # brackets in strings
    assert not json_depth_exceeds('{"a": "unterminated [[[[[[', 1)  # json.loads reports it
