"""What a report says, measured: everything the one-file report of a space (or of a comparison) shows, computed
with the library's functions and kept as plain numbers, tables and figures (``render`` writes the HTML).

Sections of a space's report: the headline (a verdict in words from the numbers), anisotropy metrics raw and
after the ``vs`` calibration (``all_metrics``), pairwise cosines and singular-value spectra, metrics per layer
when a model is known (``per_layer_metrics``), hubness and its top hubs in both spaces, what the calibration
changes (CKA, overlap@k, the texts whose neighbours changed most; STS raw vs calibrated when pairs are given),
a map, and how it was made (provenance, versions, date, command, settings).
"""

from __future__ import annotations

import datetime as _dt
import logging
import platform
import sys
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from isoscope.errors import InputError
from isoscope.space.html import clip

if TYPE_CHECKING:
    import plotly.graph_objects as go

    from isoscope.space.comparison import Comparison
    from isoscope.space.results import STSResult
    from isoscope.space.space import Space

log = logging.getLogger(__name__)

PACKAGES: tuple[str, ...] = (
    "isoscope",
    "numpy",
    "scipy",
    "scikit-learn",
    "torch",
    "transformers",
    "plotly",
    "umap-learn",
)
MAP_POINTS = 10_000  # points on the report's map (a seeded sample beyond): keeps the file small
UMAP_ROWS = 20_000  # map="auto": UMAP up to this many mapped points, PCA beyond
HISTOGRAM_PAIRS = 20_000
TOP = 10  # hubs and most-changed texts listed
NEIGHBOUR_CHARS = 60  # each of a changed text's nearest neighbours, cut after a whole word


@dataclass
class Section:
    """One part of the report: a title, paragraphs (plain text), tables (DataFrames) and figures (plotly)."""

    key: str  # anchor
    title: str
    paragraphs: list[str] = field(default_factory=list)
    tables: list[tuple[str, pd.DataFrame]] = field(default_factory=list)  # (caption, table)
    figures: list[go.Figure] = field(default_factory=list)


@dataclass
class Report:
    """A whole report: title, the headline (verdict and key numbers), sections, provenance and raw numbers."""

    title: str
    subtitle: str
    verdict: list[str]
    tiles: list[tuple[str, str, str]]  # (label, value, note)
    sections: list[Section]
    made: dict[str, Any]  # how it was made: provenance, settings, versions, date, command
    data: dict[str, Any]  # the numbers, embedded as JSON in the file
    warnings: list[str] = field(default_factory=list)


def versions() -> dict[str, str]:
    """The versions of Python and the packages that made the numbers (without importing them)."""
    out = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def python_command() -> str:
    """How a report made from Python was made, without local paths: ``Python: script.py`` (the file name of
    ``sys.argv[0]``; in Jupyter the kernel launcher's), never its folder (a home folder names the user)."""
    name = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else ""
    return f"Python: {name}" if name else "Python"


def made_by(command: str | None, settings: dict[str, Any], provenance: dict[str, Any], seconds: float) -> dict:
    return {
        "date": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "command": command or python_command(),
        "settings": settings,
        "provenance": provenance,
        "versions": versions(),
        "seconds": round(seconds, 1),
    }


def describe_source(space: Space) -> str:
    """One line: the model and pooling, or where the vectors came from."""
    p = space.provenance
    if space.embedding is not None:
        return f"{p['model']}, {p['pooling']} pooling"
    where = p.get("path") or p.get("source", "vectors")
    return f"vectors from {where}"


# ---------------------------------------------------------------- words from numbers


def anisotropy_words(m: dict[str, float]) -> str:
    """A sentence on how anisotropic a space is, from its average cosine and IsoScore."""
    cos, iso = m["avg_cosine"], m["isoscore"]
    if cos > 0.3:
        cone = (
            f"strongly anisotropic: random pairs have an average cosine of {cos:.2f}, the vectors sit in a narrow cone"
        )
    elif cos > 0.1:
        cone = f"moderately anisotropic (average cosine of random pairs {cos:.2f})"
    else:
        cone = f"nearly centred (average cosine of random pairs {cos:.3f})"
    spread = (
        f"variance is concentrated in few directions (IsoScore {iso:.2f}, {m['explained_variance_top10']:.0%} on the "
        "first 10 principal components)"
        if iso < 0.5
        else f"variance is spread over many directions (IsoScore {iso:.2f})"
    )
    return f"The space is {cone}; {spread}."


