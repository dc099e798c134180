"""Hostile files, second round (issue 28): lone UTF-16 surrogates, Parquet footers that lie, valid Parquet files
that must not be called crafted, FIFOs, devices and sockets given as inputs, standard input, and file names
that carry terminal escape sequences.

Every refused file gets one line (exit 2 in the CLI, one error box in the app) and costs little memory:
measured in a child process (``tests.hostile.peak``).
"""

from __future__ import annotations

import io
import json
import os
import socket
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from isoscope.data import load_corpus, load_pairs
from isoscope.errors import InputError
from tests.dashboard.conftest import open_page
from tests.hostile.cases import GOOD_CORPUS_TXT, GOOD_PAIRS_CSV, lying_parquet, wide_parquet, write
from tests.hostile.conftest import assert_app_refused, assert_cli_refused, assert_one_line, new_app
from tests.hostile.peak import ROOT, GiB, child_peak

DEMO_PAIRS = str(ROOT / "assets" / "demo_pairs.csv")
SURROGATE_WARNING = "lone UTF-16 surrogate"

# ---------------------------------------------------------------- lone surrogates

# a JSON escape of half an emoji decodes to a lone surrogate; the same half encoded in bytes (CESU-8/WTF-8, as
# Java and JavaScript write it) is what a CSV or a text file holds
SURROGATE_FILES: dict[str, tuple[str, bytes]] = {
    "jsonl_escape": (
        "s.jsonl",
        b"".join(
            json.dumps({"sentence1": s1, "sentence2": s2, "text": s1, "label": lab, "score": sc}).encode() + b"\n"
            for s1, s2, lab, sc in [
                ("A cat \ud83d sleeps.", "A cat is sleeping.", "pets", 4.5),
                ("Stocks fell \udc00 today.", "The market dropped.", "money", 4.0),
                ("A dog runs.", "It rained all day.", "pets", 0.5),
                ("Rain is coming.", "Stocks rose.", "money", 0.2),
            ]
            * 2
        ),
    ),
    "csv_bytes": (
        "s.csv",
        (
            "sentence1,sentence2,score,text,label\n"
            "A cat \ud83d sleeps.,A cat is sleeping.,4.5,A cat \ud83d sleeps.,pets\n"
            "Stocks fell today.,The market \udc00 dropped.,4.0,Stocks fell.,money\n"
            "A dog runs.,It rained all day.,0.5,A dog runs.,pets\n"
            "Rain is coming.,Stocks rose.,0.2,Rain is coming.,money\n"
        ).encode("utf-8", "surrogatepass"),
    ),
}


@pytest.mark.parametrize("case", sorted(SURROGATE_FILES))
def test_loaders_replace_lone_surrogates_and_say_so(case: str) -> None:
    name, data = SURROGATE_FILES[case]
    for loaded in (load_pairs(data, name), load_corpus(data, name)):
        texts = loaded.texts
        assert all(t.encode("utf-8") for t in texts)  # every text encodes: no surrogate left
        assert any("\ufffd" in t for t in texts)
        assert sum(SURROGATE_WARNING in w for w in loaded.warnings) == 1, loaded.warnings
        for w in loaded.warnings:
            assert_one_line(w)


def test_surrogate_pairs_are_joined_not_replaced() -> None:
    """An emoji written as two escaped halves (JSON) or as two encoded halves (CESU-8) is the emoji."""
    jsonl = json.dumps({"text": "ok \ud83d\ude00"}).encode() + b"\n"
    cesu = "text\nok \ud83d\ude00\n".encode("utf-8", "surrogatepass")
    for data, name in ((jsonl, "c.jsonl"), (cesu, "c.csv")):
        corpus = load_corpus(data, name)
        assert corpus.texts == ["ok \U0001f600"] and not corpus.warnings


def test_utf16_file_with_a_lone_surrogate() -> None:
    corpus = load_corpus("half \ud800 an emoji\nfine\n".encode("utf-16", "surrogatepass"), "c.txt")
    assert corpus.texts == ["half \ufffd an emoji", "fine"]
    assert any(SURROGATE_WARNING in w for w in corpus.warnings)


