"""Every command on a space of vectors computed elsewhere (``--vectors``, ``vectors=``), and on an embeddings
endpoint (``--model openai:NAME``): files written by numpy and pyarrow, and a local server speaking the protocol.

Known answers: a file holding the model's own vectors gives the model path's numbers exactly (the same float32
values go through the same arithmetic), CKA 1 and overlap 1 against it.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from isoscope.encode.embed import encode
from isoscope.geometry.metrics import all_metrics
from isoscope.paths import DEMO_CORPUS, DEMO_PAIRS
from tests.core.commands.cli_checks import one_error_line
from tests.data_helpers import clustered
from tests.endpoint_server import EmbeddingServer
from tests.vector_files import write_parquet

N_TEXTS = 48


@pytest.fixture(scope="module")
def texts() -> list[str]:
    with open(DEMO_CORPUS, newline="", encoding="utf-8") as f:
        rows = [r["text"] for r in csv.DictReader(f)]
    return list(dict.fromkeys(rows))[:N_TEXTS]


@pytest.fixture(scope="module")
def files(tmp_path_factory, texts, encoder) -> dict[str, Path]:
    """corpus.txt; own.parquet: the model's own vectors of it (its recipe, the default pooling); other.parquet: vectors Isoscope did not
    compute (clustered Gaussians), both written by pyarrow with a text column."""
    root = tmp_path_factory.mktemp("vectors")
    (root / "corpus.txt").write_text("\n".join(texts) + "\n", encoding="utf-8")
    own = encode(encoder, texts, None)  # (n, 384)
    np.save(root / "own.npy", own, allow_pickle=False)
    return {
        "corpus": root / "corpus.txt",
        "own": write_parquet(root / "own.parquet", own, texts),
        "own_npy": root / "own.npy",
        "other": write_parquet(root / "other.parquet", clustered(len(texts), 64, 4, seed=1), texts),
        "root": root,
    }


@pytest.fixture()
def run_json(cli_main, capsys):
    def run(*argv: str, expect: int = 0) -> dict | str:
        status = cli_main([*argv, "--quiet", "--json"])
        if expect:
            assert status == expect
            return one_error_line(capsys)
        out = capsys.readouterr().out
        assert status == 0, out
        return json.loads(out)

    return run


# ---------------------------------------------------------------- geometry


def test_geometry_on_a_file_isoscope_did_not_compute(run_json, files, texts) -> None:
    out = run_json(
        "geometry", "--vectors", f"{files['other']}:emb", "--text-column", "text", "--calibrate", "whitening"
    )
    X = clustered(len(texts), 64, 4, seed=1).astype(np.float64)
    assert out["n_texts"] == len(texts) and out["model"] == "other.parquet:emb" and out["pooling"] is None
    assert out["raw"] == pytest.approx(all_metrics(X, seed=0), rel=0, abs=0)
    assert out["vectors"]["column"] == "emb" and out["vectors"]["text_column"] == "text"
    assert out["calibrated"]["avg_cosine"] < out["raw"]["avg_cosine"]
    assert "frequency" not in out and "layers" not in out


def test_geometry_of_the_model_s_own_vectors_equals_the_model_path(run_json, files) -> None:
    model = run_json("geometry", "--input", str(files["corpus"]), "--frequency", "none", "--calibrate", "whitening")
    for given in (files["own"], f"{files['own']}:emb"):
        out = run_json("geometry", "--vectors", str(given), "--calibrate", "whitening")
        assert out["raw"] == model["raw"]
        assert {k: v for k, v in out["calibrated"].items() if k != "fit_seconds"} == {
            k: v for k, v in model["calibrated"].items() if k != "fit_seconds"
        }
    by_text = run_json("geometry", "--vectors", str(files["own"]), "--input", str(files["corpus"]))  # looked up
    by_row = run_json("geometry", "--vectors", str(files["own_npy"]), "--input", str(files["corpus"]))  # in order
    assert by_text["raw"] == by_row["raw"] == model["raw"]


def test_geometry_on_pairs_with_vectors(run_json, files, encoder, tmp_path) -> None:
    from isoscope.data import load_pairs

    pairs = load_pairs(DEMO_PAIRS)
    vectors = encode(encoder, pairs.texts, None)
    path = write_parquet(tmp_path / "pairs.parquet", vectors, pairs.texts)
    model = run_json("geometry", "--input", str(DEMO_PAIRS), "--frequency", "none")
    out = run_json("geometry", "--input", str(DEMO_PAIRS), "--vectors", str(path))
    assert out["kind"] == "pairs" and out["sts"] == model["sts"] and out["overlap"] == model["overlap"]


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [(("--layers",), "--layers needs a model"), (("--frequency", "static"), "--frequency needs a model")],
)
def test_geometry_refuses_what_needs_a_model(run_json, files, extra, fragment) -> None:
    assert fragment in run_json("geometry", "--vectors", str(files["own"]), *extra, expect=2)


# ---------------------------------------------------------------- compare


def test_compare_a_file_with_the_model(run_json, files) -> None:
    out = run_json(
        "compare",
        "--input",
        str(files["corpus"]),
        "--a",
        f"vectors={files['own']}:emb",
        "--b",
        "pooling=model",
        "--k",
        "5",
    )
    assert out["cka_linear"] == pytest.approx(1.0, abs=1e-12) and out["overlap_at_k"] == 1.0
    assert out["a"]["model"] == "own.parquet:emb" and out["a"]["vectors"]["dtype"] == "float32"
    assert out["b"]["dims"] == 384
    other = run_json(
        "compare",
        "--input",
        str(files["corpus"]),
        "--a",
        f"vectors={files['other']}",
        "--b",
        "pooling=mean",
        "--k",
        "5",
    )
    assert other["cka_linear"] < 0.9 and other["overlap_at_k"] < 0.9 and other["a"]["dims"] == 64


def test_compare_two_files_without_input(run_json, files) -> None:
    out = run_json(
        "compare", "--a", f"vectors={files['own']}", "--b", f"vectors={files['other']},calibrate=whitening", "--k", "5"
    )
    assert out["input"] == "own.parquet:emb" and out["n_texts"] == N_TEXTS


def test_compare_a_file_without_texts_by_row(run_json, files) -> None:
    out = run_json(
        "compare", "--input", str(files["corpus"]), "--a", f"vectors={files['own_npy']}", "--b", "", "--k", "5"
    )
    assert out["overlap_at_k"] == 1.0


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ("vectors=x.npy,pooling=cls", "drop pooling="),
        ("vectors=", "vectors= needs a file"),
        ("text=foo", "text= names the text column"),
        ("model=openai:", "give the endpoint's model"),
        ("model=openai:m,init=random", "drop init="),
    ],
)
def test_compare_spec_refusals(run_json, files, spec, fragment) -> None:
    assert fragment in run_json("compare", "--input", str(files["corpus"]), "--a", spec, expect=2)


def test_compare_layers_need_models(run_json, files) -> None:
    msg = run_json("compare", "--input", str(files["corpus"]), "--a", f"vectors={files['own']}", "--layers", expect=2)
    assert "layer CKA needs a model's layers" in msg


# ---------------------------------------------------------------- sts, calibrate, embed, sweep, atlas


@pytest.fixture(scope="module")
def pair_files(tmp_path_factory, encoder) -> dict[str, Path]:
    from isoscope.data import load_pairs

    root = tmp_path_factory.mktemp("pairs")
    pairs = load_pairs(DEMO_PAIRS)
    n = len(pairs)
    both = encode(encoder, pairs.texts, None)  # (2n, d)
    ids = root / "ids.csv"
    with open(ids, "w", newline="") as f:  # sentence columns hold row numbers of both.npy
        csv.writer(f).writerows([[i, n + i, s] for i, s in enumerate(pairs.scores)])
    np.save(root / "both.npy", both, allow_pickle=False)
    np.save(root / "a.npy", both[:n], allow_pickle=False)
    np.save(root / "b.npy", both[n:], allow_pickle=False)
    np.save(root / "b_short.npy", both[n:, :100], allow_pickle=False)
    return {
        "texts": write_parquet(root / "texts.parquet", both, pairs.texts),
        "both": root / "both.npy",
        "a": root / "a.npy",
        "b": root / "b.npy",
        "b_short": root / "b_short.npy",
        "ids": ids,
    }


def test_sts_from_vectors_equals_the_model_path(run_json, pair_files) -> None:
    model = run_json("sts", "--pairs", str(DEMO_PAIRS), "--calibrate", "whitening")
    ways = [
        ("--vectors", str(pair_files["texts"])),
        ("--vectors", str(pair_files["both"])),
        ("--vectors", str(pair_files["a"]), "--vectors-b", str(pair_files["b"])),
    ]
    # The same float32 vectors, but cosines taken over other matrix shapes (pairs vs unique rows) round
    # differently: each cosine by at most d * eps32 (~2e-5), so a correlation (x 100) moves by far less
    # than 100 * 2e-5 / sd(cos) ~ 1e-2. Near-ties may swap ranks the same way.
    same = pytest.approx(model["spearman"], abs=1e-2), pytest.approx(model["pearson"], abs=1e-2)
    for way in ways:
        out = run_json("sts", "--pairs", str(DEMO_PAIRS), "--calibrate", "whitening", *way)
        assert (out["spearman"], out["pearson"]) == same
        assert out["calibrated"]["spearman"] == pytest.approx(model["calibrated"]["spearman"], abs=1e-2)
    ids = run_json("sts", "--pairs", str(pair_files["ids"]), "--vectors", str(pair_files["both"]), "--pair-ids")
    assert ids["spearman"] == same[0]


def test_sweep_scores_the_pairs_of_a_vectors_file_as_sts_does(run_json, pair_files) -> None:
    """The sweep's fp32 Spearman of --pairs looked up in --vectors (``space_vectors``) is the sts command's on the
    same file (the same cosines; the tolerance as in the test above)."""
    sts = run_json("sts", "--pairs", str(DEMO_PAIRS), "--vectors", str(pair_files["texts"]))
    out = run_json("sweep", "--vectors", str(pair_files["texts"]), "--pairs", str(DEMO_PAIRS), "--dims", "16")
    rows = {r["variant"]: r for r in out["rows"]}
    assert out["n_pairs"] == sts["n_pairs"] and rows["fp32"]["spearman"] == pytest.approx(sts["spearman"], abs=1e-2)


def test_sts_dimension_mismatch_between_a_and_b(run_json, pair_files) -> None:
    msg = run_json(
        "sts",
        "--pairs",
        str(DEMO_PAIRS),
        "--vectors",
        str(pair_files["a"]),
        "--vectors-b",
        str(pair_files["b_short"]),
        expect=2,
    )
    assert "384 dimensions" in msg and "100" in msg and "one space" in msg


def test_calibrate_and_embed_pass_through(run_json, files, tmp_path) -> None:
    from isoscope.calibrate import Calibrator, make_calibrator

    out = run_json(
        "calibrate", "--vectors", str(files["other"]), "--method", "whitening", "--out", str(tmp_path / "cal")
    )
    assert out["n_texts"] == N_TEXTS and out["dim"] == 64 and out["model"] == "other.parquet:emb"
    saved = Calibrator.load(tmp_path / "cal")
    assert saved.metadata_["vectors"]["file"] == "other.parquet"
    emb = run_json(
        "embed", "--vectors", str(files["other"]), "--calibrate", "whitening", "--out", str(tmp_path / "z.npy")
    )
    X = clustered(N_TEXTS, 64, 4, seed=1)
    want = make_calibrator("whitening").fit(X).transform(X)
    np.testing.assert_array_equal(np.load(tmp_path / "z.npy"), np.asarray(want, np.float32))
    np.testing.assert_array_equal(saved.transform(X), want)
    assert emb["avg_cosine_after"] < emb["avg_cosine_before"]
    run_json("embed", "--vectors", str(files["own"]), "--out", str(tmp_path / "copy.npy"))
    np.testing.assert_array_equal(np.load(tmp_path / "copy.npy"), np.load(files["own_npy"]))


def test_sweep_on_vectors(run_json, files) -> None:
    out = run_json("sweep", "--vectors", str(files["other"]), "--dims", "16,32", "--k", "5")
    variants = [r["variant"] for r in out["rows"]]
    assert "int8-model" not in variants and {"fp32", "binary", "pca:16", "truncate:32"} <= set(variants)
    assert out["model"] == "other.parquet:emb"


def test_atlas_on_vectors(run_json, files, tmp_path) -> None:
    out = run_json(
        "atlas",
        "--vectors",
        str(files["other"]),
        "--out",
        str(tmp_path / "atlas"),
        "--layout",
        "pca",
        "--calibrate",
        "none",
    )
    assert out["n"] == N_TEXTS
    from isoscope.atlas.pipeline import load_atlas

    atlas = load_atlas(tmp_path / "atlas")
    np.testing.assert_array_equal(atlas.vectors(), clustered(N_TEXTS, 64, 4, seed=1))


# ---------------------------------------------------------------- an endpoint: a real local server


@pytest.fixture(scope="module")
def model_server(encoder):
    """A local /v1/embeddings server answering with the session model's mean-pooled vectors."""
    with EmbeddingServer(lambda texts: encode(encoder, texts, None)) as server:
        yield server


