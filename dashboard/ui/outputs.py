"""Outputs with downloads: interactive plotly charts (PNG from the toolbar, standalone HTML) and CSV tables."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from isoscope.data import safe_csv


def download_table(df: pd.DataFrame, name: str, label: str = "Download CSV") -> None:
    """CSV download (formula-like cells neutralised)."""
    st.download_button(
        label,
        data=safe_csv(df),
        file_name=f"{name}.csv",
        mime="text/csv",
        key=f"dl_csv_{name}",
        on_click="ignore",
        icon=":material/download:",
    )


def chart(fig: go.Figure, name: str, selectable: bool = False):
    """An interactive plotly chart (PNG from its toolbar) with a standalone HTML download.

    ``selectable``: lasso/box selection reruns the page; returns the selection event (else None).
    """
    event = st.plotly_chart(
        fig,
        width="stretch",
        key=f"chart_{name}",
        config={"toImageButtonOptions": {"format": "png", "filename": name, "scale": 2}, "displaylogo": False},
        **({"on_select": "rerun", "selection_mode": ("lasso", "box")} if selectable else {}),
    )
    st.download_button(
        "Download HTML",
        data=lambda: fig.to_html(include_plotlyjs=True, full_html=True).encode("utf-8"),
        file_name=f"{name}.html",
        mime="text/html",
        key=f"dl_html_{name}",
        on_click="ignore",
        icon=":material/download:",
    )
    return event if selectable else None


def report_download(key: str, identity: object, build) -> None:
    """A "Build report" button that builds a one-file HTML report (``build() -> bytes``, a cached service) and
    then a "Download report" button; a report built for other data (``identity``) is not offered."""
    state = f"{key}_report"
    if st.button(
        "Build report",
        key=f"{key}_report_build",
        icon=":material/description:",
        help="One self-contained HTML file (opens offline): metrics, spectra, hubness, neighbours, a map.",
    ):
        st.session_state[state] = (identity, build())
    built = st.session_state.get(state)
    if built is not None and built[0] == identity:
        st.download_button(
            "Download report",
            data=built[1],
            file_name=f"isoscope-{key}-report.html",
            mime="text/html",
            key=f"{key}_report_download",
            on_click="ignore",
            icon=":material/download:",
        )
