"""``isoscope app vectors.parquet --vector-column emb --text-column text`` in a real browser: the app opens with
that space loaded, and the pages use it."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from isoscope.data import load_corpus
from isoscope.paths import DEMO_CORPUS
from tests.e2e import browser as b
from tests.e2e.conftest import VIEWPORT, start_server, stop_server


def test_launch_on_a_vectors_file(browser, tmp_path) -> None:
    corpus = load_corpus(DEMO_CORPUS)
    rng = np.random.default_rng(0)
    vectors = (rng.standard_normal((len(corpus), 32)) + 2.0).astype(np.float32)  # (n, 32): not the model's 384
    emb = pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), 32)
    other = pa.array([[0.0, 1.0]] * len(corpus), pa.list_(pa.float32()))  # a second list column: the option picks
    path = tmp_path / "mine.parquet"
    pq.write_table(pa.table({"emb": emb, "other": other, "text": corpus.texts}), path)

    args = (str(path), "--vector-column", "emb", "--text-column", "text")
    server = start_server(tmp_path / "space.log", {"ISOSCOPE_CACHE": str(tmp_path / "cache")}, args)
    context = browser.new_context(viewport=VIEWPORT)
    context.add_init_script(b.RUN_COUNTER_JS)
    try:
        page = context.new_page()
        page.set_default_timeout(b.ACTION_TIMEOUT_MS)
        b.goto(page, f"{server.url}/anisotropy")
        page.get_by_role("heading", name="Anisotropy").first.wait_for(timeout=b.RUN_TIMEOUT_MS)
        b.wait_idle(page)
        b.assert_clean(page)
        sidebar = page.locator('[data-testid="stSidebar"]')
        option = sidebar.locator('[data-testid="stRadioOption"]', has_text="Vectors given to isoscope app").first
        assert option.locator("input").is_checked()
        n = len(corpus)
        assert f"mine.parquet:emb · {n:,} vectors · d = 32" in sidebar.inner_text()
        assert f"The space's {n:,} rows, from mine.parquet:emb." in b.captions(page)
        heading = b.main(page).get_by_role("heading", name=f"Isotropy metrics (mine.parquet:emb, {n:,} texts)")
        heading.first.wait_for()
        assert b.chart_count(page, at_least=2) >= 2  # cosine histogram and spectrum of the file's vectors

        b.goto(page, f"{server.url}/pooling")  # a new session: the launched space again
        page.get_by_role("heading", name="Pooling explorer").first.wait_for(timeout=b.RUN_TIMEOUT_MS)
        b.assert_clean(page)
        assert "needs the model itself" in b.main(page).inner_text()
    finally:
        context.close()
        stop_server(server)
    assert not server.tracebacks(), server.tracebacks()[0]
