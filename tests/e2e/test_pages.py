"""Every dashboard page in a real browser: it loads without an exception, its charts draw, one main
interaction works, and a full-page screenshot is taken (into docs/screenshots/<page>.png for docs/pages.md
under ``make screenshots``, which sets ISOSCOPE_SCREENSHOTS=1; elsewhere into a temporary folder; taken
after the interaction for pages that show little before a button is pressed).

Adding a page is one entry in ``PAGES``: its URL path (the file name), sidebar title, heading, the
minimum number of plotly charts it shows on load, and optionally an interaction.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import pytest
from playwright.sync_api import Page

from tests.e2e import browser as b
from tests.e2e.conftest import VIEWPORT, Server, outside_requests, start_server, stop_server


@dataclass(frozen=True)
class PageCase:
    path: str  # URL path = the page's file name without .py ("" for the default page)
    nav: str  # title of its sidebar link
    heading: str  # text of its st.title
    min_charts: int  # plotly charts drawn on load with the default (demo) data
    interact: Callable[[Page, Path], None] | None = None  # (page, tmp_path): the page's main interaction
    shot_after: bool = False  # the docs/pages.md screenshot shows the page after its interaction (button-gated pages)

    @property
    def name(self) -> str:
        return self.path or "home"


# ---------------------------------------------------------------- interactions

GOOD_PAIRS = [
    ("A man is strumming a guitar.", "A man plays the guitar.", 4.8),
    ("A woman is chopping an onion.", "Someone cuts an onion.", 4.2),
    ("Two dogs run in a field.", "Dogs are running on grass.", 3.9),
    ("The stock market fell today.", "Shares dropped sharply.", 3.1),
    ("A child reads a book.", "A kid is cooking dinner.", 1.4),
    ("It is raining in Paris.", "The cat sleeps on the sofa.", 0.3),
    ("A plane takes off.", "An aircraft departs the runway.", 4.5),
    ("He is eating an apple.", "The train arrives late.", 0.1),
]


def write_pairs(tmp: Path) -> Path:
    path = tmp / "e2e_pairs.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["sentence1", "sentence2", "score"])
        w.writerows(GOOD_PAIRS)
    return path


def similarity_interaction(page: Page, tmp: Path) -> None:
    """Upload a pairs file: the Spearman and the table follow it; then switch pooling in the sidebar: the
    metric and the table follow the sidebar, on the uploaded pairs."""
    demo = b.metrics(page)
    assert "Spearman (model)" in demo, demo
    b.choose_radio(page, "Sentence pairs", "Upload a file")
    b.upload(page, write_pairs(tmp))
    b.assert_clean(page)
    assert f"e2e_pairs.csv: {len(GOOD_PAIRS)} rows" in b.captions(page)
    mine = b.metrics(page)
    assert list(mine) == ["Spearman (model)"], mine
    assert mine["Spearman (model)"] != demo["Spearman (model)"]
    assert 50 <= b.number(mine["Spearman (model)"]) <= 100  # clearly graded pairs rank well
    rows = list(csv.DictReader(io.StringIO(b.download(page, "Download CSV").decode("utf-8"))))
    assert [r["sentence1"] for r in rows] == [p[0] for p in GOOD_PAIRS]
    assert all(-1.0 <= float(r["cosine model"]) <= 1.0 for r in rows)
    assert b.chart_count(page, at_least=1) == 1

    sidebar = page.locator('[data-testid="stSidebar"]')  # the shared sidebar pooling reaches the page
    b.choose_select(sidebar, page, "Pooling", "cls")
    pooling_box = sidebar.locator('[data-testid="stSelectbox"]', has_text="Pooling").first
    assert pooling_box.locator('input[role="combobox"]').input_value() == "cls"
    b.assert_clean(page)
    after = b.metrics(page)
    assert list(after) == ["Spearman (cls)"], f"the sidebar pooling did not reach the page: {after}"
    rows = list(csv.DictReader(io.StringIO(b.download(page, "Download CSV").decode("utf-8"))))
    assert [r["sentence1"] for r in rows] == [p[0] for p in GOOD_PAIRS]  # the upload survived the reruns
    assert "cosine cls" in rows[0] and "cosine model" not in rows[0]


def calibration_interaction(page: Page, tmp: Path) -> None:
    """Fit a whitening calibrator with the button: Spearman before/after, cosines centred, vectors download."""
    b.choose_select(b.main(page), page, "Calibration", "whitening")
    b.click_button(page, "Fit calibrator")
    b.assert_clean(page)
    m = b.metrics(page)
    assert {"Spearman raw", "Spearman whitening", "avg cosine raw", "avg cosine whitening"} <= set(m), m
    assert abs(b.number(m["avg cosine whitening"])) < b.number(m["avg cosine raw"])  # whitening centres the cone
    raw = b.download(page, "Download calibrated vectors")
    z = np.load(io.BytesIO(raw), allow_pickle=False)
    assert z.dtype == np.float32 and z.ndim == 2 and z.shape[0] >= 2 * 100 and np.isfinite(z).all()


def anisotropy_interaction(page: Page, tmp: Path) -> None:
    """Add a calibrator to the comparison: the metrics table gains its row and the histogram its trace."""
    before = list(csv.DictReader(io.StringIO(b.download(page, "Download CSV").decode("utf-8"))))
    assert "sn" not in [r["space"] for r in before]
    b.add_to_multiselect(b.main(page), page, "Calibrators to compare", "sn")
    b.assert_clean(page)
    after = list(csv.DictReader(io.StringIO(b.download(page, "Download CSV").decode("utf-8"))))
    assert [r["space"] for r in after] == [r["space"] for r in before] + ["sn"]
    raw = next(r for r in after if r["space"] == "raw")
    sn = next(r for r in after if r["space"] == "sn")
    assert float(sn["avg_cosine"]) < float(raw["avg_cosine"])
    assert b.chart_count(page, at_least=3) >= 3


def pooling_interaction(page: Page, tmp: Path) -> None:
    """Run the explorer: a best pooling is named, the heatmap and scatter draw, the table covers every pooling."""
    b.click_button(page, "Run the explorer", timeout_ms=300_000)  # cold: every layer and a fit per pooling
    b.assert_clean(page)
    assert "Best:" in b.main(page).locator('[data-testid="stAlertContentSuccess"]').first.inner_text()
    assert b.chart_count(page, at_least=2) >= 2
    rows = list(csv.DictReader(io.StringIO(b.download(page, "Download CSV").decode("utf-8"))))
    poolings = {r["pooling"] for r in rows}
    assert {"cls", "mean"} <= poolings and any(p.startswith("layer") for p in poolings), poolings
    assert len({r["calibration"] for r in rows}) >= 2  # raw and the default calibrator
    assert all(-100 <= float(r["spearman"]) <= 100 for r in rows if r["spearman"])


def anatomy_interaction(page: Page, tmp: Path) -> None:
    """Pick a multilingual preset: the parameter count and the embedding share follow it."""
    before = b.metrics(page)
    b.choose_select(b.main(page), page, "Architecture", "xlm-roberta-base")
    b.assert_clean(page)
    after = b.metrics(page)
    assert after["Parameters (pre-training)"] != before["Parameters (pre-training)"]
    share = b.number(after["Embedding share, pre-training"])
    assert share > 50, after  # a 250k-token vocabulary dominates a base-size model
    assert b.chart_count(page, at_least=2) >= 2


def frequency_interaction(page: Page, tmp: Path) -> None:
    """Change the calibrator: the calibrated correlation changes, the raw one stays."""
    before = b.metrics(page)
    raw = next(k for k in before if k.endswith(" raw"))
    b.choose_select(b.main(page), page, "Calibration", "sn+abtt:3")
    b.assert_clean(page)
    after = b.metrics(page)
    assert set(after) == set(before), after
    calibrated = next(k for k in after if k != raw)
    assert after[calibrated] != before[calibrated]  # another calibrator, another correlation
    assert after[raw] == before[raw]
    assert b.chart_count(page, at_least=1) >= 1


def overlap_interaction(page: Page, tmp: Path) -> None:
    """Change the calibrator: a new similarity column is scored against the edit distance."""
    before = b.metrics(page)
    assert "Spearman with edit distance: raw cosine" in before, before
    b.choose_select(b.main(page), page, "Calibration", "sn")
    b.assert_clean(page)
    after = b.metrics(page)
    assert "Spearman with edit distance: sn cosine" in after, after
    assert after["Spearman with edit distance: raw cosine"] == before["Spearman with edit distance: raw cosine"]
    rows = list(csv.DictReader(io.StringIO(b.download(page, "Download CSV").decode("utf-8"))))
    assert rows and "sn cosine" in rows[0] and "edit_distance" in rows[0]
    assert b.chart_count(page, at_least=1) >= 1


NEIGHBOUR_QUERY = "A quiet acoustic guitar concert in a small bar."


def neighbours_interaction(page: Page, tmp: Path) -> None:
    """Run a typed neighbour query: the query line, both top-k tables and the overlap follow it."""
    first = list(csv.DictReader(io.StringIO(b.download(page, "Download CSV").decode("utf-8"))))
    b.type_text(page, "type a sentence", NEIGHBOUR_QUERY)
    b.assert_clean(page)
    assert NEIGHBOUR_QUERY in b.main(page).inner_text()
    raw = list(csv.DictReader(io.StringIO(b.download(page, "Download CSV").decode("utf-8"))))
    k = int(next(k for k in b.metrics(page) if k.startswith("overlap@")).split("@")[1].split()[0])
    assert len(raw) == k and [r["rank"] for r in raw] == [str(i) for i in range(1, k + 1)]
    assert raw[0]["text"] != first[0]["text"]  # no longer the picked sentence itself
    topics = [r["topic"] for r in raw[:5]]
    assert topics.count("music") >= 3, topics  # a music query finds the music texts of the demo corpus
    scores = [float(r["score"]) for r in raw]
    assert scores == sorted(scores, reverse=True)
    overlap = b.number(next(v for k, v in b.metrics(page).items() if k.startswith("overlap@")))
    assert 0.0 <= overlap <= 1.0


def projection_interaction(page: Page, tmp: Path) -> None:
    """Highlight a word on the maps, then switch to 3-D: both maps redraw."""
    b.type_text(page, "Highlight texts containing", "rain")
    b.assert_clean(page)
    caption = b.captions(page)
    assert "contain" in caption and "rain" in caption
    assert b.number(caption.split("text(s) contain")[0].split()[-1]) >= 1
    assert b.chart_count(page, at_least=2) >= 2
    b.choose_radio(page, "Dimensions", "3D")
    b.assert_clean(page)
    assert b.chart_count(page, at_least=2) >= 2
    assert b.main(page).locator('[data-testid="stPlotlyChart"] .gl-container').count() >= 2  # WebGL 3-D scenes


def landscape_interaction(page: Page, tmp: Path) -> None:
    """The stored result (seeded by the server fixture): switch the rollback metric and its bar chart follows."""
    assert b.main(page).locator('[data-testid="stSelectbox"]', has_text="Result").count() == 1
    assert b.chart_count(page, at_least=5) >= 5

    def axis_titles() -> list[str]:
        titles = page.locator('[data-testid="stMain"] .js-plotly-plot .ytitle')  # SVG: textContent, not innerText
        return titles.evaluate_all("els => els.map(e => e.textContent)")

    before = axis_titles()
    b.choose_radio(page, "Metric", "train_loss")
    b.assert_clean(page)
    after = axis_titles()
    assert "train loss" in after and "train loss" not in before, (before, after)


def sweep_interaction(page: Page, tmp: Path) -> None:
    """Run the sweep on the demo corpus: fp32 keeps its own neighbours, binary is 32x smaller, the curve draws."""
    b.click_button(page, "Run the sweep")
    b.assert_clean(page)
    rows = {r["variant"]: r for r in csv.DictReader(io.StringIO(b.download(page, "Download CSV").decode("utf-8")))}
    assert {"fp32", "int8-model", "int8-vectors", "binary"} <= set(rows), list(rows)
    assert float(rows["fp32"]["overlap_at_k"]) == 1.0
    assert float(rows["fp32"]["bytes_per_vector"]) == 32 * float(rows["binary"]["bytes_per_vector"])
    assert 0.5 < float(rows["int8-model"]["overlap_at_k"]) < 1.0  # close to fp32, not equal
    assert b.chart_count(page, at_least=1) >= 1
    assert "Smallest variant keeping at least 90% neighbour overlap" in b.captions(page)


def compare_interaction(page: Page, tmp: Path) -> None:
    """CLS vs mean on the demo corpus; the layer CKA of one model has a unit diagonal; then B = A (both cls):
    the self-comparison known answers, in the browser."""
    first = b.metrics(page)
    assert 0 < b.number(first["CKA (linear)"]) < 1 and 0 < b.number(first["overlap@10"]) < 1, first
    layers = list(csv.DictReader(io.StringIO(b.download(page, "Download CSV").decode("utf-8"))))
    assert [r["layer"] for r in layers] == [f"A layer:{i}" for i in range(7)]
    assert [float(r[f"B layer:{i}"]) for i, r in enumerate(layers)] == [1.0] * 7
    b.choose_select(b.main(page), page, "Preset", "Choose A and B yourself")
    column_b = b.main(page).locator('[data-testid="stColumn"]', has_text="Space B").first
    b.choose_select(column_b, page, "Pooling", "cls")
    b.assert_clean(page)
    same = b.metrics(page)
    assert same["CKA (linear)"] == "1.000" and same["CKA (debiased)"] == "1.000", same
    assert same["overlap@10"] == "1.000" and same["Procrustes disparity"] == "0.000", same
    assert b.chart_count(page, at_least=4) >= 4


PAGES: tuple[PageCase, ...] = (
    PageCase("", "Home", "Isoscope", 0),
    PageCase("similarity", "Sentence pairs", "Sentence-pair similarity", 1, similarity_interaction),
    PageCase("calibration", "Calibration", "Calibration", 0, calibration_interaction, shot_after=True),
    PageCase("anisotropy", "Anisotropy", "Anisotropy", 3, anisotropy_interaction),
    PageCase("frequency", "Frequency bias", "Word-frequency bias", 1, frequency_interaction),
    PageCase("overlap", "Lexical overlap", "Lexical overlap", 1, overlap_interaction),
    PageCase("sweep", "Precision & size", "Precision & size", 0, sweep_interaction, shot_after=True),
    PageCase("neighbours", "Neighbours", "Neighbours", 1, neighbours_interaction),
    PageCase("projection", "Projection map", "Projection map", 2, projection_interaction),
    PageCase("compare", "Compare spaces", "Compare spaces", 4, compare_interaction),
    PageCase("migration", "Migration", "Migration", 0),
    PageCase("pooling", "Pooling explorer", "Pooling explorer", 0, pooling_interaction, shot_after=True),
    PageCase("anatomy", "Embedding anatomy", "Embedding anatomy", 2, anatomy_interaction),
    PageCase("landscape", "Loss surfaces", "Loss surfaces", 0, landscape_interaction),
)
IDS = [p.name for p in PAGES]


# ---------------------------------------------------------------- tests


def test_sidebar_lists_every_page(page: Page) -> None:
    titles = b.nav_titles(page)
    for case in PAGES:
        assert case.nav in titles, f"no sidebar link '{case.nav}' in {titles}"
    unlisted = [t for t in titles if t not in {c.nav for c in PAGES}]
    for title in unlisted:  # pages without an entry yet still must load cleanly
        b.open_page(page, title, "")
        b.assert_clean(page)


@pytest.mark.parametrize("case", PAGES, ids=IDS)
def test_page(page: Page, warm_server: Server, case: PageCase, tmp_path: Path, screenshots: Path) -> None:
    """One session per page: open it from the sidebar, check it draws, screenshot it, run its interaction; its
    address and its sidebar link are its URL path, and the shared sidebar is drawn on it."""
    if case.path:
        b.open_page(page, case.nav, case.heading)
    assert page.get_by_role("heading", name=case.heading).first.is_visible()
    b.assert_clean(page)
    charts = b.chart_count(page, at_least=case.min_charts)
    assert charts >= case.min_charts, f"{case.name}: {charts} plotly chart(s), expected >= {case.min_charts}"
    shot = screenshots / f"{case.name}.png"
    if not case.shot_after:
        b.screenshot(page, shot)
    if case.interact is not None:
        case.interact(page, tmp_path)
        b.assert_clean(page)
    if case.shot_after:
        b.screenshot(page, shot)
    assert shot.stat().st_size > 10_000

    if case.path:  # the URL path is the file name (a bookmark opens it: test_deep_link_on_fresh_server, heavy tier)
        link = page.locator('[data-testid="stSidebarNavLink"]', has_text=case.nav).first
        assert urlsplit(link.get_attribute("href") or "").path == f"/{case.path}", link.get_attribute("href")
        assert urlsplit(page.url).path == f"/{case.path}", page.url
        assert page.locator('[data-testid="stSidebar"] [data-testid="stSelectbox"]', has_text="Pooling").count() == 1


def test_similarity_compares_two_poolings(page: Page) -> None:
    """Adding a pooling to the comparison keeps the first one: two metrics, two cosine columns."""
    b.open_page(page, "Sentence pairs", "Sentence-pair similarity")
    first = b.metrics(page)
    assert list(first) == ["Spearman (model)"], first
    b.add_to_multiselect(b.main(page), page, "Pooling modes to compare", "cls")
    b.assert_clean(page)
    both = b.metrics(page)
    assert set(both) == {"Spearman (model)", "Spearman (cls)"}, both
    assert both["Spearman (model)"] == first["Spearman (model)"]
    rows = list(csv.DictReader(io.StringIO(b.download(page, "Download CSV").decode("utf-8"))))
    assert [r["cosine cls"] for r in rows] != [r["cosine model"] for r in rows]  # cls is another space
    assert b.chart_count(page, at_least=1) == 1


def test_similarity_compares_two_poolings_after_upload(page: Page, tmp_path: Path) -> None:
    """Regression: the multiselect once showed no tag after a new upload while the page computed its pooling."""
    b.open_page(page, "Sentence pairs", "Sentence-pair similarity")
    b.choose_radio(page, "Sentence pairs", "Upload a file")
    b.upload(page, write_pairs(tmp_path))
    assert list(b.metrics(page)) == ["Spearman (model)"]
    tags = b.main(page).locator('[data-testid="stMultiSelect"]').first.inner_text()
    assert "model" in tags.split("\n"), f"the multiselect shows {tags!r} while the page computes 'model'"
    b.add_to_multiselect(b.main(page), page, "Pooling modes to compare", "cls")
    assert set(b.metrics(page)) == {"Spearman (model)", "Spearman (cls)"}


def test_deep_link_on_fresh_server(browser, tmp_path: Path) -> None:
    """A bookmark to /similarity opened right after the server starts works like any other visit.

    It asks the server's health at the server's base URL, never at ``/similarity/_stcore/health`` (issue 41).
    Regression: while the pages lived in dashboard/pages/, Streamlit ran pages/*.py directly (MPA v1, without
    app.py, so no sidebar and no sys.path for core) until st.navigation had run once in the server process.
    """
    server = start_server(tmp_path / "fresh.log")
    context = browser.new_context(viewport=VIEWPORT)
    outside = outside_requests(context, server)
    probed: list[str] = []  # issue 41: the frontend guessed /similarity as the base path first (a 404)
    context.on("request", lambda request: probed.append(request.url) if "/similarity/_stcore" in request.url else None)
    context.add_init_script(b.RUN_COUNTER_JS)
    try:
        pg = context.new_page()
        b.goto(pg, f"{server.url}/similarity")
        b.assert_clean(pg)
        pg.get_by_role("heading", name="Sentence-pair similarity").first.wait_for(timeout=10_000)
        assert pg.locator('[data-testid="stSidebar"] [data-testid="stSelectbox"]', has_text="Pooling").count() == 1
    finally:
        context.close()
        stop_server(server)
    assert not server.tracebacks(), server.tracebacks()[0]
    assert not outside, f"requests to other hosts: {sorted(set(outside))}"
    assert not probed, f"the page guessed its base path from its URL: {probed}"
