"""Helpers for driving the Streamlit dashboard in a real browser (Playwright sync API).

Streamlit marks its root element ``[data-testid="stApp"]`` with ``data-test-script-state`` ("running",
"notRunning", ...) and elements left over from the previous run with ``data-stale="true"``. A counter of
finished runs, installed in every page before it loads, tells whether the rerun an action triggered has
completed, so waiting never races with a rerun that has not begun yet.

The counter reads the server's messages, not the DOM: it counts the ``script_finished`` ForwardMsgs that
arrive on the app's WebSocket. Counting the attribute's transitions out of "running" missed runs: when the
server sends a run's "running" status, its deltas and its end in one burst (a busy server whose event loop
flushes late), React renders the state once, the attribute never reads "running", and a finished rerun
looked like none ("no finished rerun after choosing ...", with the page idle and the new content drawn).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlparse

from playwright.sync_api import Download, Locator, Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

IDLE = '[data-testid="stApp"][data-test-script-state="notRunning"]'
RUN_TIMEOUT_MS = 120_000  # a cold model load plus the first embedding of the demo data
SETTLE_MS = 600  # no change in the DOM for this long after a run = drawn
ACTION_TIMEOUT_MS = 20_000  # find and click an element (runs have their own, longer timeout)


# Counts finished script runs in window.__stRuns: every ForwardMsg whose top-level field 6 (script_finished,
# a varint enum) says the run or fragment run finished (0 successfully, 1 compile error, 3 fragment; not 2,
# ended early for a rerun). One ForwardMsg a WebSocket frame (streamlit.runtime.runtime_util). The DOM count of
# transitions out of "running" is kept as window.__stDomRuns for failure messages (it misses batched runs).
RUN_COUNTER_JS = """
(() => {
  window.__stRuns = 0;
  window.__stDomRuns = 0;
  const FINISHED = new Set([0, 1, 3]);
  const scriptFinished = (bytes) => {  // the script_finished value of a serialized ForwardMsg, or -1
    let i = 0;
    const varint = () => {
      let value = 0, shift = 0, byte;
      do { byte = bytes[i++]; value += (byte & 0x7f) * 2 ** shift; shift += 7; } while (byte & 0x80 && i < bytes.length);
      return value;
    };
    while (i < bytes.length) {
      const key = varint(), field = Math.floor(key / 8), wire = key % 8;
      if (wire === 0) { const value = varint(); if (field === 6) { return value; } }
      else if (wire === 2) { const length = varint(); i += length; }  // not i += varint(): i is read first
      else if (wire === 1) { i += 8; }
      else if (wire === 5) { i += 4; }
      else { return -1; }
    }
    return -1;
  };
  window.__stScriptFinished = scriptFinished;  // for tests/e2e/test_run_counter.py
  const Native = window.WebSocket;
  window.WebSocket = class extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener("message", (event) => {
        if (event.data instanceof ArrayBuffer && FINISHED.has(scriptFinished(new Uint8Array(event.data)))) {
          window.__stRuns += 1;
        }
      });
    }
  };
  const observer = new MutationObserver((records) => {
    for (const r of records) {
      if (r.oldValue === "running") { window.__stDomRuns += 1; }
    }
  });
  const start = () => observer.observe(document.documentElement, {
    subtree: true, attributes: true, attributeOldValue: true, attributeFilter: ["data-test-script-state"],
  });
  if (document.documentElement) { start(); } else { document.addEventListener("DOMContentLoaded", start); }
  // For failure messages: the frames the page sent to the server, and its last console errors/warnings
  // (Streamlit logs there when it drops a rerun because it thinks it is disconnected).
  window.__stSent = 0;
  window.__stLog = [];
  const send = Native.prototype.send;
  Native.prototype.send = function (...args) { window.__stSent += 1; return send.apply(this, args); };
  for (const level of ["error", "warn"]) {
    const original = console[level].bind(console);
    console[level] = (...args) => {
      window.__stLog.push(level + ": " + args.map(String).join(" ").slice(0, 200));
      if (window.__stLog.length > 8) { window.__stLog.shift(); }
      original(...args);
    };
  }
})();
"""


def wait_idle(page: Page, timeout_ms: int = RUN_TIMEOUT_MS, settle_ms: int = SETTLE_MS) -> None:
    """Wait until the script has finished, nothing from an earlier run is shown, and the page has settled.

    The frontend draws the last elements of a run shortly after the run ends (lazy components such as
    plotly and metrics), so the page counts as settled once its element count and text length have not
    changed for ``settle_ms`` and no lazy component is still loading (its placeholder is ``stSkeleton``).
    """
    page.wait_for_selector(IDLE, timeout=timeout_ms, state="attached")
    page.wait_for_function(
        """settle => {
            const app = document.querySelector('[data-testid="stApp"]');
            if (!app || app.getAttribute("data-test-script-state") !== "notRunning"
                || document.querySelector('[data-stale="true"], [data-testid="stSkeleton"]')) {
                window.__stSig = null;
                return false;
            }
            const main = document.querySelector('[data-testid="stMain"]');
            const sig = document.querySelectorAll('[data-testid="stElementContainer"]').length + ":"
                + document.querySelectorAll(".js-plotly-plot .main-svg").length + ":"
                + (main ? main.innerText.length : 0);
            const now = performance.now();
            if (window.__stSig !== sig) { window.__stSig = sig; window.__stSince = now; return false; }
            return now - window.__stSince >= settle;
        }""",
        arg=settle_ms,
        timeout=timeout_ms,
        polling=100,
    )


def runs(page: Page) -> int:
    return int(page.evaluate("window.__stRuns || 0"))


def state(page: Page) -> str:
    """What the app is doing, for failure messages."""
    return str(
        page.evaluate(
            """() => {
                const app = document.querySelector('[data-testid="stApp"]');
                return JSON.stringify({
                    url: location.href,
                    script: app && app.getAttribute("data-test-script-state"),
                    runs: window.__stRuns || 0,
                    dom_runs: window.__stDomRuns || 0,
                    frames_sent: window.__stSent || 0,
                    console: window.__stLog || [],
                    stale: document.querySelectorAll('[data-stale="true"]').length,
                    skeletons: document.querySelectorAll('[data-testid="stSkeleton"]').length,
                    exceptions: document.querySelectorAll('[data-testid="stException"]').length,
                });
            }"""
        )
    )


def rerun_after(page: Page, action: Callable[[], object], timeout_ms: int = RUN_TIMEOUT_MS) -> None:
    """Do ``action`` (a widget change) and wait until the rerun it triggers has finished."""
    before = runs(page)
    action()
    try:
        page.wait_for_function("n => (window.__stRuns || 0) > n", arg=before, timeout=timeout_ms)
        wait_idle(page, timeout_ms)
    except PlaywrightTimeoutError:
        raise AssertionError(f"no finished rerun within {timeout_ms / 1000:.0f} s: {state(page)}") from None


def goto(page: Page, url: str) -> None:
    page.goto(url, wait_until="domcontentloaded", timeout=RUN_TIMEOUT_MS)
    try:
        wait_idle(page)
    except PlaywrightTimeoutError:
        raise AssertionError(f"{url} did not finish loading: {state(page)}") from None


def open_page(page: Page, nav_title: str, heading: str) -> None:
    """Open a page through its sidebar link (same session) and wait for its title.

    The link changes the URL at once; a click that lands while the sidebar is being redrawn is repeated.
    A click that lands before the app handles links loads the page as a new document, whose run counter
    starts again at 0: ``window.__navMark`` (set here, gone in a new document) tells the two cases apart.
    """
    link = page.locator('[data-testid="stSidebarNavLink"]', has_text=nav_title).first
    path = urlparse(link.get_attribute("href") or "").path
    before = runs(page)
    page.evaluate("() => { window.__navMark = true; }")
    for _attempt in range(3):
        link.click()
        try:
            page.wait_for_function("p => location.pathname === p", arg=path, timeout=5_000)
            break
        except PlaywrightTimeoutError:
            continue
    try:
        page.wait_for_function(
            "n => (window.__stRuns || 0) > (window.__navMark ? n : 0)", arg=before, timeout=RUN_TIMEOUT_MS
        )
        page.get_by_role("heading", name=heading, exact=False).first.wait_for(timeout=RUN_TIMEOUT_MS)
        wait_idle(page)
    except PlaywrightTimeoutError:
        raise AssertionError(f"page '{nav_title}' did not open: {state(page)}") from None


def nav_titles(page: Page) -> list[str]:
    """Page titles listed in the sidebar navigation (icon ligature text removed)."""
    titles = []
    for link in page.locator('[data-testid="stSidebarNavLink"]').all():
        lines = [x.strip() for x in link.inner_text().splitlines() if x.strip()]
        titles.append(lines[-1] if lines else "")
    return titles


def main(page: Page) -> Locator:
    return page.locator('[data-testid="stMain"]')


def exceptions(page: Page) -> list[str]:
    return [e.inner_text() for e in page.locator('[data-testid="stException"]').all()]


def errors(page: Page) -> list[str]:
    return [e.inner_text().strip() for e in page.locator('[data-testid="stAlertContentError"]').all()]


def assert_clean(page: Page, allowed_errors: int = 0) -> None:
    """No exception box anywhere; at most ``allowed_errors`` error alerts."""
    exc = exceptions(page)
    assert not exc, f"exception shown in the app: {exc[0][:500]}"
    errs = errors(page)
    assert len(errs) <= allowed_errors, f"unexpected error box(es): {errs}"


def chart_count(page: Page, at_least: int = 0, timeout_ms: int = 30_000) -> int:
    """Plotly charts drawn in the main area (an SVG inside each), waiting for ``at_least`` of them."""
    if at_least:
        page.wait_for_function(
            """n => document.querySelectorAll(
                '[data-testid="stMain"] [data-testid="stPlotlyChart"] .js-plotly-plot .main-svg').length >= n""",
            arg=at_least,
            timeout=timeout_ms,
        )
    charts = main(page).locator('[data-testid="stPlotlyChart"]')
    drawn = main(page).locator('[data-testid="stPlotlyChart"] .js-plotly-plot').count()
    assert drawn == charts.count(), f"{charts.count()} plotly chart(s) but only {drawn} drawn"
    return drawn


def metrics(page: Page) -> dict[str, str]:
    """Metric label -> value shown in the main area."""
    out = {}
    for m in main(page).locator('[data-testid="stMetric"]').all():
        label = m.locator('[data-testid="stMetricLabel"]').inner_text().strip()
        out[label] = m.locator('[data-testid="stMetricValue"]').inner_text().strip()
    return out


def captions(page: Page) -> str:
    return " ".join(c.inner_text() for c in main(page).locator('[data-testid="stCaptionContainer"]').all())


def choose_radio(page: Page, label: str, option: str, timeout_ms: int = RUN_TIMEOUT_MS) -> None:
    """Check ``option`` of the main-area radio ``label`` and wait up to ``timeout_ms`` for the run it starts."""
    group = main(page).locator('[data-testid="stRadio"]', has_text=label).first
    choice = group.locator('[data-testid="stRadioOption"]', has_text=option).first
    radio_input = choice.locator("input")
    before = runs(page)
    for _attempt in range(3):
        choice.click()
        try:  # the locator, not an element handle: the option may be redrawn after the click
            expect(radio_input).to_be_checked(timeout=5_000)
            break
        except AssertionError:
            continue
    else:
        raise AssertionError(f"could not choose {option!r} in {label!r}: {state(page)}")
    try:
        page.wait_for_function("n => (window.__stRuns || 0) > n", arg=before, timeout=timeout_ms)
        wait_idle(page, timeout_ms)
    except PlaywrightTimeoutError:
        raise AssertionError(f"no finished rerun after choosing {option!r}: {state(page)}") from None


def listbox_option(page: Page, text: str) -> Locator:
    """The open dropdown's option whose text is exactly ``text``."""
    pattern = re.compile(rf"^\s*{re.escape(text)}\s*$")
    return page.locator('[role="option"]').filter(has_text=pattern).first


