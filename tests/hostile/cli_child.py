"""Hostile command lines run in a child process (``tests.hostile.peak.child_peak``: its address space capped, its
peak resident memory measured), several in one child so torch is imported once: each one's exit status and what
it printed on stderr, and the child's peak memory over all of them (an upper bound for each).

A case that would hang (a FIFO read to its end) is cut by the child's timeout and fails the test instead of
stalling the session, which is why FIFO cases run here rather than in-process.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from tests.hostile.conftest import assert_one_line
from tests.hostile.peak import child_peak

CHILD = """
import contextlib, io, json, sys
from isoscope.cli import main
out = []
for argv in json.loads(sys.argv[2]):
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code
    out.append([code, err.getvalue()])
sys.stderr.write("\\nRESULTS " + json.dumps(out) + "\\n")
"""


@dataclass
class ChildRun:
    results: list[tuple[int, str]]  # (exit status, stderr) per command line, in order
    peak: int  # bytes: the child's peak resident memory over all of them


def run_cli_child(argvs: list[list[str]], tmp_path: Path, *, timeout: float = 300) -> ChildRun:
    """``isoscope.cli.main(argv)`` for each of ``argvs`` in one child process."""
    code, err, peak = child_peak([CHILD, json.dumps(argvs)], tmp_path, timeout=timeout)
    assert code == 0 and "RESULTS " in err, err[-3000:]
    results = json.loads(err.rsplit("RESULTS ", 1)[1])
    return ChildRun([(int(c), e) for c, e in results], peak)


def assert_refused(result: tuple[int, str], *fragments: str) -> str:
    """Exit status 2 and exactly one ``error: ...`` line on stderr holding every fragment; returns the line."""
    code, err = result
    lines = [x for x in err.splitlines() if x.strip()]
    assert code == 2, f"exit {code}, stderr {err[-2000:]!r}"
    assert len(lines) == 1 and lines[0].startswith("error: "), f"stderr should be one error line: {err[-2000:]!r}"
    assert_one_line(lines[0])
    for f in fragments:
        assert f.lower() in lines[0].lower(), f"{f!r} not in {lines[0]!r}"
    return lines[0]


def snapshot(folder: Path) -> dict[str, str]:
    """What a user's folder holds, to compare before and after a refusal: each entry's relative path -> the
    SHA-256 of a regular file, the target of a link, or the kind of anything else (a FIFO is never opened)."""
    out = {}
    for path in sorted(folder.rglob("*")):
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            out[path.relative_to(folder).as_posix()] = "link to " + os.readlink(path)
        elif stat.S_ISREG(st.st_mode):
            out[path.relative_to(folder).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            out[path.relative_to(folder).as_posix()] = stat.filemode(st.st_mode)
    return out