def calibration_words(method: str, raw: dict, cal: dict, *, overlap: float, k: int, sts: tuple | None) -> str:
    text = (
        f"{method} would move IsoScore from {raw['isoscore']:.2f} to {cal['isoscore']:.2f} and the average cosine "
        f"from {raw['avg_cosine']:.3f} to {cal['avg_cosine']:.3f}; each text keeps {overlap:.0%} of its {k} nearest "
        "neighbours (overlap@k)"
    )
    if sts is not None:
        before, after = sts
        change = "raises" if after > before + 0.5 else "lowers" if after < before - 0.5 else "barely changes"
        text += f", and it {change} STS Spearman ({before:.2f} -> {after:.2f})"
    return text + "."


def hubness_words(skew: float, max_nk: int, *, k: int, n: int, top_text: str | None) -> str:
    if not np.isfinite(skew) or skew < 1:
        return f"Little hubness (skewness of the k-occurrence {skew:.2f}): no text dominates the neighbour lists."
    who = f": '{top_text[:80]}'" if top_text else ""
    return (
        f"Hubs: the k-occurrence is skewed ({skew:.2f}); one text is among the {k} nearest neighbours of {max_nk} of "
        f"the {n:,} texts{who}."
    )


# ---------------------------------------------------------------- pieces


def metrics_table(rows: dict[str, dict[str, float]]) -> pd.DataFrame:
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame.index.name = "space"
    return frame.reset_index()


def hubs_table(space: Space, k_occurrence: np.ndarray, top: int = TOP) -> pd.DataFrame:
    from isoscope.comparison import Hubness

    h = Hubness(k=0, k_occurrence=np.asarray(k_occurrence))
    frame = h.top_frame(space.texts, top).rename(columns={"id": "row", "k_occurrence": "N_k"})
    return frame


def changed_table(cmp: Comparison, top: int = TOP) -> pd.DataFrame:
    rows = []
    for item in cmp.measured.moved(cmp.a.texts, top):
        shown = lambda lst: " | ".join(clip(x.get("text", x["id"]), NEIGHBOUR_CHARS) for x in lst[:3])  # noqa: E731
        rows.append(
            {
                "row": item["id"],
                "text": item.get("text", ""),
                "overlap": item["overlap"],
                f"nearest in {cmp.a.label}": shown(item["neighbours_a"]),
                f"nearest in {cmp.b.label}": shown(item["neighbours_b"]),
            }
        )
    return pd.DataFrame(rows)


def map_method(method: str, n_points: int) -> str:
    if method == "auto":
        return "umap" if n_points <= UMAP_ROWS else "pca"
    if method not in ("pca", "umap", "tsne"):
        raise InputError(f"map must be auto, pca, umap or tsne; got {method!r}")
    return method


def map_colour(space: Space, rows: np.ndarray, overlap: np.ndarray | None, k: int) -> tuple[np.ndarray, bool, str]:
    """The map's colours: the first metadata column with 2 to 20 categories, else each text's overlap@k."""
    from isoscope.space.figures import meta_colours

    for col in space.metadata.columns:
        values = space.metadata[col]
        if 2 <= values.nunique() <= 20:
            colour, categorical = meta_colours(values)
            return colour, categorical, str(col)
    if overlap is not None:
        return overlap, False, f"overlap@{k}"
    return np.linalg.norm(space.vectors.astype(np.float64), axis=1), False, "norm"


def space_map_figure(space: Space, method: str, *, map_points: int, seed: int, colour_of: Any) -> tuple[Any, str]:
    from isoscope.space.figures import projection_map
    from isoscope.space.html import plot_text

    proj = space.project(method, n_components=2, seed=seed, max_points=map_points if len(space) > map_points else None)
    rows = proj.rows
    colour, categorical, name = colour_of(rows)
    texts = space.texts or [f"row {i}" for i in range(len(space))]
    hover = [plot_text(texts[i]) for i in rows]
    title = f"{method.upper()} map of {space.label} ({len(rows):,} of {len(space):,} texts), colour: {name}"
    fig = projection_map(
        proj.coords,
        rows,
        hover,
        title=title,
        colour=colour,
        categorical=categorical,
        hits=np.zeros(len(space), bool),
        colour_name=name,
    )
    return fig, name


def timed(clock: dict[str, float], name: str, start: float) -> None:
    clock[name] = round(time.perf_counter() - start, 2)


def sts_pair(raw: Space, cal: Space, pairs: Any, *, progress: bool = True) -> tuple[STSResult, STSResult]:
    return raw.sts(pairs, progress), cal.sts(pairs, progress)
