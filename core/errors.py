"""User-facing errors: one line that says what to fix, with nothing in it a terminal would act on."""

from __future__ import annotations

import re

# C0 and C1 controls (ESC starts terminal sequences), lone surrogates (a file name that is not UTF-8), and the
# bidirectional overrides and isolates that reorder how the rest of a line is shown
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escape(m: re.Match[str]) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def printable(text: object) -> str:
    """``text`` with every control character escaped (``\\x1b``, ``\\u202e``): safe to print or show, and
    idempotent. Every message that echoes a name (a file, a column, a model) goes through here."""
    return _UNSAFE.sub(_escape, str(text))


class InputError(ValueError):
    """Bad user input (file, option, model id). Its message is one line, shown as is to the user."""

    def __init__(self, message: str) -> None:
        super().__init__(printable(" ".join(str(message).split())))


def first_line(message: BaseException | str, limit: int = 300) -> str:
    """The first line of an error message (the exception's class name when it is empty), cut to ``limit``."""
    lines = str(message).splitlines()
    line = lines[0] if lines and lines[0].strip() else type(message).__name__
    return line if len(line) <= limit else line[:limit] + "..."


class DiskFull(OSError):
    """Not enough free space for a file about to be written: "disk full: N MB needed at PATH". An ``OSError``
    (the command line's exit status 2 and one line), raised before the bytes are written, or in place of the
    ``ENOSPC`` of a write."""

    def __init__(self, needed: int, path: object) -> None:
        import errno

        self.needed, self.path = int(needed), str(path)
        super().__init__(errno.ENOSPC, f"disk full: {max(1, -(-self.needed // 10**6)):,} MB needed at {self.path}")

    def __reduce__(self):  # rebuilt from (needed, path) in the process that receives it (layout workers)
        return DiskFull, (self.needed, self.path)
