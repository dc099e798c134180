"""User-facing errors: one line that says what to fix."""

from __future__ import annotations


class InputError(ValueError):
    """Bad user input (file, option, model id). Its message is one line, shown as is to the user."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))
