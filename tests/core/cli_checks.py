"""Checks shared by the CLI tests."""

from __future__ import annotations


def one_error_line(capsys) -> str:
    """The CLI's refusal: exactly one ``error: ...`` line on stderr and nothing on stdout. Returns the line."""
    captured = capsys.readouterr()
    lines = captured.err.strip("\n").split("\n")
    assert len(lines) == 1 and lines[0].startswith("error: "), captured.err
    assert captured.out == ""
    return lines[0]
