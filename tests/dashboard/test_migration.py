"""The Migration page on the demo task with two tiny real models of different widths (saved folders, never mocks):
the run, the verdict, the table with the label-free and labelled measures side by side, the losing queries, the
per-cluster table, the adapter's download that loads back; a model B that does not load is one line."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from tests.dashboard.conftest import open_page


@pytest.fixture(scope="module")
def tiny_folders(tmp_path_factory) -> tuple[Path, Path]:
    """A (hidden 32) and B (hidden 48): seeded random BERTs saved as folders the sidebar and the page load."""
    from tests.tiny_models import tiny_bert

    root = tmp_path_factory.mktemp("tiny")
    folders = []
    for name, seed, hidden in (("a", 0, 32), ("b", 1, 48)):
        enc = tiny_bert(seed, hidden_size=hidden)
        enc.model.save_pretrained(root / name)
        enc.tokenizer.save_pretrained(root / name)
        folders.append(root / name)
    return folders[0], folders[1]


def test_a_run_shows_the_verdict_the_tables_and_a_working_download(app: AppTest, tiny_folders) -> None:
    from isoscope.migrate.adapters import Adapter

    a, b = tiny_folders
    at = open_page(app, "migration")
    at.text_input(key="model_input").set_value(str(a)).run()
    at.text_input(key="mig_new").set_value(str(b)).run()
    at.toggle(key="mig_curve").set_value(False).run()
    at.button(key="mig_run").click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    verdicts = [m.value for m in (*at.info, *at.warning, *at.success)]
    assert any(v.startswith(("**stay**", "**re-embed**", "**migrate**")) for v in verdicts), verdicts
    table = next(d.value for d in at.dataframe if "agreement@10" in d.value.columns)
    assert list(table["system"][:2]) == ["old", "new"] and "ndcg@10" in table.columns
    assert {"procrustes (new->legacy)", "ridge (old->new)"} <= set(table["system"])
    losers = next(d.value for d in at.dataframe if "change" in d.value.columns)
    assert len(losers) == 10 and (losers["change"].diff().dropna() >= 0).all()
    clusters = next(d.value for d in at.dataframe if "mean cosine" in d.value.columns)
    assert len(clusters) >= 2 and (clusters["mean cosine"].diff().dropna() >= 0).all()  # the worst first
    data = at.get("download_button")[0].proto.url  # the zip is served by the media manager
    assert data
    result = at.session_state["migration_result"]
    rec = result.recommendation
    payload = _zip_of(result, rec.method, rec.direction)
    with zipfile.ZipFile(io.BytesIO(payload)) as zf, _folder(zf) as folder:
        loaded = Adapter.load(folder / "adapter")
    X = np.random.default_rng(0).normal(size=(3, 32 if rec.direction == "old->new" else 48))
    np.testing.assert_allclose(loaded.transform(X), result.adapter().transform(X), rtol=1e-6, atol=1e-6)


def test_a_model_b_that_does_not_load_is_one_line(app: AppTest, tmp_path: Path) -> None:
    at = open_page(app, "migration")
    at.text_input(key="mig_new").set_value(str(tmp_path / "no-such-model")).run()
    assert not at.exception, at.exception
    assert len(at.error) == 1 and "\n" not in at.error[0].value.strip()


def _zip_of(result, method, direction) -> bytes:
    from isoscope.dashboard.services.migration import adapter_zip

    return adapter_zip(result, method, direction)


class _folder:
    """The zip extracted into a temporary folder (a context manager)."""

    def __init__(self, zf: zipfile.ZipFile) -> None:
        import tempfile

        self.tmp = tempfile.TemporaryDirectory()
        zf.extractall(self.tmp.name)

    def __enter__(self) -> Path:
        return Path(self.tmp.name)

    def __exit__(self, *exc: object) -> None:
        self.tmp.cleanup()
