"""``isoscope export``: vectors in their own format, a FAISS index with the fitted map as pre-transform, a
sentence-transformers folder from a model; refusals in one line."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from isoscope.calibrate import make_calibrator
from isoscope.commands.export import FORMATS
from isoscope.data import load_corpus
from isoscope.encode.embed import encode
from isoscope.encode.models import load_encoder
from isoscope.export.run import EXPORT_FORMATS
from isoscope.neighbours.exact import exact_topk
from isoscope.paths import DEMO_CORPUS
from tests.core.commands.cli_checks import exit_status, one_error_line
from tests.tiny_st_models import save_recipe


def _cone(n: int = 300, d: int = 24, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(n, d)) * np.logspace(0, -1, d) + 2.0).astype(np.float32)  # (n, d) a narrow cone


def _unit(X: np.ndarray) -> np.ndarray:
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def test_formats_match_the_library():
    assert FORMATS == EXPORT_FORMATS


def test_parquet_keeps_every_other_column(cli, tmp_path, capsys):
    X = _cone()
    frame = pd.DataFrame({"id": np.arange(len(X)) * 7, "emb": list(X), "text": [f"t{i}" for i in range(len(X))]})
    frame.to_parquet(tmp_path / "docs.parquet")
    assert cli(["export", "--vectors", f"{tmp_path / 'docs.parquet'}:emb", "--calibrate", "sn+abtt:2",
                "--out", str(tmp_path / "fixed.parquet"), "--json"]) == 0  # fmt: skip
    result = json.loads(capsys.readouterr().out)
    assert result["format"] == "vectors" and result["n_fit"] == len(X) and result["dim_out"] == 24
    assert result["after"]["avg_cosine"] < result["before"]["avg_cosine"]
    out = pd.read_parquet(tmp_path / "fixed.parquet")
    assert list(out.columns) == ["id", "emb", "text"]
    assert (out["id"] == frame["id"]).all() and (out["text"] == frame["text"]).all()
    want = make_calibrator("sn+abtt:2").fit(X).transform(X)
    np.testing.assert_array_equal(np.stack(out["emb"].to_numpy()).astype(np.float32), want)  # the same arithmetic


def test_npy_in_npy_out(cli, tmp_path, capsys):
    X = _cone(d=12)
    np.save(tmp_path / "v.npy", X)
    assert cli(["export", "--vectors", str(tmp_path / "v.npy"), "--calibrate", "whitening:6",
                "--out", str(tmp_path / "w.npy")]) == 0  # fmt: skip
    assert "whitening:6 (12 -> 6 dims)" in capsys.readouterr().out
    np.testing.assert_array_equal(np.load(tmp_path / "w.npy"), make_calibrator("whitening:6").fit(X).transform(X))


@pytest.mark.parametrize("method", ["whitening", "sn+abtt:2", "centre"])
def test_faiss_index_searches_raw_vectors_in_the_fixed_space(cli, tmp_path, capsys, method):
    import faiss

    X = _cone(n=400)
    np.save(tmp_path / "v.npy", X)
    assert cli(["export", "--vectors", str(tmp_path / "v.npy"), "--calibrate", method, "--faiss",
                "--out", str(tmp_path / "v.faiss")]) == 0  # fmt: skip
    index = faiss.read_index(str(tmp_path / "v.faiss"))
    queries = _cone(n=30, seed=1)  # raw query vectors, never seen by the fit
    _, got = index.search(queries, 10)
    cal = make_calibrator(method).fit(X)
    _, want = exact_topk(_unit(cal.transform(X)), _unit(cal.transform(queries)), 10)  # exact cosine, calibrated
    assert (got == want).all()


def test_model_folder_from_a_tiny_sentence_transformers_model(cli, tmp_path, capsys):
    from sentence_transformers import SentenceTransformer

    folder = save_recipe("bge", tmp_path / "bge")
    texts = load_corpus(str(DEMO_CORPUS)).texts[:120]
    (tmp_path / "fit.txt").write_text("\n".join(texts) + "\n")
    assert cli(["export", "--model", str(folder), "--calibrate", "sn", "--fit-on", str(tmp_path / "fit.txt"),
                "--out", str(tmp_path / "fixed"), "--json", "--quiet"]) == 0  # fmt: skip
    result = json.loads(capsys.readouterr().out)
    assert result["format"] == "sentence-transformers" and result["n_fit"] == 120 and result["pooling"] == "model"
    enc = load_encoder(str(folder))
    want = make_calibrator("sn").fit(encode(enc, texts)).transform(encode(enc, texts[:10]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = SentenceTransformer(str(tmp_path / "fixed"), device="cpu").encode(texts[:10])
    assert (np.sum(_unit(got) * _unit(want), axis=1) >= 1 - 1e-5).all()


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["--calibrate", "flow", "--fit-on", "{fit}"], "--format onnx"),
        (["--calibrate", "whitening", "--fit-on", "{fit}"], "not exported: whitening was fitted on 50"),
        (["--calibrate", "centre", "--fit-on", "{fit}", "--faiss"], "--faiss indexes a vectors file"),
        (["--calibrate", "centre", "--fit-on", "{fit}", "--int8"], "--int8 quantises an ONNX export"),
        (["--calibrate", "centre"], "give --fit-on"),
        (["--calibrate", "centre", "--vectors", "{npy}", "--fit-on", "{fit}"], "drop --fit-on"),
        (["--calibrate", "centre", "--vectors", "{npy}"], "write the calibrated vectors as .npy"),
    ],
)
def test_refusals_are_one_line(cli, tmp_path, capsys, argv, match):
    (tmp_path / "fit.txt").write_text("\n".join(load_corpus(str(DEMO_CORPUS)).texts[:50]) + "\n")
    np.save(tmp_path / "v.npy", _cone())
    args = [a.format(fit=tmp_path / "fit.txt", npy=tmp_path / "v.npy") for a in argv]
    assert exit_status(cli, ["export", *args, "--out", str(tmp_path / "out.bin"), "--quiet"]) == 2
    assert match in one_error_line(capsys)


def test_onnx_format_carries_a_flow(cli, tmp_path, capsys):
    import onnxruntime as ort

    folder = save_recipe("bge", tmp_path / "bge")
    texts = load_corpus(str(DEMO_CORPUS)).texts[:100]
    (tmp_path / "fit.txt").write_text("\n".join(texts) + "\n")
    assert cli(["export", "--model", str(folder), "--calibrate", "sn+flow", "--flow-epochs", "1", "--fit-on",
                str(tmp_path / "fit.txt"), "--format", "onnx", "--out", str(tmp_path / "fixed"), "--json",
                "--quiet"]) == 0  # fmt: skip
    result = json.loads(capsys.readouterr().out)
    assert result["format"] == "onnx" and result["method"] == "sn+flow" and result["checks"]["max_rel_error"] >= 0
    enc = load_encoder(str(folder))
    feed = enc.tokenizer(texts[:4], padding=True, return_tensors="np")
    session = ort.InferenceSession(str(tmp_path / "fixed" / "model.onnx"))
    got = session.run(None, {"input_ids": feed["input_ids"], "attention_mask": feed["attention_mask"]})[0]
    assert got.shape == (4, 32) and np.isfinite(got).all()


@pytest.mark.parametrize("suffix", [".feather", ".safetensors"])
def test_arrow_and_safetensors_keep_their_format(cli, tmp_path, capsys, suffix):
    X = _cone(d=10)
    src, out = tmp_path / f"v{suffix}", tmp_path / f"w{suffix}"
    if suffix == ".feather":
        pd.DataFrame({"emb": list(X), "label": np.arange(len(X)) % 3}).to_feather(src)
    else:
        from safetensors.numpy import save_file

        save_file({"embeddings": X}, str(src))
    assert cli(["export", "--vectors", str(src), "--calibrate", "centre", "--out", str(out)]) == 0
    want = make_calibrator("centre").fit(X).transform(X)
    if suffix == ".feather":
        frame = pd.read_feather(out)
        assert list(frame.columns) == ["emb", "label"] and (frame["label"] == np.arange(len(X)) % 3).all()
        got = np.stack(frame["emb"].to_numpy())
    else:
        from safetensors.numpy import load_file

        got = load_file(str(out))["embeddings"]
    np.testing.assert_array_equal(got.astype(np.float32), want)
