"""Adapters taken home (issue 53.4): each export, read in a process where Isoscope cannot be imported (FAISS, ONNX
Runtime, sentence-transformers alone), maps as ``adapter.transform`` does, to 1e-5 relative L2 per row; what
has no exact form is refused in one line, and a refused or failed export leaves nothing behind."""

from __future__ import annotations

import json

import numpy as np
import pytest

from isoscope.data import load_corpus
from isoscope.encode.embed import encode
from isoscope.encode.manifest import MANIFEST_FILE, read_manifest
from isoscope.encode.models import load_encoder
from isoscope.encode.precision import FP32_ENGINE_TOLERANCE
from isoscope.errors import InputError
from isoscope.migrate.adapters import Adapter, unit_rows
from isoscope.migrate.export import TOLERANCE, export_adapter
from isoscope.migrate.methods import make_adapter
from isoscope.paths import DEMO_CORPUS
from tests.core.export.isolated import run_without_isoscope
from tests.tiny_st_models import save_recipe

N, D, E = 600, 24, 32

VECTORS = """
import numpy as np
x = np.load(ARGS["queries"])
for kind, folder, out in ARGS["exports"]:
    if kind == "faiss":
        import faiss
        pre = faiss.read_index(folder + "/adapter.faiss")
        y = np.ascontiguousarray(x, dtype="float32")
        for i in range(pre.chain.size()):
            y = faiss.downcast_VectorTransform(pre.chain.at(i)).apply(y)
        pre.add(x)  # the pre-transform maps what is added: the inner index holds the mapped rows
        assert np.array_equal(pre.index.reconstruct_n(0, len(x)), y)
    else:
        import onnxruntime as ort
        y = ort.InferenceSession(folder + "/adapter.onnx").run(None, {"vectors": x})[0]
    np.save(out, y)
assert "torch" not in sys.modules, "torch was imported"
"""

TEXTS = """
import json, numpy as np
for kind, folder, out in ARGS["exports"]:
    if kind == "st":
        from sentence_transformers import SentenceTransformer
        y = SentenceTransformer(folder, device="cpu", local_files_only=True).encode(ARGS["texts"])
    else:
        import onnxruntime as ort
        from tokenizers import Tokenizer
        cfg = json.load(open(folder + "/isoscope-onnx.json"))
        tok = Tokenizer.from_file(folder + "/tokenizer.json")
        tok.enable_truncation(cfg["max_length"])
        tok.enable_padding(pad_id=cfg["pad_id"], pad_token=cfg["pad_token"], direction=cfg["padding_side"])
        enc = tok.encode_batch([cfg["prompt"] + t for t in ARGS["texts"]])
        feed = {"input_ids": np.array([e.ids for e in enc], np.int64),
                "attention_mask": np.array([e.attention_mask for e in enc], np.int64)}
        y = ort.InferenceSession(folder + "/model.onnx").run(None, feed)[0]
    np.save(out, y)
"""


def _rel(got: np.ndarray, want: np.ndarray) -> float:
    return float((np.linalg.norm(got - want, axis=1) / np.linalg.norm(want, axis=1)).max())


@pytest.fixture(scope="module")
def pairs() -> tuple[np.ndarray, np.ndarray]:
    """Old vectors X (anisotropic unit rows, as sentence vectors are) and new Y = X through an affine map plus
    noise, in another dimension."""
    rng = np.random.default_rng(0)
    X = unit_rows(rng.normal(size=(N, D)) * np.linspace(2.0, 0.2, D) + 1.5, "X")
    Y = X @ rng.normal(size=(D, E)) + 0.3 + 0.05 * rng.normal(size=(N, E))
    return X.astype(np.float32), Y.astype(np.float32)


@pytest.fixture(scope="module")
def fitted(pairs) -> dict[str, Adapter]:
    """Every adapter fitted once on the pairs (X -> Y)."""
    X, Y = pairs
    methods = ("procrustes", "ridge", "lowrank:8", "ridge:procrustes", "mlp", "local:3")
    return {m: make_adapter(m).fit(X, Y) for m in methods}