def _open_combobox(box: Locator, text: str) -> None:
    """Open a react-aria combobox filtered to ``text`` (typing works whether or not it already has focus)."""
    field = box.locator('input[role="combobox"]')
    field.click()
    field.fill(text)


def _select(page: Page, box: Locator, option: str, chosen: Callable[[], bool]) -> None:
    """Open ``box``, click ``option`` until ``chosen()`` confirms it (a click can land while the list is
    redrawn), then wait for the rerun it triggers."""
    before = runs(page)
    for _attempt in range(3):
        _open_combobox(box, option)
        listbox_option(page, option).click()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not chosen():
            page.wait_for_timeout(100)
        if chosen():
            break
        page.keyboard.press("Escape")
    else:
        raise AssertionError(f"could not choose {option!r}: {state(page)}")
    try:
        page.wait_for_function("n => (window.__stRuns || 0) > n", arg=before, timeout=RUN_TIMEOUT_MS)
        wait_idle(page)
    except PlaywrightTimeoutError:
        raise AssertionError(f"no finished rerun after choosing {option!r}: {state(page)}") from None


def choose_select(scope: Locator, page: Page, label: str, option: str) -> None:
    """Pick ``option`` in the selectbox labelled ``label`` inside ``scope`` (react-aria combobox)."""
    box = scope.locator('[data-testid="stSelectbox"]', has_text=label).first
    field = box.locator('input[role="combobox"]')
    _select(page, box, option, lambda: field.input_value() == option and field.get_attribute("aria-expanded") != "true")


