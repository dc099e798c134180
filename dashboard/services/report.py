"""The one-file HTML reports of the Anisotropy and Compare pages (``isoscope.space.report``), cached: a second
click on the same data is instant. Built with a progress message; the bytes are what the page downloads."""

from __future__ import annotations

import streamlit as st

from isoscope.dashboard.services.keyed import HASH_FUNCS, Texts, Vectors
from isoscope.dashboard.services.models import ModelKey, encoder


@st.cache_data(
    show_spinner="Building the report (metrics, layers, neighbours, a map)…", max_entries=8, hash_funcs=HASH_FUNCS
)
def space_report(model: ModelKey, texts: Texts, pooling: str, max_length: int, vs: str, meta: object = None) -> bytes:
    """The report of the sidebar's model on ``texts`` against its ``vs`` calibration (fitted on them)."""
    from isoscope.space import embed, space_report

    space = embed(
        list(texts.items),
        encoder(model),
        pooling,
        max_length=max_length,
        metadata=meta,
        progress=False,
        name=f"{len(texts):,} texts",
    )
    html = space_report(space, vs=vs, command="isoscope app: the Anisotropy page's Download report")
    return html.encode("utf-8")


@st.cache_data(show_spinner="Building the report of both spaces…", max_entries=8, hash_funcs=HASH_FUNCS)
def comparison_report(
    a: Vectors, b: Vectors, texts: Texts, labels: tuple[str, str], k: int, map_method: str, map_points: int
) -> bytes:
    """The report of two spaces of the same ``texts`` (their vectors as the Compare page has them)."""
    from isoscope.space import Space, compare, comparison_report

    space_a = Space(a.array, list(texts.items), name=labels[0], cache=False)
    space_b = Space(b.array, list(texts.items), name=labels[1], cache=False)
    cmp = compare(space_a, space_a if a.key == b.key else space_b, k, map=map_method, map_points=map_points)
    html = comparison_report(cmp, command="isoscope app: the Compare spaces page's Download report")
    return html.encode("utf-8")