def test_vector_exports_map_as_isoscope_does_without_isoscope(tmp_path, pairs, fitted):
    X, _ = pairs
    queries = (X[:200] + 0.01 * np.random.default_rng(1).normal(size=(200, D))).astype(np.float32)  # unseen rows
    np.save(tmp_path / "queries.npy", queries)
    cases = [("procrustes", "faiss"), ("ridge", "faiss"), ("lowrank:8", "faiss"), ("ridge:procrustes", "onnx")]
    cases += [("mlp", "onnx"), ("local:3", "onnx")]
    want, exports = {}, []
    for method, fmt in cases:
        adapter = fitted[method]
        name = f"{method.replace(':', '-')}-{fmt}"
        report = export_adapter(adapter, tmp_path / name, format=fmt, probe=X, direction="old->new")
        assert report.checks["max_rel_error"] <= TOLERANCE and report.n_pairs == N and report.dim_out == E
        want[name] = adapter.transform(queries)  # (200, E) Isoscope's mapping
        exports.append([fmt, str(tmp_path / name), str(tmp_path / f"{name}.npy")])
    run_without_isoscope(VECTORS, {"queries": str(tmp_path / "queries.npy"), "exports": exports}, cwd=tmp_path)
    for name, w in want.items():
        # float32 arithmetic of a map whose measured condition is ~1.3 here: errors ~1e-7; the bar is 1e-5
        assert _rel(np.load(tmp_path / f"{name}.npy"), w) <= TOLERANCE, name
    doc = read_manifest(tmp_path / "mlp-onnx")  # every file checksummed, the adapter itself among them
    assert {"adapter.onnx", "adapter.json", "adapter.safetensors", "README.md"} <= set(doc["files"])
    assert doc["provenance"]["method"] == "mlp" and doc["provenance"]["direction"] == "old->new"
    again = Adapter.load(tmp_path / "local-3-onnx")  # the folder is an adapter folder too (migrate apply reads it)
    assert np.array_equal(again.transform(queries), want["local-3-onnx"])
    readme = (tmp_path / "ridge-faiss" / "README.md").read_text()
    assert "old -> new" in readme and "Map every stored vector" in readme and "max_rel_error" in readme


@pytest.fixture(scope="module")
def two_models(tmp_path_factory):
    """new -> legacy on two tiny models of different widths: the new model B (BERT, mean pooling, 64 dims) and the
    legacy A (CLS -> Dense 64->32 -> Normalize); (B, A's name, fit texts, B's vectors of them, A's, queries)."""
    root = tmp_path_factory.mktemp("models")
    new = load_encoder(str(save_recipe("prompted", root / "src-new")))
    old = load_encoder(str(save_recipe("bge", root / "src-old", seed=1)))
    corpus = load_corpus(str(DEMO_CORPUS)).texts
    fit, queries = corpus[:300], corpus[1000:1024]
    return new, old.name, fit, encode(new, fit), encode(old, fit), queries  # (300, 64), (300, 32)


def _text_round_trip(tmp_path, two_models, cases):
    """Each (method, format) fitted B -> A, exported with B, run without Isoscope: (Isoscope's, exported, report)."""
    new, old_name, fit, Xb, Xa, queries = two_models
    want, exports, reports = {}, [], {}
    for method, fmt in cases:
        adapter = make_adapter(method).fit(Xb, Xa)
        name = f"{method.replace(':', '-')}-{fmt}"
        reports[name] = export_adapter(
            adapter, tmp_path / name, format="sentence-transformers" if fmt == "st" else "onnx", model=new,
            probe_texts=fit[:16], direction="new->legacy",
            provenance={"old_model": old_name, "new_model": new.name, "new_fingerprint": new.fingerprint},
        )  # fmt: skip
        want[name] = adapter.transform(encode(new, queries))  # (24, 32) Isoscope's mapping of B's vectors
        exports.append([fmt, str(tmp_path / name), str(tmp_path / f"{name}.npy")])
    run_without_isoscope(TEXTS, {"texts": queries, "exports": exports}, cwd=tmp_path)
    return {name: (w, np.load(tmp_path / f"{name}.npy"), reports[name]) for name, w in want.items()}


def test_the_new_models_folder_with_the_adapter_gives_legacy_vectors_without_isoscope(tmp_path, two_models):
    """B's sentence-transformers folder with the adapter appended: the query encoder for A's index."""
    got = _text_round_trip(tmp_path, two_models, [("ridge:procrustes", "st"), ("mlp", "st")])
    for name, (want, vectors, report) in got.items():
        # the same torch kernels as Isoscope's run, then the Dense modules' float32 arithmetic (condition ~1-10)
        assert _rel(vectors, want) <= TOLERANCE * max(1.0, report.checks["condition"]), name
    modules = [m["type"].rsplit(".", 1)[-1] for m in json.loads((tmp_path / "mlp-st" / "modules.json").read_text())]
    assert modules == ["Transformer", "Pooling", "Normalize", "Dense", "Dense"]  # the residual as two plain Dense
    readme = (tmp_path / "mlp-st" / "README.md").read_text()
    new = two_models[0]
    assert "new -> legacy" in readme and new.fingerprint in readme and "Dense 64->" in readme
    reloaded = load_encoder(str(tmp_path / "ridge-procrustes-st"))  # Isoscope reads its own export (manifest checked)
    assert _rel(encode(reloaded, two_models[5]), got["ridge-procrustes-st"][0]) <= TOLERANCE