def add_to_multiselect(scope: Locator, page: Page, label: str, option: str) -> None:
    """Add ``option`` to the multiselect labelled ``label`` inside ``scope``, then close its list."""
    box = scope.locator('[data-testid="stMultiSelect"]', has_text=label).first
    tag = box.locator(f'[data-tag][aria-label="{option}"]')
    _select(page, box, option, lambda: tag.count() > 0)
    page.keyboard.press("Escape")


def type_text(page: Page, label: str, text: str) -> None:
    """Type into the main-area text input labelled ``label`` and commit it with Enter."""
    box = main(page).locator('[data-testid="stTextInput"]', has_text=label).first.locator("input")
    box.fill(text)
    rerun_after(page, lambda: box.press("Enter"))


def upload(page: Page, path: Path, uploader_index: int = 0) -> None:
    """Upload a file through the uploader's file chooser input."""
    inp = main(page).locator('[data-testid="stFileUploader"] input[type="file"]').nth(uploader_index)
    rerun_after(page, lambda: inp.set_input_files(str(path)))


def click_button(page: Page, text: str, timeout_ms: int = RUN_TIMEOUT_MS) -> None:
    button = main(page).locator('[data-testid="stButton"] button', has_text=text).first
    rerun_after(page, button.click, timeout_ms)