def test_geometry_through_an_endpoint_equals_the_model(run_json, files, model_server, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    model = run_json("geometry", "--input", str(files["corpus"]), "--frequency", "none")
    argv = ["geometry", "--input", str(files["corpus"]), "--model", "openai:minilm", "--base-url", model_server.url]
    out = run_json(*argv)
    assert out["raw"] == model["raw"] and out["model"].startswith("openai:minilm at 127.0.0.1")
    sent = len(model_server.requests)
    assert run_json(*argv)["raw"] == model["raw"] and len(model_server.requests) == sent  # cached: nothing sent
    assert "sk-test-not-a-real-key" not in json.dumps(out)


def test_compare_an_endpoint_with_the_model(run_json, files, model_server) -> None:
    spec = f"model=openai:minilm,base_url={model_server.url}"
    out = run_json("compare", "--input", str(files["corpus"]), "--a", spec, "--b", "pooling=model", "--k", "5")
    assert out["cka_linear"] == pytest.approx(1.0, abs=1e-12) and out["overlap_at_k"] == 1.0


def test_sts_through_an_endpoint(run_json, model_server) -> None:
    model = run_json("sts", "--pairs", str(DEMO_PAIRS))
    out = run_json("sts", "--pairs", str(DEMO_PAIRS), "--model", "openai:minilm", "--base-url", model_server.url)
    assert out["spearman"] == model["spearman"]


def test_an_endpoint_is_refused_where_a_model_is_needed(run_json, files, model_server) -> None:
    argv = ["--input", str(files["corpus"]), "--model", "openai:minilm", "--base-url", model_server.url]
    assert "--layers needs a model" in run_json("geometry", *argv, "--layers", expect=2)


def test_sts_from_vectors_fits_on_a_corpus_the_file_holds(run_json, pair_files, tmp_path) -> None:
    """--fit-on with --vectors: the corpus's vectors are looked up in the same file; a text it lacks is one line."""
    from isoscope.data import load_pairs

    sentences = list(dict.fromkeys(load_pairs(DEMO_PAIRS).sentence1))  # texts the file has vectors for
    corpus = tmp_path / "fit.csv"
    pd.DataFrame({"text": sentences}).to_csv(corpus, index=False)
    out = run_json("sts", "--pairs", str(DEMO_PAIRS), "--vectors", str(pair_files["texts"]), "--fit-on", str(corpus))
    assert out["calibrated"]["fit_on"] == "fit.csv" and out["calibrated"]["n_fit"] == len(sentences)
    pd.DataFrame({"text": [*sentences, "a sentence the file has no vector for"]}).to_csv(corpus, index=False)
    msg = run_json(
        "sts", "--pairs", str(DEMO_PAIRS), "--vectors", str(pair_files["texts"]), "--fit-on", str(corpus), expect=2
    )
    assert "a sentence the file has no vector for" in msg


def _sent(server, since: int) -> list[str]:
    """The texts the endpoint was sent after its first ``since`` requests."""
    return [t for r in server.requests[since:] for t in r["body"]["input"]]


def test_an_endpoint_is_sent_the_prompt_before_each_text(run_json, files, model_server, tmp_path) -> None:
    """space_vectors puts --prompt-text before the texts it sends an endpoint, as the model would see them."""
    since = len(model_server.requests)
    argv = ["embed", "--input", str(files["corpus"]), "--model", "openai:minilm", "--base-url", model_server.url]
    run_json(*argv, "--prompt-text", "topic: ", "--out", str(tmp_path / "v.npy"), "--no-cache")
    sent = _sent(model_server, since)
    assert sent and all(t.startswith("topic: ") for t in sent)


def test_retrieval_through_an_endpoint_sends_each_side_its_prompt(run_json, model_server) -> None:
    since = len(model_server.requests)
    argv = ["retrieval", "--model", "openai:minilm", "--base-url", model_server.url, "--resamples", "200"]
    out = run_json(*argv, "--query-prompt", "q: ", "--doc-prompt", "d: ", "--no-cache")
    sent = _sent(model_server, since)
    assert out["prompts"] == {"query": "q: ", "document": "d: "} and out["model"].startswith("openai:minilm at")
    assert {t[:3] for t in sent} == {"q: ", "d: "}
    assert sum(t.startswith("q: ") for t in sent) == out["task"]["queries"]


def test_sts_through_an_endpoint_sends_the_prompt(run_json, model_server) -> None:
    """The prompt an endpoint gets with sts too (space_vectors' endpoint path, as before it existed)."""
    since = len(model_server.requests)
    argv = ["sts", "--pairs", str(DEMO_PAIRS), "--model", "openai:minilm", "--base-url", model_server.url]
    run_json(*argv, "--prompt-text", "topic: ", "--no-cache")
    sent = _sent(model_server, since)
    assert sent and all(t.startswith("topic: ") for t in sent)