def _commands(path: str, out: Path) -> dict[str, list[str]]:
    return {
        "embed": ["embed", "--input", path, "--out", str(out / "v.npy")],
        "embed_chunked": ["embed", "--input", path, "--out", str(out / "c.npy"), "--chunk-size", "4"],
        "sts": ["sts", "--pairs", path],
        "sts_fit_on": ["sts", "--pairs", DEMO_PAIRS, "--calibrate", "whitening:8", "--fit-on", path],
        "geometry": ["geometry", "--input", path, "--json"],
        "calibrate": ["calibrate", "--input", path, "--method", "whitening", "--out", str(out / "cal")],
        "pooling": ["pooling", "--pairs", path, "--json"],
        "app": ["app", path, "--dry-run"],
    }


@pytest.mark.parametrize("case", sorted(SURROGATE_FILES))
@pytest.mark.parametrize(
    "command", ["embed", "embed_chunked", "sts", "sts_fit_on", "geometry", "calibrate", "pooling", "app"]
)
def test_every_command_reads_lone_surrogates(cli, tmp_path: Path, case: str, command: str) -> None:
    """Issue 28: an internal error (exit 1) in every command. Now the file is read, with one warning."""
    name, data = SURROGATE_FILES[case]
    path = write(tmp_path, name, data)
    out = tmp_path / "out"
    out.mkdir()
    argv = _commands(str(path), out)[command]
    r = cli(*argv)
    assert r.code == 0, r.err
    assert "internal error" not in r.err
    if command != "app":  # app prints the command it would run
        assert SURROGATE_WARNING in r.err  # a diagnostic: on stderr (issue 50), with --json too
        assert "--json" in argv or SURROGATE_WARNING not in r.out  # stdout: the result alone (--json: its field)


def test_atlas_and_landscape_inputs_read_lone_surrogates(tmp_path: Path) -> None:
    """The two commands too long to run here read their input through these loaders: the atlas's corpus
    (``load_corpus`` with the atlas row cap) and a landscape task file (``load_task``)."""
    from isoscope.landscape.tasks import load_task

    name, data = SURROGATE_FILES["jsonl_escape"]
    corpus = load_corpus(write(tmp_path, name, data), max_rows=1_000_000)
    assert any("\ufffd" in t for t in corpus.texts)
    split = load_task(str(write(tmp_path, "task.jsonl", data)))
    texts = [*split.train.texts_a, *split.heldout.texts_a]
    assert all(t.encode("utf-8") for t in texts) and any("\ufffd" in t for t in texts)
    assert any(SURROGATE_WARNING in w for w in split.warnings)


@pytest.mark.parametrize("case", sorted(SURROGATE_FILES))
def test_app_upload_with_lone_surrogates(case: str) -> None:
    """Issue 28: a bug box. Now the pairs load, with the warning."""
    name, data = SURROGATE_FILES[case]
    at = open_page(new_app(), "similarity")
    at.radio(key="sim_source").set_value("Upload a file").run()
    at.file_uploader(key="sim_upload").set_value((name, data, "text/plain")).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any(SURROGATE_WARNING in w.value.replace("\\", "") for w in at.warning)


# ---------------------------------------------------------------- Parquet footers that lie


@pytest.fixture(scope="module")
def liar(tmp_path_factory) -> Path:
    """The issue's file: 1.2 GB of data in 600 one-row zstd row groups, its footer rewritten to claim 100 bytes
    per row group (and per column chunk). About 360 KB on disk."""
    path = tmp_path_factory.mktemp("liar") / "liar.parquet"
    lying_parquet(path)
    assert path.stat().st_size < 2**20
    return path


def test_lying_footer_is_refused_at_the_budget_in_bounded_memory(liar: Path, tmp_path: Path) -> None:
    """Issue 28: refused only after 2.8-4.3 GB of RSS (the batches were sized from the footer's claim). The
    pages' own headers now bound decoding: refused at the 512 MiB budget before anything is decompressed."""
    stmt = f"from isoscope.cli import main; sys.exit(main(['sts', '--pairs', {str(liar)!r}, '--quiet']))"
    code, err, peak = child_peak([stmt], tmp_path)
    lines = [x for x in err.splitlines() if x.strip()]
    assert code == 2, err[-2000:]
    assert len(lines) == 1 and "512 MiB" in lines[0] and "limit for Parquet" in lines[0], lines
    assert_one_line(lines[0])
    assert peak < GiB, f"peak {peak / 2**20:.0f} MiB"
    print(f"lying footer refused, child peak RSS {peak / 2**20:.0f} MiB")


