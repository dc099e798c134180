"""Checks shared by the CLI tests."""

from __future__ import annotations


def one_error_line(capsys) -> str:
    """The CLI's refusal: stderr is exactly one ``error: ...`` line (one newline, at the end) and stdout is empty.

    Returns the line without its newline.
    """
    captured = capsys.readouterr()
    err = captured.err
    assert err.startswith("error: ") and err.endswith("\n") and err.count("\n") == 1, err
    assert captured.out == ""
    return err[:-1]


def exit_status(cli, argv: list[str]) -> int:
    """The exit status of ``isoscope ARGV`` run in-process: what ``main`` returns, or the status of the
    ``SystemExit`` argparse raises for a usage error (a bad choice, a pooling name that does not parse)."""
    try:
        return cli(argv)
    except SystemExit as exc:
        return exc.code
