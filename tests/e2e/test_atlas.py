"""The Atlas page in a real browser: the map draws, a search lights points up, a click on one selects it,
and the selection opens in the Neighbours page."""

from __future__ import annotations

import io

import numpy as np

from tests.e2e import browser as b

BUILD_TIMEOUT_MS = 600_000  # the first visit builds the demo atlas (UMAP compiles its code once)
HIGHLIGHT = np.array([255, 200, 0])  # the highlight layer's fill (dashboard/figures/atlas.py)


def open_atlas(page) -> None:
    link = page.locator('[data-testid="stSidebarNavLink"]', has_text="Atlas").first
    before = b.runs(page)
    link.click()
    page.wait_for_function("n => (window.__stRuns || 0) > n", arg=before, timeout=BUILD_TIMEOUT_MS)
    page.get_by_role("heading", name="Atlas").first.wait_for(timeout=BUILD_TIMEOUT_MS)
    b.wait_idle(page, BUILD_TIMEOUT_MS)


def highlighted_pixel(page) -> tuple[float, float]:
    """Page coordinates of a point drawn in the highlight colour on the map canvas."""
    from PIL import Image

    canvas = page.locator('[data-testid="stDeckGlJsonChart"] canvas').first
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()  # in the viewport, where mouse clicks land
    for _ in range(20):  # the layers appear a moment after the run ends
        img = np.asarray(Image.open(io.BytesIO(canvas.screenshot())).convert("RGB")).astype(int)
        close = np.abs(img - HIGHLIGHT).sum(axis=2) < 40
        if close.sum() >= 4:
            ys, xs = np.nonzero(close)
            i = len(xs) // 2
            scale = img.shape[1] / box["width"]
            return box["x"] + xs[i] / scale, box["y"] + ys[i] / scale
        page.wait_for_timeout(500)
    raise AssertionError(f"no highlighted point on the map: {b.state(page)}")


def test_search_select_and_open_in_neighbours(page, screenshots) -> None:
    open_atlas(page)
    b.assert_clean(page)
    assert "336 points drawn" in b.captions(page)
    assert page.locator('[data-testid="stDeckGlJsonChart"] canvas').count() >= 1

    b.type_text(page, "Search the texts", "football")
    b.assert_clean(page)
    caps = b.captions(page)
    assert "match the search" in caps
    table = b.main(page).locator('[data-testid="stDataFrame"]').first
    table.wait_for()
    b.screenshot(page, screenshots / "atlas.png")

    x, y = highlighted_pixel(page)
    page.mouse.move(x, y)
    tooltip = page.locator(".deck-tooltip")
    tooltip.wait_for(state="visible")
    assert "football" in tooltip.inner_text().lower()  # hover shows the point's text (as text, not HTML)
    page.mouse.click(x, y)  # a selection reruns the page (Streamlit's run counter does not always see it)
    b.main(page).get_by_text("1 text(s) clicked on the map").wait_for(timeout=b.RUN_TIMEOUT_MS)
    b.wait_idle(page)
    b.assert_clean(page)

    picked = b.main(page).locator('[data-testid="stSelectbox"]', has_text="Open one in the Neighbours page")
    chosen = picked.locator('input[role="combobox"]').input_value()
    assert "football" in chosen.lower()
    b.click_button(page, "Open in Neighbours")
    page.get_by_role("heading", name="Neighbours").first.wait_for(timeout=b.RUN_TIMEOUT_MS)
    b.wait_idle(page)
    b.assert_clean(page)
    query = b.main(page).locator('[data-testid="stTextInput"]', has_text="type a sentence").locator("input")
    assert chosen.split(": ", 1)[1].rstrip("…") in query.input_value()
