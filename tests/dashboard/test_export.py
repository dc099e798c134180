"""AppTest: "Download the fixed model" on the Calibration and Retrieval pages hands over a zip that plain
sentence-transformers loads, giving the page's calibrated vectors."""

from __future__ import annotations

import io
import warnings
import zipfile

import numpy as np
import pytest
from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage
from streamlit.testing.v1 import AppTest

from isoscope.calibrate import make_calibrator
from isoscope.encode.embed import encode
from tests.dashboard.conftest import open_page


@pytest.fixture()
def downloads(monkeypatch) -> dict[str, bytes]:
    """What the app hands to the browser, by file name: a spy on Streamlit's media storage (it still stores)."""
    seen: dict[str, bytes] = {}
    real = MemoryMediaFileStorage.load_and_get_id

    def spy(self, path_or_data, mimetype, kind, filename=None):
        if filename and isinstance(path_or_data, bytes):
            seen[filename] = path_or_data
        return real(self, path_or_data, mimetype, kind, filename)

    monkeypatch.setattr(MemoryMediaFileStorage, "load_and_get_id", spy)
    return seen


def _load_zip(data: bytes, tmp_path):
    from sentence_transformers import SentenceTransformer

    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        names = zf.namelist()
        zf.extractall(tmp_path)
    top = {n.split("/")[0] for n in names}
    assert len(top) == 1 and "modules.json" in {n.split("/", 1)[1] for n in names}
    folder = tmp_path / top.pop()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return SentenceTransformer(str(folder), device="cpu"), folder


def test_calibration_page_downloads_a_working_fixed_model(app: AppTest, downloads, tmp_path, encoder) -> None:
    at = open_page(app, "calibration")
    at.selectbox(key="calp_method").set_value("sn").run()
    at.button(key="calp_fit").click().run()
    assert not at.exception, at.exception
    at.button(key="calp_fixed").click().run()
    assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
    data = downloads["fixed-sn.zip"]
    model, folder = _load_zip(data, tmp_path)
    assert "`sn`" in (folder / "README.md").read_text()
    texts = ["A cat sat on the mat.", "Stock markets fell sharply today.", "The recipe needs two eggs."]
    got = model.encode(texts)  # (3, 384)
    assert got.shape == (3, 384) and np.isfinite(got).all()
    assert '"n_fit"' in (folder / "isoscope-export.json").read_text()


def test_retrieval_page_downloads_the_inspected_fix(app: AppTest, downloads, tmp_path, encoder) -> None:
    at = open_page(app, "retrieval")
    at.multiselect(key="ret_fixes").set_value(["centre"]).run()
    at.button(key="ret_run").click().run()
    assert not at.exception, at.exception
    at.button(key="ret_fixed").click().run()
    assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
    model, _ = _load_zip(downloads["fixed-centre.zip"], tmp_path)
    from isoscope.dashboard.services.retrieval import demo_task  # its documents are the fit texts

    docs = list(demo_task().documents)
    want = make_calibrator("centre").fit(encode(encoder, docs)).transform(encode(encoder, docs[:5]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = model.encode(docs[:5])
    cos = (got * want).sum(1) / (np.linalg.norm(got, axis=1) * np.linalg.norm(want, axis=1))
    assert cos.min() >= 1 - 1e-4  # the page embeds with the fp32 engine ONNX Runtime runs (within 1e-4)
