"""isoscope.errors: one-line messages."""

from __future__ import annotations

from isoscope.errors import InputError, first_line


def test_input_error_is_one_line():
    assert str(InputError("a\n  b\tc")) == "a b c"


def test_first_line_cuts_and_names_empty_messages():
    assert first_line(ValueError("first\nsecond")) == "first"
    assert first_line(ValueError("")) == "ValueError"
    assert first_line(OSError("x" * 50), limit=10) == "x" * 10 + "..."
    assert first_line("plain text") == "plain text"
