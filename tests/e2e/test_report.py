"""The one-file report in a real browser, offline: no request leaves the file, every figure is drawn, no console
error. Under ``make screenshots`` the screenshot of docs/library.md (and of the README's strip) is taken from the
report of the STS-B test sentences (default model with mean pooling, vs whitening)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import isoscope
from isoscope.data import Pairs, load_corpus
from isoscope.paths import DEMO_CORPUS, DEMO_PAIRS
from isoscope.space.pairs import as_pairs
from tests.e2e.conftest import ROOT, VIEWPORT

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
    """Every section of the report (the demo's metadata, pairs, layers, whitening) on a slice of the demo, so the
    browser check costs seconds: the STS-B report of docs/library.md is the full-size one."""
    monkeypatch.setenv("ISOSCOPE_CACHE", str(tmp_path / "cache"))
    corpus, pairs = load_corpus(DEMO_CORPUS), as_pairs(DEMO_PAIRS)
    rows = np.arange(0, len(corpus), 8)  # (606,) every topic and style
    space = isoscope.embed(
        [corpus.texts[i] for i in rows], encoder, pooling="cls", metadata=corpus.meta.iloc[rows], progress=False
    )
    some = Pairs(pairs.sentence1[:120], pairs.sentence2[:120], pairs.scores[:120], name="demo pairs")
    path = space.report(tmp_path / "report.html", vs="whitening:64", pairs=some)
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


@pytest.mark.skipif(os.environ.get("ISOSCOPE_SCREENSHOTS") != "1", reason="docs screenshot: make screenshots")
def test_readme_screenshot_of_the_stsb_report(browser, encoder, stsb_dir: Path, screenshots: Path) -> None:
    test = stsb_dir / "stsb-en-test.csv"
    pairs = as_pairs(test)
    space = isoscope.embed(
        list(dict.fromkeys(pairs.texts)), encoder, "mean", name="STS-B test sentences", progress=False
    )
    out = screenshots / "report.html"
    space.report(out, vs="whitening", pairs=pairs, command="isoscope report --pairs stsb-en-test.csv --out report.html")
    context, page, outside, failed, errors = open_offline(browser, out)
    try:
        check_drawn(page, out.read_text(encoding="utf-8"))
        page.screenshot(path=str(screenshots / "report.png"), full_page=False)
        tiles = page.evaluate(
            "() => [...document.querySelectorAll('.tile')].map(t => [t.querySelector('.v').textContent, "
            "t.querySelector('.n').textContent])"
        )
        page.locator("#map").scroll_into_view_if_needed()
        page.locator("#map").screenshot(path=str(screenshots / "report-map.png"))
    finally:
        context.close()
        out.unlink()  # the report itself is not kept in the repository (it is rebuilt from STS-B)
    assert not outside and not failed and not errors
    # the paragraph under the screenshot (docs/library.md) states every headline number of this report
    doc = (ROOT / "docs" / "library.md").read_text(encoding="utf-8")
    start = doc.index("\n\n", doc.index("](screenshots/report.png)")) + 2  # the paragraph below it
    paragraph = doc[start : doc.index("\n\n", start)].replace("\n", " ")
    numbers = [value for value, _ in tiles] + [n.split(": ")[1] for _, n in tiles if n.startswith("whitening: ")]
    assert len(numbers) >= 6 and not [x for x in numbers if x not in paragraph], (numbers, paragraph)
