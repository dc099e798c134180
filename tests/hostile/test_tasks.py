"""Hostile labelled task files (isoscope.landscape.tasks): the loader and ``python -m isoscope landscape --task FILE``."""

from __future__ import annotations

from pathlib import Path

import pytest

from isoscope.errors import InputError
from isoscope.landscape import tasks
from tests.hostile.cases import FORMULAS, HTML, LONG, ROWS_200K, csv_bytes, junk
from tests.hostile.conftest import assert_cli_refused, assert_one_line

TWO_CLASSES = [["a cat sleeps", "pets"], ["a dog barks", "pets"], ["stocks fell", "money"], ["rates rose", "money"]]

REFUSED_TASKS: list[tuple[str, str, bytes, tuple[str, ...]]] = [
    ("empty", "t.csv", b"", ("empty",)),
    ("header_only", "t.csv", b"text,label\n", ("no row",)),
    ("no_label_column", "t.csv", b"text,topic\na,b\nc,d\n", ("'label' column",)),
    ("no_text_column", "t.csv", b"foo,label\na,1\nb,2\n", ("text",)),
    ("pairs_missing_sentence2", "t.csv", b"sentence1,label\na,1\nb,0\n", ("sentence2",)),
    ("semicolon_delimiter", "t.csv", b"text;label\na;1\nb;2\n", ("'label' column",)),
    ("no_header", "t.csv", b"a,1\nb,2\n", ("header",)),
    ("one_class", "t.csv", b"text,label\na,x\nb,x\nc,x\n", ("one label value",)),
    ("class_with_one_row", "t.csv", b"text,label\na,x\nb,x\nc,y\n", ("fewer than 2 rows",)),
    (
        "label_is_text",
        "t.csv",
        ("text,label\n" + "".join(f"t{i},{i}\nu{i},{i}\n" for i in range(150))).encode(),
        ("at most 100 classes",),
    ),
    ("binary_junk", "t.csv", junk(), ("binary",)),
    ("utf16_without_bom", "t.csv", "text,label\na,1\nb,2\n".encode("utf-16-le"), ("binary",)),
    ("jsonl_not_json", "t.jsonl", b"{bad\n", ("not valid json",)),
    ("parquet_junk", "t.parquet", b"PAR1" + junk(64), ("parquet",)),
    ("unsupported_extension", "t.xlsx", b"PK\x03\x04", ("unsupported file type",)),
    ("rows_200k", "t.csv", b"text,label\n" + b"a,1\nb,2\n" * (ROWS_200K // 2), ("over the limit",)),
]


@pytest.mark.parametrize(("case", "name", "data", "fragments"), REFUSED_TASKS, ids=[c[0] for c in REFUSED_TASKS])
def test_loader_refuses(case: str, name: str, data: bytes, fragments: tuple[str, ...], tmp_path: Path) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    for source in (data, path):
        with pytest.raises(InputError) as err:
            tasks.load_task_file(source, name)
        msg = str(err.value)
        assert_one_line(msg)
        assert name in msg
        for f in fragments:
            assert f.lower() in msg.lower(), f"{f!r} not in {msg!r}"


def test_task_spec_errors(tmp_path: Path) -> None:
    for spec in ("no-such-task", str(tmp_path / "missing.csv"), str(tmp_path)):
        with pytest.raises(InputError) as err:
            tasks.load_task(spec)
        assert_one_line(str(err.value))


def test_formulas_and_html_are_plain_labels_and_texts() -> None:
    rows = [[t, "=1+1" if i % 2 else "@SUM(A1)"] for i, t in enumerate((*FORMULAS, *HTML, "plain"))]
    task, warnings = tasks.load_task_file(csv_bytes(rows, ["text", "label"]), "f.csv")
    assert task.texts_a == [r[0] for r in rows]
    assert sorted(task.label_names) == ["=1+1", "@SUM(A1)"]
    assert warnings == []


def test_rows_without_label_dropped_with_warning() -> None:
    task, warnings = tasks.load_task_file(b"text,label\na,\nb,\nc,1\nd,1\ne,2\nf,2\n", "t.csv")
    assert task.texts_a == ["c", "d", "e", "f"]
    assert len(warnings) == 1 and "dropped 2" in warnings[0]
    assert_one_line(warnings[0])


def test_long_text_truncated_with_warning() -> None:
    data = csv_bytes([[LONG, "a"], ["x", "a"], ["y", "b"], ["z", "b"]], ["text", "label"])
    task, warnings = tasks.load_task_file(data, "long.csv")
    assert len(task.texts_a[0]) < 10_000
    assert any("truncated" in w for w in warnings)


@pytest.mark.parametrize(
    ("case", "name", "data", "fragments"),
    [c for c in REFUSED_TASKS if c[0] in ("empty", "no_label_column", "one_class", "binary_junk", "rows_200k")],
    ids=["empty", "no_label_column", "one_class", "binary_junk", "rows_200k"],
)
def test_cli_landscape_refuses(cli, case, name, data, fragments, tmp_path: Path) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    out = tmp_path / "out"
    assert_cli_refused(cli("landscape", "--task", str(path), "--out", str(out), "--quiet"), *fragments)
    assert not out.exists()  # refused before any work


def test_cli_landscape_unknown_task(cli, tmp_path: Path) -> None:
    assert_cli_refused(cli("landscape", "--task", "no-such-task", "--quiet"), "unknown task")
    good = tmp_path / "t.csv"
    good.write_bytes(csv_bytes(TWO_CLASSES, ["text", "label"]))
    assert_cli_refused(cli("landscape", "--task", str(good), "--task2", str(tmp_path / "nope.csv"), "--quiet"))
