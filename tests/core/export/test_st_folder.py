"""A calibrated sentence-transformers folder: loaded by plain sentence-transformers in a process where Isoscope is
not importable, it gives Isoscope's calibrated vectors; what cannot be exported honestly is refused."""

from __future__ import annotations

import json

import numpy as np
import pytest

from isoscope.calibrate import make_calibrator
from isoscope.data import load_corpus
from isoscope.encode.embed import encode
from isoscope.encode.manifest import MANIFEST_FILE
from isoscope.encode.models import load_encoder
from isoscope.errors import InputError
from isoscope.export.st_folder import export_sentence_transformers
from isoscope.paths import DEMO_CORPUS
from tests.core.export.isolated import run_without_isoscope
from tests.tiny_models import tiny_bert
from tests.tiny_st_models import save_recipe

ENCODE = """
import numpy as np
from sentence_transformers import SentenceTransformer
for folder, out in ARGS["folders"]:
    model = SentenceTransformer(folder, device="cpu", local_files_only=True)
    np.save(out, model.encode(ARGS["texts"], convert_to_numpy=True))
"""


def _texts(n: int, start: int = 0) -> list[str]:
    return load_corpus(str(DEMO_CORPUS)).texts[start : start + n]


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def _round_trip(tmp_path, cases):
    """cases: (name, encoder, method, fit texts); every export encoded by sentence-transformers alone."""
    queries = _texts(24, start=1000)  # not the fit texts
    want, folders = {}, []
    for name, enc, method, fit in cases:
        X = encode(enc, fit)  # (n, d) the model's own pooling
        cal = make_calibrator(method).fit(X)
        report = export_sentence_transformers(enc, cal, tmp_path / name, fit_vectors=X, corpus="demo")
        assert report.n_fit == len(fit) and report.method == method
        want[name] = cal.transform(encode(enc, queries))  # Isoscope's calibrated vectors (n, k)
        folders.append([str(tmp_path / name), str(tmp_path / f"{name}.npy")])
    run_without_isoscope(ENCODE, {"folders": folders, "texts": queries}, cwd=tmp_path)
    for name, _, _, _ in cases:
        got = np.load(tmp_path / f"{name}.npy")
        assert got.shape == want[name].shape
        # float32 forward passes in another process: cosines equal to ~1e-7; the bar is 1 - 1e-5
        assert _cosines(got, want[name]).min() >= 1 - 1e-5, name
    return want


def test_tiny_recipe_round_trip_without_isoscope(tmp_path):
    """The gate's round trip: CLS -> Dense 64->32 (tanh) -> Normalize, then the fix's Dense and Normalize."""
    bge = load_encoder(str(save_recipe("bge", tmp_path / "src-bge")))
    _round_trip(tmp_path, [("bge", bge, "sn+abtt:2", _texts(200))])
    readme = (tmp_path / "bge" / "README.md").read_text()
    assert "sn+abtt:2" in readme and "avg_cosine" in readme and "200 texts" in readme
    modules = [m["type"].rsplit(".", 1)[-1] for m in json.loads((tmp_path / "bge" / "modules.json").read_text())]
    assert modules == ["Transformer", "Pooling", "Dense", "Normalize", "Dense", "Normalize"]


def test_tiny_models_round_trip_without_isoscope(tmp_path):
    prompted = load_encoder(str(save_recipe("prompted", tmp_path / "src-prompted")))  # mean, prompts, no Normalize
    fit = _texts(200)
    _round_trip(
        tmp_path,
        [
            ("prompted", prompted, "whitening:16", fit),
            ("bare", tiny_bert(), "centre", fit),  # a bare transformers model: Transformer + Pooling(mean)
        ],
    )


def test_embedded_model_round_trip_and_reimport(tmp_path, encoder):
    fit = _texts(300)
    want = _round_trip(tmp_path, [("minilm", encoder, "whitening:64", fit)])
    again = load_encoder(str(tmp_path / "minilm"))  # Isoscope reads its own export as a model with a recipe
    got = encode(again, _texts(24, start=1000))
    assert _cosines(got, want["minilm"]).min() >= 1 - 1e-5


def test_too_few_texts_and_wrong_dimension_are_refused(tmp_path):
    enc = tiny_bert()  # hidden 32
    X = encode(enc, _texts(40))
    with pytest.raises(InputError, match="not exported: whitening was fitted on 40 vectors") as err:
        export_sentence_transformers(enc, make_calibrator("whitening").fit(X), tmp_path / "a", fit_vectors=X)
    assert "\n" not in str(err.value)
    other = np.random.default_rng(0).normal(size=(100, 16))
    with pytest.raises(InputError, match="fitted on 16-dimensional vectors but the model's recipe gives 32"):
        export_sentence_transformers(enc, make_calibrator("centre").fit(other), tmp_path / "b", fit_vectors=other)
    with pytest.raises(InputError, match="--format onnx"):
        export_sentence_transformers(enc, make_calibrator("flow"), tmp_path / "c", fit_vectors=X)
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


@pytest.mark.parametrize("damage", ["edit", "delete", "add"])
def test_damaged_export_is_refused_on_reimport(tmp_path, damage):
    enc = tiny_bert()
    X = encode(enc, _texts(50))
    out = tmp_path / "fixed"
    export_sentence_transformers(enc, make_calibrator("centre").fit(X), out, fit_vectors=X)
    load_encoder(str(out))  # intact: loads
    dense = next(out.glob("*_Dense")) / "model.safetensors"
    if damage == "edit":
        blob = bytearray(dense.read_bytes())
        blob[-1] ^= 1
        dense.write_bytes(bytes(blob))
    elif damage == "delete":
        dense.unlink()
    else:
        (out / "extra.safetensors").write_bytes(b"x")
    with pytest.raises(InputError, match=MANIFEST_FILE.replace(".", r"\.") + "|missing") as err:
        load_encoder(str(out))
    assert "\n" not in str(err.value)