def test_one_onnx_graph_from_token_ids_maps_as_isoscope_does_without_isoscope(tmp_path, two_models):
    """B's recipe and the adapter in one graph, the local adapter's routing included."""
    got = _text_round_trip(tmp_path, two_models, [("procrustes", "onnx"), ("local:3", "onnx")])
    for name, (want, vectors, report) in got.items():
        # ONNX Runtime's transformer agrees with torch's to FP32_ENGINE_TOLERANCE, times the adapter's condition
        assert _rel(vectors, want) <= FP32_ENGINE_TOLERANCE * max(1.0, report.checks["condition"]), name


def test_what_has_no_exact_form_is_refused_in_one_line(tmp_path, pairs, fitted):
    X, _ = pairs
    mlp, local, ridge = fitted["mlp"], fitted["local:3"], fitted["ridge"]
    cases = [
        (mlp, {"format": "faiss"}, "not an affine map"),
        (local, {"format": "sentence-transformers", "model": "unused"}, "no sentence-transformers module"),
        (ridge, {"format": "sentence-transformers"}, "needs the model"),
        (ridge, {"format": "parquet"}, "unknown adapter export format"),
        (ridge, {"format": "faiss", "provenance": {"old": "a"}}, "unknown provenance key"),
        (ridge, {"format": "faiss", "direction": "sideways"}, "unknown direction"),
        (ridge, {"format": "faiss", "probe": X[:, :5]}, "the probe vectors have shape"),
    ]
    for adapter, kwargs, words in cases:
        with pytest.raises(InputError, match=words) as err:
            export_adapter(adapter, tmp_path / "out", **kwargs)
        assert "\n" not in str(err.value)
    assert list(tmp_path.iterdir()) == []  # nothing left: no folder, no temporary one (the probe failed inside)
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "keep.txt").write_text("mine")
    with pytest.raises(InputError, match="is a folder that is not an exported model folder"):
        export_adapter(ridge, tmp_path / "taken", format="faiss")
    assert (tmp_path / "taken" / "keep.txt").read_text() == "mine"
    export_adapter(ridge, tmp_path / "again", format="faiss")
    export_adapter(ridge, tmp_path / "again", format="onnx")  # an earlier export is replaced as a whole
    assert read_manifest(tmp_path / "again")["provenance"]["format"] == "onnx"
    assert not (tmp_path / "again" / "adapter.faiss").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["again", "taken"]  # no temporary folder left


def test_a_model_of_another_width_is_refused(tmp_path, fitted):
    model = load_encoder(str(save_recipe("bge", tmp_path / "src")))  # 32-dimensional vectors; the adapter reads 24
    with pytest.raises(InputError, match=r"gives 32-dimensional vectors .* maps 24-dimensional"):
        export_adapter(fitted["ridge"], tmp_path / "out", format="onnx", model=model)
    assert not (tmp_path / "out").exists()


def test_a_tampered_export_is_refused_when_isoscope_reads_it(tmp_path, fitted):
    export_adapter(fitted["ridge"], tmp_path / "out", format="faiss")
    with open(tmp_path / "out" / "adapter.faiss", "ab") as f:
        f.write(b"\0")
    with pytest.raises(InputError, match="does not match its checksum"):
        read_manifest(tmp_path / "out")
    assert (tmp_path / "out" / MANIFEST_FILE).is_file()


def test_a_migration_result_exports_its_recommended_adapter(tmp_path):
    """``result.export(folder, format=...)``: the run's adapter, its direction and both sides in the provenance."""
    from isoscope.migrate.config import MigrationConfig
    from isoscope.migrate.run import evaluate_migration
    from tests.core.migrate.synthetic import rotation, synthetic

    s = synthetic()
    R = rotation(16, 1)
    config = MigrationConfig(resamples=200, curve=(), methods=("procrustes", "ridge"), fit_fraction=0.25)
    result = evaluate_migration((s.Q, s.D), (s.Q @ R, s.D @ R), s.task, config=config)
    report = result.export(tmp_path / "out", format="faiss", provenance={"fit_source": "synthetic"})
    run = result.run_of()
    assert (report.method, report.direction, report.fit_source) == (run.method, run.direction, "synthetic")
    X = s.D[:50] if run.direction == "old->new" else (s.D @ R)[:50]
    got = Adapter.load(tmp_path / "out").transform(X)
    assert _rel(got, run.adapter.transform(X)) == 0.0  # the same adapter, saved beside the index
    with pytest.raises(InputError, match="lowrank"):
        result.export(tmp_path / "other", "lowrank:64", format="faiss")  # not one this run fitted: named
