"""The one-file report in a real browser, offline: no request leaves the file, every figure is drawn, no console
error. Under ``make screenshots`` the README's screenshot is taken from the report of the STS-B test sentences
(default model, mean pooling, vs whitening)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import isoscope
from isoscope.paths import DEMO_CORPUS, DEMO_PAIRS
from tests.e2e.conftest import VIEWPORT

ALLOWED = ("file:", "data:", "blob:", "about:")


def open_offline(browser, path: Path):
    """The report in a fresh offline context; every request that is not the file itself is recorded and refused."""
    context = browser.new_context(viewport=VIEWPORT, offline=True)
    page = context.new_page()
    outside, failed, errors = [], [], []

    def route(r):
        if r.request.url.startswith(ALLOWED):
            r.continue_()
        else:
            outside.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    page.on("requestfailed", lambda req: failed.append(f"{req.url}: {req.failure}"))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(path.as_uri(), wait_until="load")
    return context, page, outside, failed, errors


def check_drawn(page, html: str) -> int:
    figures = html.count('class="figure"')
    page.wait_for_function(
        """n => {
            const plots = [...document.querySelectorAll('.figure .js-plotly-plot')];
            return plots.length === n && plots.every(d => d._fullLayout && d.querySelector('.main-svg')
                && (d._fullData || []).every(t => !t.type.endsWith('gl') || d.querySelector('canvas')));
        }""",
        arg=figures,
        timeout=60_000,
    )
    # every figure has marks on the page: a drawn svg path of a trace (bars, lines, markers), a heatmap image, or
    # the canvas of a scattergl trace
    empty = page.evaluate(
        """() => [...document.querySelectorAll('.figure .js-plotly-plot')].filter(d =>
            ![...d.querySelectorAll('.cartesianlayer .trace path, .heatmaplayer image, canvas')].some(m =>
                m.tagName !== 'path' || (m.getAttribute('d') || '').length > 8)).map(d => d.id)"""
    )
    assert not empty, f"figures without marks: {empty}"
    return figures


def test_the_report_opens_offline_with_every_figure_drawn(browser, encoder, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("ISOSCOPE_CACHE", str(tmp_path / "cache"))
    space = isoscope.embed(Path(DEMO_CORPUS), encoder, pooling="cls", progress=False)
    path = space.report(tmp_path / "report.html", vs="whitening:64", pairs=DEMO_PAIRS)
    html = path.read_text(encoding="utf-8")
    context, page, outside, failed, errors = open_offline(browser, path)
    try:
        assert check_drawn(page, html) >= 5
        assert page.locator("h1").inner_text().startswith("Isoscope report")
        assert page.locator(".tile").count() >= 5
    finally:
        context.close()
    assert not outside, outside[:5]
    assert not failed, failed[:5]
    assert not errors, errors[:5]


@pytest.mark.skipif(os.environ.get("ISOSCOPE_SCREENSHOTS") != "1", reason="README screenshot: make screenshots")
def test_readme_screenshot_of_the_stsb_report(browser, encoder, stsb_dir: Path, screenshots: Path) -> None:
    test = stsb_dir / "stsb-en-test.csv"
    pairs = isoscope.space.pairs.as_pairs(test)
    space = isoscope.embed(list(dict.fromkeys(pairs.texts)), encoder, name="STS-B test sentences", progress=False)
    out = screenshots / "report.html"
    space.report(out, vs="whitening", pairs=pairs, command="isoscope report --pairs stsb-en-test.csv --out report.html")
    context, page, outside, failed, errors = open_offline(browser, out)
    try:
        check_drawn(page, out.read_text(encoding="utf-8"))
        page.screenshot(path=str(screenshots / "report.png"), full_page=False)
        page.locator("#map").scroll_into_view_if_needed()
        page.locator("#map").screenshot(path=str(screenshots / "report-map.png"))
    finally:
        context.close()
        out.unlink()  # the report itself is not kept in the repository (it is rebuilt from STS-B)
    assert not outside and not failed and not errors
