"""Figures and tables of sentence pairs (Sentence pairs and Lexical overlap pages): one scatter panel per
similarity against a per-pair x value (gold score, edit distance), and the pairs whose rank moved most."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from isoscope.dashboard.text import plot_text
from isoscope.data import Pairs
from isoscope.evaluate.similarity import rank_shift


def pair_hover(pairs: Pairs) -> list[str]:
    """Each pair's two sentences as a plotly hover label (escaped, wrapped)."""
    return [plot_text(f"{a}  ||  {b}") for a, b in zip(pairs.sentence1, pairs.sentence2, strict=True)]


def scatter_panels(
    x: np.ndarray,
    panels: Sequence[tuple[str, np.ndarray]],
    hover: Sequence[str],
    *,
    x_title: str,
    hovertemplate: str,
    y_title: str | None = None,
    margin: dict | None = None,
    shared_y: bool = True,
) -> go.Figure:
    """One scatter panel per (title, values (n,)) against ``x`` (n,), side by side; ``hover`` (n,) per pair.

    ``shared_y``: the panels show one quantity (cosines), on one y range titled ``y_title``; otherwise each
    panel has its own range, titled with its name (gold scores next to cosines)."""
    fig = make_subplots(rows=1, cols=len(panels), subplot_titles=[name for name, _ in panels], shared_yaxes=shared_y)
    for i, (name, y) in enumerate(panels, start=1):
        fig.add_trace(
            go.Scattergl(
                x=x,
                y=y,
                mode="markers",
                name=name,
                text=hover,
                hovertemplate=hovertemplate,
                marker={"size": 6, "opacity": 0.6},
            ),
            row=1,
            col=i,
        )
        fig.update_xaxes(title_text=x_title, row=1, col=i)
        if not shared_y:
            fig.update_yaxes(title_text=name, row=1, col=i)
    if shared_y and y_title is not None:
        fig.update_yaxes(title_text=y_title, row=1, col=1)
    fig.update_layout(height=420, showlegend=False, **({"margin": margin} if margin else {}))
    return fig


NUMBER_CHAR_PX = 8  # a column of numbers is as wide as its header: this many pixels a character, plus padding
NUMBER_PAD_PX = 28


def pairs_table(table: pd.DataFrame, variants: Sequence[tuple[str, np.ndarray]]) -> pd.DataFrame:
    """The Sentence pairs table: one "cosine <variant>" column per (label, cosines (n,)) FIRST, then the pairs
    (sentence1, sentence2, score). Issue 41: after two long sentence columns the cosines sat beyond the right
    edge, cut mid-word; numbers first, they stay in view, and the sentences take the room that is left."""
    cosines = pd.DataFrame({f"cosine {label}": np.round(c, 4) for label, c in variants}, index=table.index)
    return pd.concat([cosines, table], axis=1)


def column_widths(frame: pd.DataFrame) -> dict[str, int | str]:
    """A width per column for ``st.column_config``: numbers as wide as their header in pixels, so neither the
    header nor a value is cut; text "large" (the cell shows the rest on hover and in the download)."""
    return {
        str(c): NUMBER_PAD_PX + NUMBER_CHAR_PX * max(len(str(c)), 7)
        if pd.api.types.is_numeric_dtype(frame[c])
        else "large"
        for c in frame.columns
    }


def rank_moves(table: pd.DataFrame, raw: np.ndarray, calibrated: np.ndarray, *, top: int = 10) -> pd.DataFrame:
    """The ``top`` pairs of ``table`` (sentence1, sentence2 columns) whose rank by cosine moved most from
    ``raw`` to ``calibrated`` (n,); positive rank shift: more similar after."""
    moved = table[["sentence1", "sentence2"]].copy()
    moved["cosine raw"] = np.round(raw, 4)
    moved["cosine calibrated"] = np.round(calibrated, 4)
    moved["rank shift"] = rank_shift(raw, calibrated)
    return moved.reindex(moved["rank shift"].abs().sort_values(ascending=False).index).head(top)