def test_loader_refuses_the_lying_footer_below_the_budget_in_python_allocations(liar: Path) -> None:
    import tracemalloc

    tracemalloc.start()
    try:
        with pytest.raises(InputError, match="limit for Parquet files") as err:
            load_pairs(liar)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert_one_line(str(err.value))
    assert "crafted" not in str(err.value)
    assert peak < 64 * 2**20, f"{peak / 2**20:.0f} MiB of Python allocations"


LIAR_COMMANDS = {
    "sts": ["sts", "--pairs", "{p}"],
    "sts_fit_on": ["sts", "--pairs", DEMO_PAIRS, "--calibrate", "whitening:8", "--fit-on", "{p}"],
    "embed": ["embed", "--input", "{p}", "--out", "{out}/v.npy"],
    "calibrate": ["calibrate", "--input", "{p}", "--out", "{out}/cal"],
    "geometry": ["geometry", "--input", "{p}"],
    "pooling": ["pooling", "--pairs", "{p}"],
    "landscape": ["landscape", "--task", "{p}", "--out", "{out}/land", "--quiet"],
    "atlas": ["atlas", "--input", "{p}", "--out", "{out}/atlas"],
    "compare": ["compare", "--input", "{p}"],
    "sweep": ["sweep", "--input", "{p}"],
    "app": ["app", "{p}", "--dry-run"],
}


@pytest.mark.parametrize("command", sorted(LIAR_COMMANDS))
def test_every_command_refuses_a_lying_footer(cli, monkeypatch, tmp_path: Path, command: str) -> None:
    """A smaller liar (200 MB decoded, footer claiming 100 bytes per group) under a 64 MiB Parquet budget, so that
    a reader trusting the footer fails here in reasonable memory: every command refuses it at the budget."""
    monkeypatch.setenv("ISOSCOPE_MAX_PARQUET_BYTES", str(64 * 2**20))
    path = tmp_path / "liar.parquet"
    lying_parquet(path, groups=100)
    out = tmp_path / "out"
    argv = [a.format(p=path, out=out) for a in LIAR_COMMANDS[command]]
    assert_cli_refused(cli(*argv), "64 MiB", "limit for Parquet")
    assert not out.exists() or not any(out.iterdir())


@pytest.mark.parametrize(("page", "radio", "uploader"), [("similarity", "sim_source", "sim_upload")])
def test_app_upload_refuses_a_lying_footer(liar: Path, page: str, radio: str, uploader: str) -> None:
    at = open_page(new_app(), page)
    at.radio(key=radio).set_value("Upload a file").run()
    at.file_uploader(key=uploader).set_value(("liar.parquet", liar.read_bytes(), "application/octet-stream")).run()
    assert_app_refused(at, "limit for Parquet")


