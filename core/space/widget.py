"""The map widget: every point of a space on a WebGL scatter (jupyter-scatter: anywidget + regl-scatterplot),
hover shows the text, colour by a metadata column or a measure, and the lasso/box selection read back in Python.

m = space.map(color="topic")          # shows in Jupyter, VS Code, Colab, marimo; nothing loads from a CDN
m.selection                           # (s,) int64 row ids of the space, as selected with the mouse
m.observe(lambda rows: print(rows))   # called with the row ids whenever the selection changes
m.selected()                          # the selected rows as a new Space

jupyter-scatter ships its JavaScript inside its wheel (``jscatter/bundle.js``, loaded by anywidget from the
kernel), draws every point (1M drew in 45 s in software WebGL, ``bench/widget.py``), and keeps the data frame
in Python: a hover asks the kernel for that one point's text, so texts never travel to the page in bulk. User text reaches the page only as text
(the widget sets ``textContent``); titles are escaped here. Embedding Atlas's widget was the alternative: it
needs WebGPU (not in headless or older browsers) and a much heavier dependency tree.

Drawing cost (``bench/widget.py``, software WebGL): every frame regl-scatterplot clears and composites a
framebuffer the size of the browser window, whatever the number of points, then draws the points. Big maps
therefore draw lean (``render_options``): from ``LEAN_ROWS`` points 1-pixel points at one opacity (no
density-dependent opacity, which queries the points in view after every move), from ``SQUARE_ROWS`` also
regl-scatterplot's ``performanceMode`` (square points, no alpha blending).

Colours: a metadata column (categories or a scale, ``isoscope.space.figures.meta_colours``), or ``norm`` (L2 norm
of each vector), ``length`` (characters of the text), ``hubness`` (k-occurrence N_k of the k-NN graph,
``isoscope.comparison.hubness``), ``overlap`` (Jaccard of each text's k neighbours here and in ``other``,
``isoscope.neighbours.overlap``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from isoscope.errors import InputError
from isoscope.space.html import esc

if TYPE_CHECKING:
    import pandas as pd

    from isoscope.space.comparison import Comparison
    from isoscope.space.space import Space

INSTALL_HINT = 'the map widget needs the notebook extras: pip install "isoscope[notebook]"'
MEASURES: tuple[str, ...] = ("norm", "length", "hubness", "overlap")
AUTO_UMAP_ROWS = 50_000  # method="auto": UMAP up to this many points, PCA (instant) beyond
PREVIEW_CHARS = 600  # hover text is cut here
BUTTONS = ["pan_zoom", "lasso", "divider", "full_screen", "download", "reset"]
LEAN_ROWS = 100_000  # from here: 1-px points at one opacity
SQUARE_ROWS = 500_000  # from here also square points without alpha blending (regl-scatterplot's performanceMode)
FLAT_OPACITY = 0.66  # jupyter-scatter's default opacity, kept when the density-dependent one is switched off


def jscatter() -> Any:
    """The ``jscatter`` module (jupyter-scatter), or an InputError saying what to install."""
    try:
        import jscatter as module
    except ImportError:
        raise InputError(INSTALL_HINT) from None
    return module


def colour_values(space: Space, color: str | None, other: Space | None = None, *, k: int = 10):
    """(values (n,) or None, name, categorical) for ``color`` (module docstring); InputError for an unknown one."""
    from isoscope.space.figures import meta_colours

    if color is None:
        return None, "", False
    if color in space.metadata.columns:
        values, categorical = meta_colours(space.metadata[color])
        return values, str(color), categorical
    if color == "norm":
        return np.linalg.norm(space.vectors.astype(np.float64), axis=1), "norm", False
    if color == "length":
        if space.texts is None:
            raise InputError("color='length' needs the space's texts")
        return np.array([len(t) for t in space.texts], np.float64), "length", False
    if color == "hubness":
        from isoscope.comparison import hubness
        from isoscope.neighbours.exact import knn_table

        ids, _ = knn_table(space.vectors, k)
        return hubness(ids).k_occurrence.astype(np.float64), f"N_{k} (hubness)", False
    if color == "overlap":
        if other is None or len(other) != len(space):
            raise InputError("color='overlap' needs other=: a space of the same texts to compare neighbours with")
        from isoscope.neighbours.overlap import neighbour_overlap

        return neighbour_overlap(space.vectors, other.vectors, k).overlap, f"overlap@{k}", False
    columns = ", ".join(map(str, space.metadata.columns)) or "none"
    raise InputError(f"unknown color '{color}'; use a metadata column ({columns}) or one of {', '.join(MEASURES)}")


def _frame(space: Space, xy: np.ndarray, rows: np.ndarray, colour: np.ndarray | None, name: str) -> pd.DataFrame:
    """The data frame the widget keeps in Python: x, y, the row id, the (cut) text and the colour column."""
    import pandas as pd

    frame = pd.DataFrame({"x": xy[:, 0], "y": xy[:, 1], "row": rows})
    texts = space.texts
    frame["text"] = [texts[i][:PREVIEW_CHARS] for i in rows] if texts is not None else [f"row {i}" for i in rows]
    if colour is not None:
        frame[name] = colour[rows]
    return frame


@dataclass(frozen=True)
class RenderOptions:
    """How the points of a map are drawn (see the module docstring): size in pixels, opacity by the density of
    the points in view (jupyter-scatter's default) or one ``FLAT_OPACITY``, regl-scatterplot's performanceMode."""

    point_size: float
    density_opacity: bool
    performance_mode: bool


def render_options(n: int, point_size: float | None = None) -> RenderOptions:
    """The drawing options of a map of ``n`` points; ``point_size`` overrides the size chosen for ``n``."""
    return RenderOptions(
        point_size=float(point_size or _point_size(n)),
        density_opacity=n < LEAN_ROWS,
        performance_mode=n >= SQUARE_ROWS,
    )


def _scatter(frame: pd.DataFrame, colour_name: str, categorical: bool, height: int, size: float | None) -> Any:
    js = jscatter()
    scatter = js.Scatter(x="x", y="y", data=frame, height=height, axes=False, lasso_initiator=False)
    drawing = render_options(len(frame), size)
    scatter.size(default=drawing.point_size)
    if not drawing.density_opacity:
        scatter.opacity(default=FLAT_OPACITY, by=None)
    if drawing.performance_mode:  # read when the page creates the scatterplot
        scatter.options(regl_scatterplot_options={"performanceMode": True})
    if colour_name:
        scatter.color(by=colour_name, map="auto" if categorical else "viridis")
        scatter.legend(True)
    properties = [colour_name] if colour_name else []
    scatter.tooltip(True, properties=properties, preview="text", preview_type="text", preview_text_lines=6)
    return scatter


def _point_size(n: int) -> float:
    return 6.0 if n <= 2_000 else 4.0 if n <= 20_000 else 2.0 if n < LEAN_ROWS else 1.0


class SpaceMap:
    """A map widget of a space (jupyter-scatter's ``Scatter``); displays itself in a notebook.

    ``selection`` is the selected row ids of the space (int64, in the order of the rows), settable;
    ``observe(callback)`` calls ``callback(row_ids)`` on every change; ``selected()`` is them as a Space.
    """

    def __init__(self, scatter: Any, space: Space, rows: np.ndarray) -> None:
        self.scatter = scatter
        self.space = space
        self.rows = np.asarray(rows, np.int64)  # (m,) row id of each point
        self._positions = None if np.array_equal(self.rows, np.arange(len(space))) else self.rows

    @property
    def widget(self) -> Any:
        """The anywidget (``jscatter.widget.JupyterScatter``) with its traitlets (``selection``, ``hovering``, ...)."""
        return self.scatter.widget

    @property
    def selection(self) -> np.ndarray:
        points = self.widget.selection
        if points is None:
            return np.zeros(0, np.int64)
        return np.sort(self.rows[np.asarray(points, np.int64)])

    @selection.setter
    def selection(self, rows: Any) -> None:
        wanted = np.asarray(rows if rows is not None else [], np.int64)
        points = np.flatnonzero(np.isin(self.rows, wanted))
        self.scatter.selection(points if len(points) else None)

    def observe(self, callback: Callable[[np.ndarray], None]) -> Callable[[Any], None]:
        """Call ``callback(row_ids)`` whenever the selection changes; returns the handler (to ``unobserve``)."""

        def handler(_change: Any) -> None:
            callback(self.selection)

        self.widget.observe(handler, names="selection")
        return handler

    def unobserve(self, handler: Callable[[Any], None]) -> None:
        self.widget.unobserve(handler, names="selection")

    def selected(self) -> Space:
        """The selected rows as a new space (texts, metadata and the way to embed new texts kept)."""
        return self.space[self.selection]

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.scatter.widget.show(BUTTONS)._repr_mimebundle_(**kwargs)

    def __repr__(self) -> str:
        return f"SpaceMap({self.space.name!r}, {len(self.rows):,} points, {len(self.selection):,} selected)"


def _coordinates(space: Space, method: str, coords: Any, seed: int) -> np.ndarray:
    from isoscope.space.results import Projection

    if coords is not None:
        if isinstance(coords, Projection):
            if len(coords.rows) != len(space):
                raise InputError("coords: a projection of a sample; project every row (max_points=None) for the map")
            coords = coords.coords
        xy = np.asarray(coords, np.float32)
        if xy.shape != (len(space), 2):
            raise InputError(f"coords must have shape ({len(space)}, 2), got {xy.shape}")
        return xy
    if method == "auto":
        method = "umap" if len(space) <= AUTO_UMAP_ROWS else "pca"
    return space.project(method, n_components=2, seed=seed).coords


def space_map(
    space: Space,
    color: str | None = None,
    *,
    method: str = "auto",
    coords: Any = None,
    other: Space | None = None,
    k: int = 10,
    height: int = 480,
    point_size: float | None = None,
    seed: int = 0,
) -> SpaceMap:
    """Every point of ``space`` on a 2-D map (``method``: auto, umap, pca, tsne; or ``coords`` (n, 2) / a
    ``Projection``), coloured by ``color`` (a metadata column, or norm, length, hubness, overlap with ``other``)."""
    jscatter()  # the one-line hint before any work
    xy = _coordinates(space, method, coords, seed)  # (n, 2)
    values, name, categorical = colour_values(space, color, other, k=k)
    rows = np.arange(len(space), dtype=np.int64)
    frame = _frame(space, xy, rows, values, name)
    return SpaceMap(_scatter(frame, name, categorical, height, point_size), space, rows)


class LinkedMaps:
    """Two aligned maps side by side (A, and B rotated onto A), selection and hover linked point by point.

    ``selection`` is the selected row ids (the same in both), ``a`` and ``b`` the two ``SpaceMap`` objects.
    """

    def __init__(self, a: SpaceMap, b: SpaceMap, grid: Any) -> None:
        self.a, self.b, self.grid = a, b, grid

    @property
    def selection(self) -> np.ndarray:
        return np.union1d(self.a.selection, self.b.selection)

    def observe(self, callback: Callable[[np.ndarray], None]) -> Callable[[Any], None]:
        return self.a.observe(callback)

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.grid._repr_mimebundle_(**kwargs)


def comparison_maps(
    comparison: Comparison, color: str | None = "overlap", *, height: int = 420, point_size: float | None = None
) -> LinkedMaps:
    """``comparison``'s Procrustes-aligned 2-D maps (``isoscope.comparison.aligned_maps``) side by side, linked;
    colour ``overlap`` (each text's overlap@k), a metadata column of A, or another measure of each space."""
    js = jscatter()
    maps = comparison.measured.maps
    if maps is None:
        raise InputError("this comparison has no maps; compare with map='pca' or 'umap'")
    rows = np.asarray(maps.rows, np.int64)  # (m,)
    both = np.vstack([maps.a, maps.b])
    pad = 0.05 * (both.max(axis=0) - both.min(axis=0) + 1e-12)
    lo, hi = both.min(axis=0) - pad, both.max(axis=0) + pad
    out = []
    for space, xy in ((comparison.a, maps.a), (comparison.b, maps.b)):
        if color == "overlap":
            values, name, categorical = comparison.overlap, f"overlap@{comparison.k}", False
        else:
            values, name, categorical = colour_values(space, color, None, k=comparison.k)
        scatter = _scatter(_frame(space, np.asarray(xy), rows, values, name), name, categorical, height, point_size)
        scatter.x("x", scale=(float(lo[0]), float(hi[0])))
        scatter.y("y", scale=(float(lo[1]), float(hi[1])))
        out.append(SpaceMap(scatter, space, rows))
    titles = [f"A: {comparison.a.name} ({comparison.a.label})", f"B aligned onto A: {comparison.b.label}"]
    grid = js.compose(
        [(m.scatter, esc(t)) for m, t in zip(out, titles, strict=True)],
        sync_selection=True,
        sync_hover=True,
        row_height=height + 40,
    )
    return LinkedMaps(out[0], out[1], grid)
