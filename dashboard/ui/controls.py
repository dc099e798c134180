"""Widget state helpers: a number widget kept in its range, a button that starts a long job, and what the job
will cost, said before it starts."""

from __future__ import annotations

import streamlit as st

from isoscope.costs import Cost

ESTIMATE_PREFIX = "Estimated on this machine:"


def clamp(key: str, low: float, high: float) -> None:
    """Forget a number widget's value that is out of its range (the corpus changed size): back to its default."""
    value = st.session_state.get(key)
    if isinstance(value, int | float) and not low <= value <= high:
        del st.session_state[key]


def run_button(label: str, key: str, request: object, **button: object) -> bool:
    """A button that starts a long job: True from its press until ``request`` changes.

    ``request`` holds everything the job depends on (inputs, settings), so changing any of them waits for a
    new press instead of silently starting the job again.
    """
    if st.button(label, key=key, **button):
        st.session_state[f"{key}_request"] = request
    return st.session_state.get(f"{key}_request") == request


def estimate(cost: Cost, *, device: str | None = None) -> None:
    """One caption with what a run will cost (``isoscope.costs``), shown before its button is pressed when it
    is long (``Cost.long``); nothing for a cheap or a cached run. ``device``: where the run was timed and will run
    (``the CPU``, ``cuda:0``), said when given."""
    if cost.long:
        where = f", on {device}" if device else ""
        st.caption(f":material/schedule: {ESTIMATE_PREFIX} {cost.describe()}{where}.")
