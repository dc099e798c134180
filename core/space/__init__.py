"""Isoscope in a notebook: a space you hold, its measures as methods, cards, a map widget and a one-file report.

import isoscope
space = isoscope.embed(texts)                      # or isoscope.Space(vectors, texts, metadata, name=...)
space.geometry(); white = space.calibrate("whitening"); isoscope.compare(space, white)
space.map(color="topic"); space.report("report.html")

One concept per module: ``sources`` (array-likes, models, embedding), ``space`` (``Space``, ``embed`` and ``compare``),
``pairs`` (sentence pairs as the API takes them), ``results`` (what the methods return), ``tasks`` (retrieval and clustering), ``comparison``
(``Comparison`` and ``measure``), ``cards`` and ``html`` (the notebook cards, user text escaped), ``progress``
(tqdm bars, notebook or text), ``figures`` (plotly figures of the report and the dashboard), ``widget`` (the map
widget, ``isoscope[notebook]``), ``report`` (the one-file HTML report).

Names are imported from their module on first use (PEP 562).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from isoscope._lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    **dict.fromkeys(("Space", "compare", "embed"), "space"),
    "Comparison": "comparison",
    **dict.fromkeys(
        ("ClusteringReport", "GeometryFrame", "Projection", "RetrievalReport", "STSResult", "SweepReport"), "results"
    ),
    **dict.fromkeys(("comparison_report", "space_report"), "report"),
}
__all__ = [
    "ClusteringReport",
    "Comparison",
    "GeometryFrame",
    "Projection",
    "RetrievalReport",
    "STSResult",
    "Space",
    "SweepReport",
    "compare",
    "comparison_report",
    "embed",
    "space_report",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)


if TYPE_CHECKING:
    from isoscope.space.comparison import Comparison
    from isoscope.space.report import comparison_report, space_report
    from isoscope.space.results import (
        ClusteringReport,
        GeometryFrame,
        Projection,
        RetrievalReport,
        STSResult,
        SweepReport,
    )
    from isoscope.space.space import Space, compare, embed