def download(page: Page, text: str) -> bytes:
    """Click a download button and return the downloaded bytes."""
    button = main(page).locator('[data-testid="stDownloadButton"] button', has_text=text).first
    with page.expect_download(timeout=30_000) as info:
        button.click()
    dl: Download = info.value
    return Path(dl.path()).read_bytes()


def screenshot(page: Page, path: Path) -> Path:
    """Full-page PNG: the viewport is stretched to the main area's scroll height, then restored."""
    path.parent.mkdir(parents=True, exist_ok=True)
    size = page.viewport_size or {"width": 1400, "height": 1000}
    height = page.evaluate(
        """() => Math.max(...[...document.querySelectorAll(
            '[data-testid="stMain"], [data-testid="stAppViewContainer"], [data-testid="stMainBlockContainer"]')]
            .map(e => e.scrollHeight), document.body.scrollHeight)"""
    )
    page.set_viewport_size({"width": size["width"], "height": min(max(int(height), size["height"]), 8000)})
    try:
        wait_idle(page)
        page.screenshot(path=str(path), full_page=True)
    finally:
        page.set_viewport_size(size)
    return path


def number(text: str) -> float:
    """The first number in a metric value like '76.5' or 'mean 0.412'."""
    m = re.search(r"-?\d+(?:\.\d+)?", text.replace("−", "-"))
    assert m, f"no number in {text!r}"
    return float(m.group())
