"""The Compare spaces page's figures and tables: the layer x layer CKA heatmap, the overlap histogram,
both neighbour lists of a text, the two aligned maps, the hubness table and the downloads.

Every function takes what it shows as arguments: ``texts`` are the distinct texts compared (positions in
it are what the report's rows and neighbour ids mean), ``rows`` (m,) the texts drawn on the maps.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from isoscope.compare import Comparison
from isoscope.dashboard.text import plot_text

Ranges = tuple[tuple[float, float], tuple[float, float]]  # (x0, x1), (y0, y1)


def distinct(texts: Sequence[str]) -> np.ndarray:
    """Positions (m,) int64 of the first occurrence of every distinct text, in order (repeats are compared once)."""
    seen: dict[str, int] = {}
    for i, t in enumerate(texts):
        seen.setdefault(t, i)
    return np.array(sorted(seen.values()), dtype=np.int64)


def describe(name: str, init: str, pooling: str, calibration: str) -> str:
    """One line naming a space: encoder, random init, pooling, calibration."""
    random = ", random init" if init == "random" else ""
    cal = "" if calibration == "none" else f", {calibration}"
    return f"{name}{random} · {pooling}{cal}"


def heatmap(matrix: np.ndarray, rows: list[str], cols: list[str], title: str) -> go.Figure:
    """``matrix`` (len(rows), len(cols)) with its values written in the cells; A down, B across."""
    fig = go.Figure(
        go.Heatmap(
            z=matrix,
            x=[f"B {c}" for c in cols],
            y=[f"A {r}" for r in rows],
            zmin=0 if np.nanmin(matrix) >= 0 else None,
            zmax=1,
            colorscale="Viridis",
            text=np.round(matrix, 2),
            texttemplate="%{text}",
            hovertemplate="%{y} × %{x}: %{z:.3f}<extra></extra>",
        )
    )
    fig.update_layout(title={"text": title}, height=460, margin={"t": 50}, yaxis={"autorange": "reversed"})
    return fig


def matrix_table(matrix: np.ndarray, rows: list[str], cols: list[str]) -> pd.DataFrame:
    """``heatmap``'s numbers as a table: one row per layer of A, one column per layer of B."""
    return pd.DataFrame(
        matrix, index=pd.Index([f"A {r}" for r in rows], name="layer"), columns=[f"B {c}" for c in cols]
    ).reset_index()


def overlap_histogram(report: Comparison) -> go.Figure:
    """How many texts share 0..k of their k neighbours in A and in B (bars, labelled with the Jaccard)."""
    hist = report.overlap.histogram()
    fig = go.Figure(
        go.Bar(
            x=[f"{r.shared} ({r.jaccard:.2f})" for r in hist.itertuples()],
            y=hist["texts"],
            text=hist["texts"],
            textposition="outside",
        )
    )
    fig.update_layout(
        height=320,
        margin={"t": 30},
        xaxis_title=f"neighbours shared of {report.overlap.k} (Jaccard)",
        yaxis_title="texts",
    )
    return fig


def most_changed_table(report: Comparison, texts: Sequence[str], keep: np.ndarray, moved: np.ndarray) -> pd.DataFrame:
    """The texts at positions ``moved``: corpus row (``keep`` maps positions to rows), overlap, shared, text."""
    return pd.DataFrame(
        {
            "row": keep[moved],
            "overlap": np.round(report.overlap.overlap[moved], 3),
            "shared": report.overlap.shared[moved],
            "text": [texts[i] for i in moved],
        }
    )


def neighbour_list(texts: Sequence[str], ids: np.ndarray, scores: np.ndarray, other: np.ndarray) -> pd.DataFrame:
    """One side's neighbours of a text: rank, text, cosine, and whether the other side has it too."""
    return pd.DataFrame(
        {
            "rank": np.arange(1, len(ids) + 1),
            "text": [texts[i] for i in ids],
            "cosine": np.round(scores.astype(np.float64), 4),
            "in both": np.isin(ids, other),
        }
    )


def per_text_table(report: Comparison, texts: Sequence[str], keep: np.ndarray) -> pd.DataFrame:
    """The per-text download: id, text, overlap, shared neighbours, k-occurrence in A and in B, corpus row."""
    return pd.DataFrame(
        {
            "id": np.arange(report.n),
            "text": np.asarray(texts, dtype=object),
            "overlap": report.overlap.overlap,
            "shared": report.overlap.shared,
            "k_occurrence_a": report.hubness_a.k_occurrence,
            "k_occurrence_b": report.hubness_b.k_occurrence,
            "row": keep[np.arange(report.n)],
        }
    )


