"""``isoscope.geometry.report``: the geometry report as one call, checked against its parts on the real model."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from isoscope.calibrate import make_calibrator
from isoscope.data import TextInput, load_input
from isoscope.encode.embed import encode, encode_many
from isoscope.encode.pooling import layer_names, parse_pooling
from isoscope.errors import InputError
from isoscope.geometry.frequency import FrequencyConfig, frequency_analysis
from isoscope.geometry.lexical import overlap_analysis
from isoscope.geometry.metrics import all_metrics
from isoscope.geometry.pairs import correlations, cosine_pairs
from isoscope.geometry.report import GeometryConfig, GeometryReport, analyse_geometry, check_input
from isoscope.paths import DEMO_CORPUS, DEMO_PAIRS
from tests.data_helpers import demo_head

N_PAIRS = 24


@pytest.fixture(scope="module")
def pairs_input(tmp_path_factory) -> TextInput:
    return load_input(demo_head(DEMO_PAIRS, N_PAIRS, tmp_path_factory.mktemp("report") / "pairs.csv"))


@pytest.fixture(scope="module")
def corpus_input(tmp_path_factory) -> TextInput:
    return load_input(demo_head(DEMO_CORPUS, 30, tmp_path_factory.mktemp("report") / "corpus.csv"))


def test_pairs_report_equals_its_parts(encoder, pairs_input: TextInput) -> None:
    """Raw and calibrated metrics, the overlap and the STS correlations are exactly what the parts compute."""
    config = GeometryConfig(calibrate="whitening:16", frequency="none", seed=3)
    report = analyse_geometry(encoder, pairs_input, config)
    X = encode(encoder, pairs_input.texts).astype(np.float64)  # (2n, d)
    assert report.raw == all_metrics(X, seed=3)
    Z = np.asarray(make_calibrator("whitening:16").fit(X).transform(X), np.float64)  # (2n, 16)
    calibrated = dict(report.calibrated)
    assert calibrated.pop("fit_seconds") >= 0 and calibrated == all_metrics(Z, seed=3)
    pairs, n = pairs_input.pairs, N_PAIRS
    sims = {"gold": pairs.scores, "raw": cosine_pairs(X[:n], X[n:]), "calibrated": cosine_pairs(Z[:n], Z[n:])}
    expected = overlap_analysis(pairs.sentence1, pairs.sentence2, sims)[0]
    assert json.dumps(report.overlap, sort_keys=True) == json.dumps(expected, sort_keys=True)  # NaN == NaN here
    assert report.sts == {k: correlations(sims[k], pairs.scores)["spearman"] for k in ("raw", "calibrated")}
    assert (report.kind, report.n_texts, report.input, report.calibrate) == (
        "pairs",
        2 * n,
        "pairs.csv",
        "whitening:16",
    )
    assert report.frequency is None and report.layers is None


def test_one_entry_point_takes_the_space_or_its_vectors(encoder, pairs_input: TextInput) -> None:
    """The report of an encoder is the report of that space's vectors (``space_vectors``, which names the model
    and pooling) and of the bare array (named ``name``); vectors have no layers to measure."""
    from isoscope.sources import SpaceSpec, space_vectors

    config = GeometryConfig(calibrate="whitening:16", frequency="none", seed=3)
    by_encoder = analyse_geometry(encoder, pairs_input, config).to_dict()
    given = space_vectors(SpaceSpec(), pairs_input.texts, loader=lambda _name: encoder)
    by_space = analyse_geometry(given, pairs_input, config).to_dict()
    bare = analyse_geometry(given.raw, pairs_input, config, name="mine.npy").to_dict()
    for doc in (by_encoder, by_space, bare):
        doc["calibrated"].pop("fit_seconds")
    same = lambda doc: json.dumps({k: v for k, v in doc.items() if k != "model"}, sort_keys=True)  # noqa: E731
    assert same(by_space) == same(by_encoder) and by_space["model"] == by_encoder["model"]  # NaN == NaN in JSON
    assert (bare["model"], bare["pooling"]) == ("mine.npy", None)
    assert same({**bare, "pooling": by_encoder["pooling"]}) == same(by_encoder)
    with pytest.raises(InputError, match="per-layer metrics need a model's layers"):
        analyse_geometry(given.raw, pairs_input, GeometryConfig(frequency="none", layers=True))


def test_to_dict_has_the_keys_of_geometry_json_in_order(encoder, pairs_input: TextInput) -> None:
    report = analyse_geometry(encoder, pairs_input, GeometryConfig(frequency="static", layers=True))
    out = report.to_dict()
    assert list(out) == [
        *("input", "kind", "n_texts", "model", "pooling", "calibrate", "raw"),
        *("layers", "frequency", "overlap", "sts", "warnings"),
    ]
    assert [row["layer"] for row in out["layers"]] == list(range(encoder.num_layers + 1))
    assert {k: v for k, v in out["layers"][-1].items() if k != "layer"} == report.layers[-1]
    freq = out["frequency"]
    assert list(freq) == [
        *("n_texts", "n_distinct_tokens", "n_token_occurrences", "k", "edges", "labels", "token_layer"),
        *("token_mode", "per_token", "token_fit_max", "buckets", "correlations"),
    ]
    assert freq["n_texts"] == 2 * N_PAIRS and freq["edges"] == [0, 100, 500, 5000]
    assert sum(b["n_tokens"] for b in freq["buckets"]) == freq["n_distinct_tokens"]
    assert out["calibrate"] is None and out["sts"] == report.sts and out["warnings"] == []


def test_layers_come_from_one_forward_pass(encoder, corpus_input: TextInput) -> None:
    config = GeometryConfig(pooling=parse_pooling("mean"), layers=True, frequency="none")
    report = analyse_geometry(encoder, corpus_input, config)
    names = layer_names(encoder.num_layers)
    vectors = encode_many(encoder, corpus_input.texts, names)
    assert report.layers == [all_metrics(vectors[name]) for name in names]
    assert report.kind == "corpus" and report.overlap is None and "overlap" not in report.to_dict()
    assert report.layers[-1]["isoscore"] == pytest.approx(report.raw["isoscore"], rel=1e-4)  # mean = last layer


def test_frequency_texts_replace_the_input_texts_and_add_their_warnings(encoder, corpus_input: TextInput) -> None:
    other = TextInput(["a short text about cats", "another one about dogs and cats"] * 3, warnings=["w: note"])
    config = GeometryConfig(frequency="static", knn_k=2, rank_edges="0,5,20")
    report = analyse_geometry(encoder, corpus_input, config, frequency_texts=other)
    expected = frequency_analysis(
        encoder, other.texts, spaces=("static",), calibrator=None, config=FrequencyConfig(k=2, edges=(0, 5, 20))
    )
    pd.testing.assert_frame_equal(report.frequency.buckets, expected.buckets)
    assert report.frequency_texts == 6 and report.warnings == [*corpus_input.warnings, "w: note"]
    assert report.to_dict()["frequency"]["labels"] == ["0-5", "5-20", "20+"]


def test_progress_is_asked_for_by_stage(encoder, pairs_input: TextInput) -> None:
    asked: list[str] = []
    calls: dict[str, list[tuple]] = {}

    def progress(stage: str):
        asked.append(stage)
        return lambda *values: calls.setdefault(stage, []).append(values)

    config = GeometryConfig(calibrate="whitening:8", frequency="static")
    analyse_geometry(encoder, pairs_input, config, progress=progress)
    assert asked == ["embed", "fit whitening:8", "tokens"]
    assert calls["embed"][-1] == (2 * N_PAIRS, 2 * N_PAIRS)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (GeometryConfig(calibrate="bogus"), "unknown calibration method"),
        (GeometryConfig(knn_k=0), "knn_k must be >= 1"),
        (GeometryConfig(per_token=0), "per_token must be >= 1"),
        (GeometryConfig(token_fit_max=1), "token_fit_max must be >= 2"),
        (GeometryConfig(rank_edges="500,100"), "strictly increasing"),
        (GeometryConfig(frequency="tokens"), "unknown frequency 'tokens'"),  # type: ignore[arg-type]
        (GeometryConfig(token_mode="median"), "unknown token_mode 'median'; choose one of occurrence, mean"),
        (GeometryConfig(edit_level="line"), "unknown edit_level"),  # type: ignore[arg-type]
    ],
)
def test_config_validate_says_what_to_fix(config: GeometryConfig, message: str) -> None:
    with pytest.raises(InputError, match=message):
        config.validate()


def test_validate_parses_the_edges_and_keeps_the_rest() -> None:
    config = GeometryConfig(rank_edges="0,10,100", calibrate="none", frequency="both")
    checked = config.validate()
    assert checked.rank_edges == (0, 10, 100) and checked.spaces == ("static", "contextual")
    assert config.rank_edges == "0,10,100"  # validate returns a copy
    assert not checked.calibrated and GeometryConfig(frequency="none").spaces == ()
    with pytest.raises(InputError, match=r"^<token_fit_max> must be >= 2; got 1$"):  # messages name fields as told
        GeometryConfig(token_fit_max=1).validate(lambda field: f"<{field}>")


def test_too_few_texts_is_refused_before_any_embedding() -> None:
    with pytest.raises(InputError, match=r"two\.csv: 2 text"):
        check_input(TextInput(["a", "b"], name="two.csv"))
    with pytest.raises(InputError, match="geometry needs at least 3"):
        analyse_geometry(None, TextInput(["a", "b"], name="two.csv"))  # type: ignore[arg-type]


def test_report_without_extras_has_only_the_core_keys() -> None:
    report = GeometryReport("f.txt", "corpus", 3, "m", "mean", None, {"isoscore": 0.5})
    assert report.to_dict() == {
        **{"input": "f.txt", "kind": "corpus", "n_texts": 3, "model": "m", "pooling": "mean", "calibrate": None},
        **{"raw": {"isoscore": 0.5}, "warnings": []},
    }
