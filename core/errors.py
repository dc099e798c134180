"""User-facing errors: one line that says what to fix."""

from __future__ import annotations


class InputError(ValueError):
    """Bad user input (file, option, model id). Its message is one line, shown as is to the user."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))


def first_line(message: BaseException | str, limit: int = 300) -> str:
    """The first line of an error message (the exception's class name when it is empty), cut to ``limit``."""
    lines = str(message).splitlines()
    line = lines[0] if lines and lines[0].strip() else type(message).__name__
    return line if len(line) <= limit else line[:limit] + "..."
