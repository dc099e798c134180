"""The map widget in a real JupyterLab: a lasso drawn with the mouse over one of two clusters, and the kernel
reads back exactly that cluster's row ids (through ``observe`` and ``.selection``). No request leaves the
machine: the widget's JavaScript comes from the kernel (jupyter-scatter's bundle), not from a CDN."""

from __future__ import annotations

import itertools
import json
import time

from tests.lab.jupyter import Lab, offline_context, open_notebook, run_cell, wait_for_prompt, write_notebook
from tests.lab.scatter import wait_first_draw, watch_first_draw

SETUP = """\
import json
import numpy as np
import isoscope

rng = np.random.default_rng(0)
X = np.concatenate([rng.normal(-6.0, 1.0, size=(40, 8)), rng.normal(6.0, 1.0, size=(40, 8))])  # two clusters
space = isoscope.Space(X, [f"text {i}" for i in range(80)], name="two clusters", cache=False)
m = space.map(method="pca", height=420)
left = np.flatnonzero(space.project("pca").coords[:, 0] < 0).tolist()  # the cluster on the left of the map
m.observe(lambda rows: open("selection.json", "w").write(json.dumps({"rows": rows.tolist(), "left": left})))
m"""
READ = 'print("SELECTED", json.dumps(m.selection.tolist()))'


def test_a_lasso_in_jupyterlab_comes_back_as_row_ids(lab: Lab, browser) -> None:
    write_notebook(lab.root / "widget.ipynb", (SETUP, READ))
    context, outside = offline_context(browser, lab, {"width": 1400, "height": 1000})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        open_notebook(page, lab, "widget.ipynb")
        watch_first_draw(page, 80)
        run_cell(page, 0)  # the set-up cell: the map is its output
        wait_for_prompt(page, 0, 1)
        wait_first_draw(page, 120_000)  # a frame with all 80 points
        canvas = page.locator(".jp-OutputArea-output canvas").first
        box = canvas.bounding_box()
        assert box and box["width"] > 200 and box["height"] > 200, box
        # the lasso tool from the widget's toolbar, then a drag around the left half of the map, inside the canvas
        buttons = page.evaluate(
            "[...document.querySelectorAll('.jp-OutputArea-output button')].map(b => "
            "(b.title || b.getAttribute('aria-label') || b.textContent || '').trim())"
        )
        lasso = next((i for i, label in enumerate(buttons) if "lasso" in label.lower()), 1)
        page.locator(".jp-OutputArea-output button").nth(lasso).click()
        x0, x1 = box["x"] + box["width"] * 0.08, box["x"] + box["width"] * 0.5
        y0, y1 = box["y"] + box["height"] * 0.05, box["y"] + box["height"] * 0.95
        under = page.evaluate(f"document.elementFromPoint({x0}, {y0})?.outerHTML.slice(0, 120)")
        path = [(x0, y0), (x1, y0), (x1, y1), (x0, y1), (x0, y0 + 4)]
        page.mouse.move(*path[0])
        page.mouse.down()
        for (ax, ay), (bx, by) in itertools.pairwise(path):
            for t in range(1, 13):
                page.mouse.move(ax + (bx - ax) * t / 12, ay + (by - ay) * t / 12)
                page.wait_for_timeout(25)  # regl-scatterplot keeps a lasso point per ~10 ms of movement
        page.mouse.up()
        chosen = lab.root / "selection.json"
        deadline = time.monotonic() + 30
        while not chosen.exists() and time.monotonic() < deadline:
            time.sleep(0.25)
        assert chosen.exists(), (
            f"the kernel's observer never saw a selection (buttons {buttons}, the lasso began on {under})"
        )
        got = json.loads(chosen.read_text())
        assert got["rows"] == got["left"] and len(got["rows"]) == 40, got
        # the same ids from the widget's .selection in a later cell
        run_cell(page, 1)
        output = page.locator(".jp-OutputArea-output", has_text="SELECTED").first
        output.wait_for(timeout=60_000)
        printed = json.loads(output.inner_text().split("SELECTED", 1)[1].strip())
        assert printed == got["left"]
    finally:
        page.screenshot(path=str(lab.log.with_name("page.png")))  # kept next to the server's log, for a failure
        context.close()
    assert not outside, outside[:5]
    assert not errors, errors[:5]
