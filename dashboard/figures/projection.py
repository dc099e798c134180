"""The Projection map page's figures: a 2-D or 3-D map of a sample of the corpus, coloured by a column or a
measure, with search hits ringed, and the corpus rows a lasso or box selection picked on it."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from isoscope.space.figures import MAX_CATEGORIES, SMALL_PALETTE, category_palette, meta_colours
from isoscope.space.figures import projection_map as map_figure

__all__ = ["MAX_CATEGORIES", "SMALL_PALETTE", "category_palette", "map_figure", "meta_colours", "selected_rows"]


def selected_rows(fig: go.Figure, event: object) -> set[int]:
    """The corpus rows a lasso/box ``event`` of ``st.plotly_chart`` selected on ``fig`` (rows in customdata)."""
    selected: set[int] = set()
    for point in (event or {}).get("selection", {}).get("points", []):
        # (trace, index in trace) -> the corpus row kept in that trace's customdata
        curve, index = point.get("curve_number"), point.get("point_index", point.get("point_number"))
        if isinstance(curve, int) and isinstance(index, int) and 0 <= curve < len(fig.data):
            rows = fig.data[curve].customdata
            if rows is not None and 0 <= index < len(rows):
                selected.add(int(np.ravel(rows[index])[0]))
    return selected
