"""The Projection map page's figures: a 2-D or 3-D map of a sample of the corpus, coloured by a column or a
measure, with search hits ringed, and the corpus rows a lasso or box selection picked on it; how well a map keeps
its categories together (``map_purity``), which chose the page's default method (``DEFAULT_METHOD``)."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from isoscope.space.figures import MAX_CATEGORIES, SMALL_PALETTE, category_palette, meta_colours
from isoscope.space.figures import projection_map as map_figure

__all__ = [
    "DEFAULT_METHOD",
    "MAX_CATEGORIES",
    "PURITY_K",
    "SMALL_PALETTE",
    "category_palette",
    "map_figure",
    "map_purity",
    "meta_colours",
    "selected_rows",
]

# The map the page opens on (issue 41): on the demo corpus (mean pooling, 3,000 points) 10-NN topic purity is
# 0.46 on UMAP's 2-D map and 0.08 on PCA's (chance 0.03): PCA's two directions of largest variance are not the
# topics, so its map looked like one blob. tests/dashboard/test_projection.py measures it again.
DEFAULT_METHOD = "UMAP"
PURITY_K = 10


def map_purity(coords: np.ndarray, labels: np.ndarray, k: int = PURITY_K) -> float:
    """The share of each point's ``k`` nearest neighbours on the map ``coords`` (m, c) with its own label
    (``labels`` (m,)): 1 = every category drawn apart, the share of the largest categories = no structure."""
    from sklearn.neighbors import NearestNeighbors

    k = min(k, len(coords) - 1)
    nearest = NearestNeighbors(n_neighbors=k + 1).fit(coords).kneighbors(coords, return_distance=False)[:, 1:]
    labels = np.asarray(labels)
    return float((labels[nearest] == labels[:, None]).mean())


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
