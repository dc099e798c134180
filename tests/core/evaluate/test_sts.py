"""isoscope.evaluate.sts: STS with a calibrator fitted without labels, the too-few-fit-vectors warning, and the
reports of ``isoscope sts`` / ``isoscope calibrate`` (sts_report, fit_and_save)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from isoscope.calibrate import Flow, make_calibrator
from isoscope.calibrate.fitting import fit_size_warning, safe_components, safe_method
from isoscope.errors import InputError
from isoscope.evaluate.similarity import sts_scores
from isoscope.evaluate.sts import CalibratedSTS, calibrated_sts
from isoscope.geometry.pairs import cosine_pairs
from tests.core.calibrate.synthetic import distorted_gaussian


@pytest.fixture(scope="module")
def synth() -> np.ndarray:
    return distorted_gaussian(1500, seed=7)


def test_calibrated_sts_reports_every_number(synth):
    a, b = synth[:500], synth[500:1000]
    gold = np.clip(cosine_pairs(a, b) * 2.5 + 2.5, 0, 5)
    out = calibrated_sts(a, b, gold, make_calibrator("whitening"), fit_vectors=synth)
    assert isinstance(out, CalibratedSTS) and list(out.to_dict()) == [
        "method",
        "spearman",
        "pearson",
        "fit_seconds",
        "bits_per_dim",
        "avg_cosine_before",
        "avg_cosine_after",
        "n_fit",
        "diverged",
        "raw_spearman",
        "raw_pearson",
        "warnings",
    ]
    assert out.method == "whitening" and out.bits_per_dim is None and out.n_fit == len(synth)
    assert abs(out.avg_cosine_after) < abs(out.avg_cosine_before)
    assert out.raw_spearman == sts_scores(a, b, gold)["spearman"]
    same = calibrated_sts(a, b, gold, make_calibrator("none"))
    assert same.spearman == pytest.approx(same.raw_spearman)
    flow = calibrated_sts(a, b, gold, Flow(epochs=1, hidden=16, n_steps=1))
    assert isinstance(flow.bits_per_dim, float)


def test_fit_size_warning():
    assert fit_size_warning(make_calibrator("whitening"), 300, 384) is not None
    assert fit_size_warning(make_calibrator("whitening:64"), 300, 384) is None
    assert fit_size_warning(make_calibrator("sn+abtt:3"), 300, 384) is None
    assert fit_size_warning(make_calibrator("flow"), 20000, 384) is None


def test_safe_method_is_whitening_k_where_the_fit_set_is_too_small() -> None:
    """Issue 26: Anisotropy whitened 384 dimensions on 336 texts (effective rank n - 1) and showed it as a
    success. A default too big for its fit set becomes whitening:K with a K the set supports (n >= 4K)."""
    assert safe_method("whitening", 336, 384) == "whitening:64"
    assert safe_method("flow", 200, 384) == "whitening:50"
    assert safe_method("whitening", 4846, 384) == "whitening" and safe_method("sn+abtt:3", 10, 384) == "sn+abtt:3"
    assert safe_method("none", 5, 384) == "none" and safe_components(5, 384) == 2
    for n in (8, 100, 336, 700):
        k = safe_components(n, 384)
        assert fit_size_warning(make_calibrator(f"whitening:{k}"), n, 384) is None  # the default never warns
        assert fit_size_warning(make_calibrator("whitening"), n, 384) is not None


# ---------------------------------------------------------------- the command's reports, on the real model

PAIRS = [
    ("A man is strumming a guitar.", "A man plays the guitar.", 4.8),
    ("A dog runs in the park.", "A dog is running on the grass.", 3.6),
    ("The stock market fell today.", "Shares dropped on the exchange.", 3.4),
    ("A child is reading a book.", "A kid plays football outside.", 1.0),
    ("The sun is shining.", "A man is cooking pasta.", 0.2),
    ("She is writing a letter.", "The train leaves at noon.", 0.0),
]


@pytest.fixture(scope="module")
def pairs():
    from isoscope.data import Pairs

    return Pairs([a for a, _, _ in PAIRS], [b for _, b, _ in PAIRS], np.array([s for *_, s in PAIRS]), name="p.csv")


@pytest.fixture(scope="module")
def fit_corpus():
    from isoscope.data import load_corpus
    from isoscope.paths import DEMO_CORPUS

    corpus = load_corpus(DEMO_CORPUS)
    corpus.texts, corpus.warnings = corpus.texts[:40], ["c: a note"]
    return corpus


def test_sts_report_is_calibrated_sts_of_the_embeddings(encoder, pairs, fit_corpus) -> None:
    from isoscope.encode.embed import encode
    from isoscope.evaluate.sts import sts_report

    stages: list[str] = []
    report = sts_report(
        encoder,
        pairs,
        make_calibrator("whitening:4"),
        fit_corpus=fit_corpus,
        pooling="cls",
        progress=lambda s: stages.append(s),
    )
    X, F = encode(encoder, pairs.texts, "cls"), encode(encoder, fit_corpus.texts, "cls")  # (12, d), (40, d)
    n = len(pairs)
    expected = calibrated_sts(X[:n], X[n:], pairs.scores, make_calibrator("whitening:4"), fit_vectors=F)
    assert (report.spearman, report.pearson) == (expected.raw_spearman, expected.raw_pearson)
    cal = report.calibrated
    assert (cal.spearman, cal.pearson, cal.n_fit) == (expected.spearman, expected.pearson, 40)
    assert report.fit_on == fit_corpus.name and cal.method == "whitening:4" and not cal.diverged
    assert report.warnings == ["c: a note"] and report.pooling == "cls" and report.n_pairs == n
    assert stages == ["embed", "embed corpus", "fit"]
    assert sts_report(encoder, pairs, make_calibrator("none")).fit_on == "target"
    # the JSON of `isoscope sts`: the raw scores, then the calibrated ones with what they were fitted on
    doc = report.to_dict()
    assert list(doc) == ["spearman", "pearson", "n_pairs", "model", "pooling", "calibrated", "warnings"]
    assert doc["calibrated"] == {
        **{k: v for k, v in cal.to_dict().items() if k not in ("raw_spearman", "raw_pearson", "warnings")},
        "fit_on": fit_corpus.name,
    }
    assert list(doc["calibrated"])[7] == "fit_on"  # between avg_cosine_after and n_fit, as the CLI always wrote


def test_sts_report_takes_a_space_or_its_vectors(encoder, pairs, fit_corpus) -> None:
    """One entry point: the report of an encoder is the report of that space's vectors (``space_vectors``) and of
    a bare (2n, d) array, which is named ``model``; vectors of two spaces are refused."""
    from isoscope.encode.embed import encode
    from isoscope.evaluate.sts import sts_report
    from isoscope.sources import parse_space, space_vectors

    spec = parse_space("pooling=cls")
    cal = "whitening:4"
    by_encoder = sts_report(encoder, pairs, make_calibrator(cal), fit_corpus=fit_corpus, pooling="cls").to_dict()
    both = space_vectors(spec, pairs.texts, loader=lambda _name: encoder)
    fit = encode(encoder, fit_corpus.texts, "cls")  # (40, d)
    fit_on = (fit_corpus.name, fit_corpus.warnings)
    by_space = sts_report(both, pairs, make_calibrator(cal), fit_vectors=fit, fit_on=fit_on).to_dict()
    for doc in (by_encoder, by_space):
        doc["calibrated"]["fit_seconds"] = 0.0
    assert by_space == by_encoder and by_space["model"] == encoder.name and by_space["pooling"] == "cls"
    bare = sts_report(both.raw, pairs, make_calibrator("none"), model="mine.npy")
    assert (bare.model, bare.pooling, bare.spearman) == ("mine.npy", None, by_encoder["spearman"])
    with pytest.raises(InputError, match="fit vectors have 3 dimensions"):
        sts_report(both.raw, pairs, make_calibrator(cal), fit_vectors=fit[:, :3])


def test_sts_report_refuses_pairs_without_a_defined_correlation(encoder, pairs) -> None:
    from isoscope.data import Corpus, Pairs
    from isoscope.evaluate.sts import check_fit_corpus, sts_report

    unscored = Pairs(pairs.sentence1, pairs.sentence2, None, name="u.csv")
    with pytest.raises(InputError, match=r"u\.csv: no score column"):
        sts_report(encoder, unscored, make_calibrator("none"))
    flat = Pairs(pairs.sentence1, pairs.sentence2, np.ones(len(pairs)), name="f.csv")
    with pytest.raises(InputError, match="at least 3 pairs whose scores differ"):
        sts_report(encoder, flat, make_calibrator("none"))
    with pytest.raises(InputError, match="need at least 2 texts to fit a calibrator"):
        check_fit_corpus(Corpus(["one"], pd.DataFrame(index=range(1)), name="one.txt"))


def test_fit_and_save_writes_a_calibrator_that_loads_and_maps_alike(encoder, fit_corpus, tmp_path) -> None:
    from isoscope.calibrate import load_calibrator
    from isoscope.encode.embed import EmbedConfig, encode
    from isoscope.evaluate.sts import fit_and_save

    out = tmp_path / "cal"
    result = fit_and_save(
        encoder, fit_corpus, make_calibrator("sn+abtt:2"), str(out), embed_config=EmbedConfig(max_length=64)
    )
    assert result.out == str(out) and result.n_texts == 40 and result.dim == encoder.hidden_size
    X = encode(encoder, fit_corpus.texts, None, config=EmbedConfig(max_length=64))  # (40, d): the model's pooling
    loaded = load_calibrator(out)
    fresh = make_calibrator("sn+abtt:2").fit(X)
    np.testing.assert_array_equal(loaded.transform(X), fresh.transform(X))
    assert result.avg_cosine_after < result.avg_cosine_before and result.warnings == ["c: a note"]
    assert list(result.to_dict())[:4] == ["method", "out", "n_texts", "dim"]
    # one entry point: the same vectors given as an array, with what they came from, fit and save alike
    space = {"model": "mine.npy", "model_fingerprint": "f00d", "pooling": None}
    given = fit_and_save(X, fit_corpus, make_calibrator("sn+abtt:2"), tmp_path / "given", space=space)
    np.testing.assert_array_equal(load_calibrator(tmp_path / "given").transform(X), fresh.transform(X))
    doc, want = given.to_dict(), result.to_dict()
    assert (doc["model"], doc["pooling"], doc["out"]) == ("mine.npy", None, str(tmp_path / "given"))
    keep = ("method", "n_texts", "dim", "avg_cosine_before", "avg_cosine_after", "warnings")
    assert {k: doc[k] for k in keep} == {k: want[k] for k in keep}
    saved = load_calibrator(tmp_path / "given").metadata_
    assert {k: saved[k] for k in space} == space and saved["fit_on"] == fit_corpus.name
