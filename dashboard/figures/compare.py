"""The Compare spaces page's figures and tables: the layer x layer CKA heatmap, the overlap histogram,
both neighbour lists of a text, the two aligned maps, the hubness table and the downloads.

Every function takes what it shows as arguments: ``texts`` are the distinct texts compared (positions in
it are what the report's rows and neighbour ids mean), ``rows`` (m,) the texts drawn on the maps.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from isoscope.comparison import ComparisonMetrics
from isoscope.sources.spec import SpaceSpec
from isoscope.space.figures import aligned_map as map_figure
from isoscope.space.figures import heatmap, map_ranges, overlap_histogram, panel_ranges

__all__ = [
    "describe",
    "distinct",
    "heatmap",
    "hubness_table",
    "map_figure",
    "map_ranges",
    "maps_table",
    "matrix_table",
    "most_changed_table",
    "neighbour_list",
    "overlap_histogram",
    "panel_ranges",
    "per_text_table",
]

Ranges = tuple[tuple[float, float], tuple[float, float]]  # (x0, x1), (y0, y1)


def distinct(texts: Sequence[str]) -> np.ndarray:
    """Positions (m,) int64 of the first occurrence of every distinct text, in order (repeats are compared once)."""
    seen: dict[str, int] = {}
    for i, t in enumerate(texts):
        seen.setdefault(t, i)
    return np.array(sorted(seen.values()), dtype=np.int64)


def describe(name: str, spec: SpaceSpec) -> str:
    """One line naming a space: encoder (or vectors file), random init, pooling, calibration."""
    random = ", random init" if spec.init == "random" else ""
    pooling = "vectors file" if spec.kind == "vectors" else spec.pooling.name if spec.pooling else "default pooling"
    cal = "" if spec.calibrate == "none" else f", {spec.calibrate}"
    return f"{name}{random} · {pooling}{cal}"


HUB_SKEWNESS = 3.0  # k-occurrence skewness above this: hubs (a few texts are many texts' neighbour)


def _hubs(skewness: float) -> str:
    return "strong hubs" if skewness > HUB_SKEWNESS else "no strong hubs"


def plain_summary(report: ComparisonMetrics) -> str:
    """What the headline numbers mean, in one paragraph built from them (issue 26: the page was 5,000 px of
    numbers with no reading): neighbours kept, CKA, hubs on each side."""
    k, kept = report.overlap.k, report.overlap_at_k
    cka, debiased = report.cka_linear, report.cka_debiased
    geometry = (
        "nearly the same geometry (up to rotation and scale)"
        if cka > 0.9
        else "a related geometry"
        if cka > 0.5
        else "a largely different geometry"
    )
    a, b = report.hubness_a.skewness, report.hubness_b.skewness
    return (
        f"These two spaces share {kept:.0%} of each text's {k} nearest neighbours (Jaccard overlap@{k}). "
        f"CKA says {cka:.2f} (debiased {debiased:.2f}): {geometry}. "
        f"Hubs: A has {_hubs(a)} (skewness {a:.1f}), B has {_hubs(b)} (skewness {b:.1f})."
    )


def matrix_table(matrix: np.ndarray, rows: list[str], cols: list[str]) -> pd.DataFrame:
    """``heatmap``'s numbers as a table: one row per layer of A, one column per layer of B."""
    return pd.DataFrame(
        matrix, index=pd.Index([f"A {r}" for r in rows], name="layer"), columns=[f"B {c}" for c in cols]
    ).reset_index()


def most_changed_table(
    report: ComparisonMetrics, texts: Sequence[str], keep: np.ndarray, moved: np.ndarray
) -> pd.DataFrame:
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


def per_text_table(report: ComparisonMetrics, texts: Sequence[str], keep: np.ndarray) -> pd.DataFrame:
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


def maps_table(report: ComparisonMetrics, texts: Sequence[str], keep: np.ndarray) -> pd.DataFrame:
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


def hubness_table(report: ComparisonMetrics, labels: tuple[str, str], texts: Sequence[str]) -> pd.DataFrame:
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
