"""Hostile-input fixtures: the CLI run in-process on the session encoder, AppTest sessions, and a tally.

At the end of the session a line reports how many hostile cases (tests under tests/hostile) were tried
and how many passed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest
from streamlit.testing.v1 import AppTest

from tests.dashboard.conftest import APP

_outcomes: dict[str, str] = {}  # nodeid -> passed / failed / skipped / xfailed


def _is_hostile(nodeid: str) -> bool:
    return nodeid.replace("\\", "/").split("::")[0].startswith("tests/hostile/")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if not _is_hostile(report.nodeid):
        return
    if report.failed:
        _outcomes[report.nodeid] = "failed"  # a failing setup, call or teardown fails the case
    elif report.skipped and _outcomes.get(report.nodeid) != "failed":
        _outcomes[report.nodeid] = "xfailed" if hasattr(report, "wasxfail") else "skipped"
    elif report.when == "call" and report.passed and report.nodeid not in _outcomes:
        _outcomes[report.nodeid] = "passed"


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    if not _outcomes:
        return
    counts = {k: sum(1 for v in _outcomes.values() if v == k) for k in ("passed", "failed", "skipped", "xfailed")}
    tried = counts["passed"] + counts["failed"]
    extra = ", ".join(f"{v} {k}" for k, v in counts.items() if k in ("skipped", "xfailed") and v)
    terminalreporter.write_sep(
        "=", f"hostile input: {tried} cases tried, {counts['passed']} passed" + (f" ({extra})" if extra else "")
    )


# ---------------------------------------------------------------- messages


def assert_one_line(message: str) -> None:
    """A user-facing message: non-empty, one line, short, no traceback."""
    assert message.strip(), "empty message"
    assert "\n" not in message.strip(), f"message spans lines: {message!r}"
    assert "Traceback" not in message
    assert len(message) < 500, f"message too long ({len(message)} chars)"


# ---------------------------------------------------------------- CLI in-process


@dataclass
class CliResult:
    code: int
    out: str
    err: str

    @property
    def err_lines(self) -> list[str]:
        return [x for x in self.err.splitlines() if x.strip()]


@pytest.fixture()
def cli(cli_main, capsys) -> Callable[..., CliResult]:
    """``cli("sts", "--pairs", path)`` runs ``isoscope.cli.main`` in-process on the session encoder."""

    def run(*argv: str) -> CliResult:
        capsys.readouterr()
        try:
            code = cli_main([*argv, "--quiet"] if argv and argv[0] in ("sts", "embed") else list(argv))
        except SystemExit as exc:  # argparse's usage errors (one line, status 2), as a process would exit
            code = exc.code
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return run


def assert_cli_refused(result: CliResult, *fragments: str) -> str:
    """Exit status 2, exactly one line on stderr (with every fragment), nothing on stdout."""
    assert result.code == 2, f"exit {result.code}, stderr {result.err!r}"
    assert len(result.err_lines) == 1, f"stderr should be one line, got {result.err!r}"
    line = result.err_lines[0]
    assert line.startswith("error: ")
    assert_one_line(line)
    for f in fragments:
        assert f.lower() in line.lower(), f"{f!r} not in {line!r}"
    assert result.out == ""
    return line


# ---------------------------------------------------------------- AppTest


def new_app() -> AppTest:
    """A fresh app session on the home page (the model is cached across sessions in-process)."""
    at = AppTest.from_file(APP, default_timeout=600)
    at.run()
    assert not at.exception, at.exception
    return at


def app_errors(at: AppTest) -> list[str]:
    return [e.value for e in at.error]


def assert_app_refused(at: AppTest, *fragments: str) -> str:
    """No exception, exactly one st.error, on one line, containing the fragments (Markdown escapes removed)."""
    assert not at.exception, at.exception[0].value if at.exception else ""
    errors = app_errors(at)
    assert len(errors) == 1, f"expected one error, got {errors}"
    msg = errors[0]
    assert_one_line(msg)
    plain = msg.replace("\\", "")
    for f in fragments:
        assert f.lower() in plain.lower(), f"{f!r} not in {plain!r}"
    return plain
