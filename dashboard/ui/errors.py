"""Errors shown as one line (the user's mistake), bugs shown as bugs, and warnings."""

from __future__ import annotations

from collections.abc import Iterable

import streamlit as st

from isoscope.dashboard.bugs import log_bug
from isoscope.dashboard.text import literal
from isoscope.errors import first_line


def user_error(exc: BaseException | str) -> None:
    """One-line error box for the user's mistake (never a traceback)."""
    st.error(literal(first_line(exc, 10_000)), icon=":material/error:")


def bug_report(exc: BaseException) -> None:
    """A short "this is a bug" box with the traceback in an expander, also logged on the server.

    For anything that is not an ``InputError``: a bug must look like a bug, never like bad input.
    """
    log_bug(exc)
    st.error(
        f"This is a bug in Isoscope, not a problem with your input ({type(exc).__name__}: "
        f"{literal(first_line(exc, 300))}). What you loaded is kept; please report it with the traceback below.",
        icon=":material/bug_report:",
    )
    with st.expander("Traceback"):
        st.exception(exc)


def show_warnings(warnings: Iterable[str]) -> None:
    """One warning box per line of ``warnings`` (user text, shown literally)."""
    for w in warnings:
        st.warning(literal(w), icon=":material/warning:")