def test_a_valid_wide_parquet_is_not_called_crafted(tmp_path: Path) -> None:
    """Issue 28: pyarrow's defaults, 100 columns x 49,999 short strings (34 MB here), was refused as 'damaged or
    crafted' after 1.1 GB (each batch counted every column's whole dictionary again). It loads."""
    path = wide_parquet(tmp_path / "wide.parquet")
    stmt = (
        "from isoscope.data import load_corpus\n"
        f"c = load_corpus({str(path)!r})\n"
        "assert len(c) == 49_999 and c.meta.shape == (49_999, 99), (len(c), c.meta.shape)\n"
        "assert c.texts[7] == 'text 7' and c.meta['c99'].iloc[-1] == 'c99 49998', c.meta['c99'].iloc[-1]\n"
        "assert not c.warnings, c.warnings\n"
    )
    code, err, peak = child_peak([stmt], tmp_path)
    assert code == 0, err[-2000:]
    assert peak < GiB, f"peak {peak / 2**20:.0f} MiB"
    print(f"wide Parquet loaded, child peak RSS {peak / 2**20:.0f} MiB")


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"compression": "snappy", "data_page_version": "2.0"},
        {"compression": "gzip", "use_dictionary": False, "write_statistics": False},
        {"compression": "none", "data_page_size": 1024, "write_page_index": True},
        {"compression": "zstd", "row_group_size": 7, "store_schema": False},
    ],
    ids=["defaults", "snappy_v2_pages", "gzip_plain", "small_pages_page_index", "zstd_small_groups"],
)
def test_page_headers_of_valid_files_read_back(tmp_path: Path, options: dict) -> None:
    """The page walk reads every layout pyarrow writes (page versions, codecs, statistics, page indexes)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = 300
    table = pa.table(
        {
            "text": [f"sentence number {i} " + "x" * (i % 50) for i in range(rows)],
            "topic": [f"t{i % 7}" for i in range(rows)],
            "score": np.linspace(0, 5, rows),
            "n": pa.array(range(rows), pa.int64()),
            "tags": [[i, i + 1] for i in range(rows)],
        }
    )
    path = tmp_path / "t.parquet"
    pq.write_table(table, path, **options)
    corpus = load_corpus(path)
    assert corpus.texts == [t.strip() for t in table.column("text").to_pylist()]
    assert corpus.meta["topic"].tolist() == table.column("topic").to_pylist()
    assert any("nested" in w for w in corpus.warnings)


# ---------------------------------------------------------------- FIFOs, devices, sockets, standard input


def _feed(fifo: Path, lines: int | None) -> threading.Thread:
    """A writer on ``fifo``: ``lines`` lines, or like ``yes`` until the reader goes away (None)."""

    def run() -> None:
        try:
            fd = os.open(fifo, os.O_WRONLY)  # blocks until a reader opens it (never, when it is refused)
        except OSError:
            return
        try:  # the reader going away breaks the pipe on a write or on the last flush, when the file closes
            with os.fdopen(fd, "wb") as f:
                n = 0
                while lines is None or n < lines:
                    f.write(b"y\n" * 1000)
                    n += 1000
        except OSError:  # BrokenPipeError included
            pass

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def _release(fifo: Path) -> None:
    """Open the FIFO for reading once (non-blocking), so that a writer thread still waiting can finish."""
    try:
        fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        os.close(fd)
    except OSError:
        pass


@pytest.mark.timeout(120, method="signal")
@pytest.mark.parametrize("writer", [None, 1000, "yes"], ids=["no_writer", "writer_1000_lines", "fed_by_yes"])
@pytest.mark.parametrize("command", ["embed", "embed_chunked", "sts", "geometry", "calibrate", "app"])
def test_a_fifo_input_is_refused_before_it_is_opened(cli, tmp_path: Path, command: str, writer) -> None:
    """Issue 28: a FIFO as --input hung (no writer, or a writer of 1,000 lines); fed by `yes` it silently embedded
    3,641 rows. Now refused at once, named for what it is."""
    fifo = tmp_path / "texts.txt"
    os.mkfifo(fifo)
    thread = None if writer is None else _feed(fifo, None if writer == "yes" else writer)
    out = tmp_path / "out"
    out.mkdir()
    try:
        r = cli(*_commands(str(fifo), out)[command])
    finally:
        _release(fifo)
        if thread is not None:
            thread.join(10)
    assert_cli_refused(r, "FIFO", "not a regular file")
    assert not any(out.iterdir())


@pytest.mark.timeout(120, method="signal")
@pytest.mark.parametrize("device", ["/dev/zero", "/dev/null", "/dev/urandom"])
def test_a_device_input_is_refused(cli, tmp_path: Path, device: str) -> None:
    if not os.path.exists(device):
        pytest.skip(f"no {device}")
    assert_cli_refused(cli("embed", "--input", device, "--out", str(tmp_path / "v.npy")), "character device")
    link = tmp_path / "innocent.csv"
    link.symlink_to(device)
    assert_cli_refused(cli("sts", "--pairs", str(link)), "character device")


@pytest.mark.timeout(120, method="signal")
def test_a_socket_input_is_refused(cli, tmp_path: Path) -> None:
    path = tmp_path / "s.txt"
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(path))
        assert_cli_refused(
            cli("embed", "--input", str(path), "--out", str(tmp_path / "v.npy")), "a socket, not a regular file"
        )


def test_loaders_refuse_special_files_with_one_line(tmp_path: Path) -> None:
    fifo = tmp_path / "p.csv"
    os.mkfifo(fifo)
    for load in (load_pairs, load_corpus):
        with pytest.raises(InputError, match="FIFO") as err:
            load(fifo)
        assert_one_line(str(err.value))


class _Stdin:
    """A stand-in for ``sys.stdin`` whose ``buffer`` holds ``data``."""

    def __init__(self, data: bytes) -> None:
        self.buffer = io.BytesIO(data)


def test_stdin_is_an_input_under_the_same_limits(cli, monkeypatch, tmp_path: Path) -> None:
    """`-` reads standard input: a text per line for a corpus, CSV for pairs, JSONL and Parquet by content."""
    monkeypatch.setattr(sys, "stdin", _Stdin(GOOD_CORPUS_TXT))
    r = cli("embed", "--input", "-", "--out", str(tmp_path / "v.npy"), "--json")
    assert r.code == 0, r.err
    assert np.load(tmp_path / "v.npy").shape[0] == len(GOOD_CORPUS_TXT.splitlines())
    monkeypatch.setattr(sys, "stdin", _Stdin(GOOD_PAIRS_CSV + b"A dog runs.,A dog is running.,4.8\n"))
    r = cli("sts", "--pairs", "-", "--json")
    assert r.code == 0, r.err
    assert json.loads(r.out.strip().splitlines()[-1])["n_pairs"] == 5
    monkeypatch.setattr(sys, "stdin", _Stdin(b'{"text": "a jsonl record"}\n{"text": "another one"}\n'))
    assert load_corpus("-").texts == ["a jsonl record", "another one"]


def test_stdin_like_yes_is_refused_at_the_row_limit(cli, monkeypatch, tmp_path: Path) -> None:
    """`yes | isoscope embed --input -`: the row limit of a file, one line that says so; nothing written."""
    monkeypatch.setattr(sys, "stdin", _Stdin(b"y\n" * 200_000))
    assert_cli_refused(cli("embed", "--input", "-", "--out", str(tmp_path / "v.npy")), "over the limit")
    monkeypatch.setenv("ISOSCOPE_MAX_BYTES", "1000")
    monkeypatch.setattr(sys, "stdin", _Stdin(b"y\n" * 200_000))
    assert_cli_refused(cli("embed", "--input", "-", "--out", str(tmp_path / "v.npy")), "stdin is larger than")
    assert not (tmp_path / "v.npy").exists()


# ---------------------------------------------------------------- names with control characters

ESCAPES = ["\x1b]0;pwned\x07", "\x1b[2J\x1b[31m", "\u202eevil", "bell\x07\x08"]


def _controls(text: str) -> list[str]:
    """The characters of ``text`` a terminal acts on (C0/C1 controls but the line break, bidi overrides)."""
    return [c for c in text if (ord(c) < 32 and c != "\n") or 0x7F <= ord(c) <= 0x9F or 0x202A <= ord(c) <= 0x202E]


@pytest.mark.parametrize("prefix", ESCAPES, ids=["osc_title", "clear_screen", "bidi_override", "bell_backspace"])
def test_names_with_control_characters_are_escaped_in_every_message(cli, tmp_path: Path, prefix: str) -> None:
    """Issue 28: names were printed raw (a terminal would act on them). Errors, warnings and the internal-error
    line go through one helper, ``isoscope.errors.printable``."""
    from isoscope.errors import printable

    bad = write(tmp_path, f"{prefix}.csv", b"")
    r = cli("sts", "--pairs", str(bad))
    line = assert_cli_refused(r, "empty")
    assert printable(prefix) in line and not _controls(line)
    missing = tmp_path / f"{prefix}missing.csv"
    line = assert_cli_refused(cli("sts", "--pairs", str(missing)), "not found")
    assert printable(prefix) in line and not _controls(line)
    latin = write(tmp_path, f"{prefix}.txt", "caf\xe9 au lait\nsecond line\nthird one\n".encode("latin-1"))
    r = cli("embed", "--input", str(latin), "--out", str(tmp_path / "v.npy"))
    assert r.code == 0, r.err
    assert "Latin-1" in r.err and printable(prefix) in r.err  # the warning names the file, escaped (on stderr)
    assert not _controls(r.out + r.err)


def test_printable_is_idempotent_and_keeps_text() -> None:
    from isoscope.errors import printable

    assert printable("Café, naïve 東京 ok\t") == "Café, naïve 東京 ok\\x09"
    once = printable("\x1b[31m\u202e\ud800")
    assert once == "\\x1b[31m\\u202e\\ud800" and printable(once) == once
    assert str(InputError("file \x1b[31mred")) == "file \\x1b[31mred"
