"""The Neighbours page's tables and figure: one query's neighbours in each space with the places each moved,
the sentences whose neighbourhoods changed most, and the mean overlap per calibrator."""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from pandas.io.formats.style import Styler

from isoscope.data import Corpus

UP, DOWN = "background-color: rgba(46, 160, 67, 0.25)", "background-color: rgba(248, 81, 73, 0.25)"
CHOSEN, OTHERS = "#f58518", "#4c78a8"


def shift_colour(value: object) -> str:
    """Green for a neighbour that moved up or entered the top-k, red for one that moved down or left it."""
    text = str(value)
    if text == "new" or text.startswith("+"):
        return UP
    if text == "dropped" or text.startswith("-"):
        return DOWN
    return ""


def rows_frame(corpus: Corpus, ids: np.ndarray, meta_cols: list[str]) -> pd.DataFrame:
    """text and a few metadata columns of corpus rows ``ids``."""
    table = pd.DataFrame({"text": [corpus.texts[i] for i in ids]})
    for col in meta_cols:
        table[col] = corpus.meta[col].iloc[ids].astype(str).to_numpy()
    return table


def neighbour_table(
    corpus: Corpus,
    meta_cols: list[str],
    ids: np.ndarray,
    *,
    scores: np.ndarray,
    other: np.ndarray,
    k: int,
    space: Literal["raw", "calibrated"],
) -> pd.DataFrame:
    """rank, score, shift, text, metadata and the rank in the other space of a query's top-``k`` ``ids``.

    ``other`` (k,): each neighbour's rank in the other space. shift: places gained under calibration (+ =
    ranked higher after); a raw neighbour past the calibrated top-k is "dropped", a calibrated one past the
    raw top-k "new"."""
    rank = np.arange(1, len(ids) + 1)
    table = rows_frame(corpus, ids, meta_cols)
    table.insert(0, "rank", rank)
    table.insert(1, "score", np.round(scores.astype(np.float64), 4))
    if space == "raw":
        shift = [("dropped" if o > k else f"{r - o:+d}") for r, o in zip(rank, other, strict=True)]
        table.insert(2, "shift", shift)
        table["calibrated rank"] = other
    else:
        table.insert(2, "shift", [("new" if o > k else f"{o - r:+d}") for r, o in zip(rank, other, strict=True)])
        table["raw rank"] = other
    table["shift"] = table["shift"].replace("+0", "0")
    return table


def styled(table: pd.DataFrame) -> Styler:
    """A ``neighbour_table`` with its shifts coloured and scores to 4 decimals."""
    return table.style.map(shift_colour, subset=["shift"]).format({"score": "{:.4f}"})


def changed_table(
    corpus: Corpus, meta_cols: list[str], ids: np.ndarray, *, overlap: np.ndarray, k: int
) -> pd.DataFrame:
    """The sentences ``ids`` whose neighbourhoods changed most: row, text, metadata, overlap@k."""
    table = rows_frame(corpus, ids, meta_cols)
    table.insert(0, "row", ids)
    table[f"overlap@{k}"] = np.round(overlap, 3)
    return table


def overlap_bars(by_method: pd.DataFrame, chosen: str, k: int) -> go.Figure:
    """Mean overlap@k per calibrator (``calibration``, ``mean_overlap`` columns), the page's own in orange."""
    fig = go.Figure(
        go.Bar(
            x=by_method["calibration"],
            y=by_method["mean_overlap"],
            text=by_method["mean_overlap"].round(3),
            textposition="outside",
            marker_color=[OTHERS if m != chosen else CHOSEN for m in by_method["calibration"]],
        )
    )
    fig.update_layout(
        height=340,
        yaxis={"range": [0, 1.08], "title": f"mean overlap@{k}"},
        xaxis_title="calibration",
        margin={"t": 30},
    )
    return fig
