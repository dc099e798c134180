"""The Atlas map as a Streamlit custom component (v2): ``dashboard/static/atlas_map.js`` and ``.css``, shipped as
package data, no iframe, no CDN, no request to another host (the tiles come from the app's own server,
``isoscope.dashboard.tiles``).

result = ui.atlas_map(data, key="atlas_map", on_change=fn)   # data: figures.atlas.map_data(...)
result.click   # {"row": int, "add": bool} for one rerun after a click on a point, else None
result.box     # [x0, y0, x1, y1] (layout coordinates) after a box selection, else None
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from importlib import resources

import streamlit as st

NAME = "isoscope_atlas_map"


def _asset(name: str) -> str:
    return resources.files("isoscope.dashboard").joinpath("static", name).read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def _component():
    return st.components.v2.component(NAME, html="", css=_asset("atlas_map.css"), js=_asset("atlas_map.js"))


def atlas_map(data: dict, key: str, on_change: Callable[[], None] | None = None):
    """Mount the map with ``data``; the result (also ``st.session_state[key]``) carries the ``click`` and ``box``
    trigger values, and ``on_change`` runs before the rerun either of them starts."""
    callback = on_change or (lambda: None)
    return _component()(data=data, key=key, on_click_change=callback, on_box_change=callback)
