"""examples/notebook.ipynb runs end to end on a real Jupyter kernel (nbclient + ipykernel), offline, and its
executed outputs hold the HTML cards, the map widget and the report it writes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import ROOT

NOTEBOOK = ROOT / "examples" / "notebook.ipynb"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


@pytest.mark.slow
def test_the_example_notebook_runs_and_shows_cards(tmp_path: Path, monkeypatch) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    pytest.importorskip("jscatter")
    # the session's ISOSCOPE_CACHE (conftest): the demo's embeddings are computed once for every test
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("OMP_NUM_THREADS", os.environ.get("OMP_NUM_THREADS", "1"))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(nb, kernel_name="python3", timeout=900, resources={"metadata": {"path": tmp_path}})
    client.execute()  # raises CellExecutionError on the first failing cell
    code = [c for c in nb.cells if c.cell_type == "code"]
    errors = [o for c in code for o in c.outputs if o.output_type == "error"]
    assert not errors
    html = [o["data"]["text/html"] for c in code for o in c.outputs if "text/html" in o.get("data", {})]
    cards = [h for h in html if "isoscope-card" in h]
    kinds = {kind for h in cards for kind in ("space", "geometry", "comparison", "sts") if f"isoscope-card-{kind}" in h}
    assert kinds == {"space", "geometry", "comparison", "sts"}, kinds
    widgets = [o for c in code for o in c.outputs if WIDGET_VIEW in o.get("data", {})]
    assert len(widgets) >= 2  # the map and the two linked maps
    report = tmp_path / "demo-report.html"
    assert report.stat().st_size > 1e6 and 'id="made"' in report.read_text(encoding="utf-8")


def test_the_notebook_intro_states_the_demo_corpus_size() -> None:
    """The intro's "N sentences in K topics" are the shipped demo corpus's own counts, read from the data."""
    import json
    import re

    from isoscope.data import load_corpus
    from isoscope.paths import DEMO_CORPUS

    intro = "".join(json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"][0]["source"])
    found = re.search(r"\(([\d,]+) sentences in (\d+) topics\)", intro)
    assert found, intro
    corpus = load_corpus(DEMO_CORPUS)
    topics = {str(t) for t in corpus.meta["topic"]}
    assert int(found.group(1).replace(",", "")) == len(corpus.texts)
    assert int(found.group(2)) == len(topics)