def map_ranges(a: np.ndarray, b: np.ndarray) -> list[list[float]]:
    """One x and one y range covering both maps (m, 2), with a 5% margin, so they compare point by point."""
    both = np.vstack([a, b])  # (2m, 2)
    pad = 0.05 * (both.max(axis=0) - both.min(axis=0) + 1e-12)
    return [[both[:, j].min() - pad[j], both[:, j].max() + pad[j]] for j in (0, 1)]


def map_figure(
    xy: np.ndarray,
    hover: Sequence[str],
    title: str,
    colour: np.ndarray,
    categorical: bool,
    k: int,
    ranges: list[list[float]],
    lines: np.ndarray | None = None,
) -> go.Figure:
    """Scattergl of a map ``xy`` (m, 2), ``hover`` (m,) already safe for plotly (``text.plot_text``).

    ``colour`` (m,): categories (``categorical``) or each text's overlap@``k`` in [0, 1]; ``lines`` (m, 2)
    draws each point's displacement from there."""
    hover = np.asarray(hover, dtype=object)
    fig = go.Figure()
    if lines is not None:
        seg = np.full((3 * len(xy), 2), np.nan)  # (3m, 2): start, end, gap
        seg[0::3], seg[1::3] = lines, xy
        fig.add_trace(
            go.Scattergl(
                x=seg[:, 0],
                y=seg[:, 1],
                mode="lines",
                line={"width": 0.7, "color": "rgba(120,120,120,0.5)"},
                hoverinfo="skip",
                name="A → B",
            )
        )
    if categorical:
        for cat in sorted(set(colour.tolist())):
            mask = colour == cat
            fig.add_trace(
                go.Scattergl(
                    x=xy[mask, 0],
                    y=xy[mask, 1],
                    mode="markers",
                    name=plot_text(cat, 40),
                    text=hover[mask],
                    hovertemplate="%{text}<extra>%{fullData.name}</extra>",
                    marker={"size": 6, "opacity": 0.85},
                )
            )
    else:
        fig.add_trace(
            go.Scattergl(
                x=xy[:, 0],
                y=xy[:, 1],
                mode="markers",
                name="texts",
                text=hover,
                customdata=colour,
                hovertemplate=f"%{{text}}<br>overlap@{k} %{{customdata:.2f}}<extra></extra>",
                marker={
                    "size": 6,
                    "opacity": 0.85,
                    "color": colour,
                    "colorscale": "RdYlGn",
                    "cmin": 0,
                    "cmax": 1,
                    "showscale": True,
                    "colorbar": {"title": {"text": f"overlap@{k}"}},
                },
            )
        )
    fig.update_layout(
        title={"text": title},
        height=520,
        margin={"t": 50, "l": 10, "r": 10, "b": 10},
        xaxis={"range": ranges[0], "showticklabels": False},
        yaxis={"range": ranges[1], "showticklabels": False},
        legend={"itemsizing": "constant"},
    )
    return fig


def maps_table(report: Comparison, texts: Sequence[str], keep: np.ndarray) -> pd.DataFrame:
    """The maps' download: corpus row, text, both maps' coordinates and the overlap of every drawn text."""
    maps, rows = report.maps, report.maps.rows
    return pd.DataFrame(
        {
            "row": keep[rows],
            "text": [texts[i] for i in rows],
            "a_x": maps.a[:, 0],
            "a_y": maps.a[:, 1],
            "b_x": maps.b[:, 0],
            "b_y": maps.b[:, 1],
            "overlap": report.overlap.overlap[rows],
        }
    )


def hubness_table(report: Comparison, labels: tuple[str, str], texts: Sequence[str]) -> pd.DataFrame:
    """One row per space: skewness of the k-occurrence, anti-hub share, the largest N_k and the top hub."""
    rows = []
    for side, h, label in (("A", report.hubness_a, labels[0]), ("B", report.hubness_b, labels[1])):
        top = h.top(1)
        rows.append(
            {
                "space": side,
                "description": label,
                "skewness": round(h.skewness, 3),
                "anti-hub share": round(h.antihub_share, 3),
                "max N_k": h.max_occurrence,
                "top hub": texts[int(top[0])] if len(top) else "",
            }
        )
    return pd.DataFrame(rows)
