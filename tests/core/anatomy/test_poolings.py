"""Pooling explorer: every pooling x layer x calibration from one pass, best row, T5 modes, CLI."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from isoscope.anatomy.poolings import COLUMNS, explore_poolings, pooling_modes_for, unique_index
from isoscope.cache import ArrayCache
from isoscope.calibrate.methods import parse_method
from isoscope.data import Pairs, load_pairs
from isoscope.encode.embed import EmbedConfig, encode
from isoscope.errors import InputError
from isoscope.evaluate.similarity import sts_evaluate
from isoscope.geometry.metrics import alignment, uniformity
from isoscope.paths import DEMO_PAIRS
from tests import tiny_models
from tests.core.commands.cli_checks import one_error_line

CONFIG = EmbedConfig(64, 128)


class LocalWhitening:
    """PCA whitening written here, independent of isoscope.calibrate: x -> (x - mu) U_k diag(1 / sqrt(lambda_k))."""

    def __init__(self, k: int | None = None) -> None:
        self.k = k

    def fit(self, X: np.ndarray) -> LocalWhitening:
        self.mu = X.mean(0)
        eig, vec = np.linalg.eigh(np.cov(X - self.mu, rowvar=False))
        eig, vec = eig[::-1][: self.k], vec[:, ::-1][:, : self.k]
        self.W = vec / np.sqrt(np.maximum(eig, 1e-9))  # (d, k)
        return self

    def transform(self, X: np.ndarray) -> np.ndarray:
        return (X - self.mu) @ self.W


def local_factory(method: str) -> LocalWhitening:
    """``whitening`` or ``whitening:K`` (read with the one grammar, ``parse_method``) as a LocalWhitening."""
    try:
        (step,) = parse_method(method).steps
    except ValueError:  # not a method string (an InputError), or a chain
        step = None
    if step is None or step.name != "whitening":
        raise ValueError(f"unknown calibration '{method}'; choose one of none, whitening, whitening:K")
    return LocalWhitening(step.value("n_components"))


SMALL = 150  # demo pairs: fewer unique sentences than the model's 384 dimensions, where full whitening breaks


@pytest.fixture(scope="module")
def demo_pairs() -> Pairs:
    """The first ``SMALL`` demo pairs."""
    p = load_pairs(DEMO_PAIRS)
    return Pairs(p.sentence1[:SMALL], p.sentence2[:SMALL], p.scores[:SMALL], [], "demo_pairs_head.csv")


@pytest.fixture(scope="module")
def module_cache() -> ArrayCache:
    return ArrayCache()  # the session's (tests/conftest.py session_cache)


@pytest.fixture(scope="module")
def real_report(encoder, demo_pairs, module_cache):
    calibrations = ["whitening", "whitening:64", "whitening"]  # the duplicate is dropped
    return explore_poolings(
        encoder,
        demo_pairs,
        calibrations=calibrations,
        config=CONFIG,
        calibrator_factory=local_factory,
        cache=module_cache,
    )


@pytest.fixture(scope="module")
def tiny_t5():
    """d_model 32 with 2 encoder and 2 decoder layers (tiny_models.tiny_t5's defaults)."""
    return tiny_models.tiny_t5(0)


# ------------------------------------------------------------------ real model on the demo pairs


def test_table_shape_and_columns(real_report, encoder) -> None:
    t = real_report.table
    assert tuple(t.columns) == COLUMNS
    # the model's own recipe first (all-MiniLM-L6-v2 has one), then every pooling for study
    modes = ["model", "cls", "mean", "max", "last2avg", "first_last_avg"] + [f"layer:{k}" for k in range(7)]
    assert pooling_modes_for(encoder) == modes
    assert len(t) == 3 * len(modes)
    assert t["calibration"].tolist()[:3] == ["none", "whitening", "whitening:64"]
    assert t.set_index(["pooling", "calibration"]).index.is_unique
    assert t.loc[t.pooling == "layer:3", "layer"].tolist() == [3, 3, 3]
    assert t.loc[t.pooling == "cls", "layer"].tolist() == [6, 6, 6]
    assert t.loc[t.pooling == "last2avg", "layer"].isna().all()
    assert t[["spearman", "pearson", "alignment", "uniformity"]].notna().all().all()


def test_best_row_is_argmax(real_report) -> None:
    t = real_report.table
    best = real_report.best
    assert best["spearman"] == pytest.approx(t["spearman"].max())
    row = t[(t.pooling == best["pooling"]) & (t.calibration == best["calibration"])].iloc[0]
    assert row["spearman"] == best["spearman"]
    assert (t["spearman"] <= best["spearman"]).all()


def test_raw_mean_matches_independent_sts(real_report, encoder, demo_pairs, module_cache) -> None:
    vectors = encode(encoder, demo_pairs.texts, "mean", config=CONFIG, cache=module_cache)
    n = len(demo_pairs)
    ev = sts_evaluate(vectors[:n], vectors[n:], demo_pairs.scores)
    t = real_report.table.set_index(["pooling", "calibration"])
    assert t.loc[("mean", "none"), "spearman"] == pytest.approx(ev["spearman"], abs=1e-3)
    assert t.loc[("mean", "none"), "pearson"] == pytest.approx(ev["pearson"], abs=1e-3)
    # the last layer, mean over tokens, is the mean pooling
    assert t.loc[("layer:6", "none"), "spearman"] == pytest.approx(t.loc[("mean", "none"), "spearman"], abs=1e-9)
    # the recipe is mean -> normalise, and a cosine does not see the norm: the recipe row is the mean row
    assert t.loc[("model", "none"), "spearman"] == pytest.approx(t.loc[("mean", "none"), "spearman"], abs=1e-6)
    # the embedding output is far worse than the trained sentence embedding
    assert t.loc[("layer:0", "none"), "spearman"] < t.loc[("mean", "none"), "spearman"] - 5


def test_whitened_rows_and_alignment_uniformity(real_report, encoder, demo_pairs, module_cache) -> None:
    texts, index = unique_index(demo_pairs.texts)
    X = encode(encoder, texts, "cls", config=CONFIG, cache=module_cache).astype(np.float64)
    Z = LocalWhitening(64).fit(X).transform(X)
    n = len(demo_pairs)
    ev = sts_evaluate(Z[index[:n]], Z[index[n:]], demo_pairs.scores)
    t = real_report.table.set_index(["pooling", "calibration"])
    assert t.loc[("cls", "whitening:64"), "spearman"] == pytest.approx(ev["spearman"], abs=1e-2)
    pos = demo_pairs.scores > 4
    assert real_report.n_positive == int(pos.sum()) > 0
    assert t.loc[("cls", "none"), "alignment"] == pytest.approx(
        alignment(X[index[:n]][pos], X[index[n:]][pos]), abs=1e-4
    )
    assert t.loc[("cls", "none"), "uniformity"] == pytest.approx(uniformity(X), abs=1e-4)
    assert t.loc[("cls", "whitening:64"), "uniformity"] < t.loc[("cls", "none"), "uniformity"]  # whitening spreads


def test_warns_when_fewer_sentences_than_dimensions(real_report, demo_pairs) -> None:
    """Fewer unique sentences than 384 dimensions: full whitening makes them near-orthogonal, and the report
    says so in the words every page uses (isoscope.calibrate.fitting.fit_size_warning), once per such method."""
    from isoscope.calibrate import make_calibrator
    from isoscope.calibrate.fitting import fit_size_warning

    n = real_report.n_sentences
    assert n == len(unique_index(demo_pairs.texts)[0]) < 384
    assert real_report.warnings == [fit_size_warning(make_calibrator("whitening"), n, 384)]
    t = real_report.table
    full = t[t.calibration == "whitening"]
    assert (full["alignment"] > 1.9).all()  # positives as far apart as random pairs


def test_real_calibrator_matches_local_whitening(real_report, encoder, demo_pairs, module_cache) -> None:
    report = explore_poolings(encoder, demo_pairs, calibrations="whitening:64", config=CONFIG, cache=module_cache)
    ours = report.table[report.table.calibration == "whitening:64"].set_index("pooling")["spearman"]
    local = real_report.table[real_report.table.calibration == "whitening:64"].set_index("pooling")["spearman"]
    pd.testing.assert_series_equal(ours, local, atol=1e-3, check_exact=False)


def test_one_forward_pass(encoder, demo_pairs) -> None:
    calls = []
    handle = encoder.model.register_forward_hook(lambda *_: calls.append(1))
    try:
        report = explore_poolings(encoder, demo_pairs, config=EmbedConfig(batch_size=1024, max_length=64))
    finally:
        handle.remove()
    assert calls == [1]  # thirteen poolings (the recipe's among them), one batch, one forward
    assert len(report.table) == 13
    assert set(report.table["calibration"]) == {"none"}


def test_unique_index_roundtrip() -> None:
    texts, index = unique_index(["a", "b", "a", "c", "b"])
    assert texts == ["a", "b", "c"]
    assert [texts[i] for i in index] == ["a", "b", "a", "c", "b"]


def test_needs_scores(encoder) -> None:
    with pytest.raises(InputError, match="gold scores"):
        explore_poolings(encoder, Pairs(["a", "b", "c"], ["d", "e", "f"], None))


def test_unknown_calibration_raises(encoder, demo_pairs) -> None:
    calls = []
    handle = encoder.model.register_forward_hook(lambda *_: calls.append(1))
    try:
        with pytest.raises(ValueError, match="choose one of none, whitening"):
            explore_poolings(encoder, demo_pairs, calibrations="flux", calibrator_factory=local_factory)
    finally:
        handle.remove()
    assert calls == []  # refused before embedding anything


# ------------------------------------------------------------------ tiny T5


def test_tiny_t5_modes(tiny_t5, demo_pairs) -> None:
    report = explore_poolings(tiny_t5, demo_pairs, calibrations="whitening", calibrator_factory=local_factory)
    t = report.table
    expected = ["max", "last2avg", "first_last_avg", "enc_first", "enc_mean", "encdec_first"]
    expected += ["layer:0", "layer:1", "layer:2"]
    assert pooling_modes_for(tiny_t5) == expected
    assert t["pooling"].tolist() == [m for m in expected for _ in range(2)]
    assert report.n_sentences == len(unique_index(demo_pairs.texts)[0]) > 2 * 32 and not report.warnings
    assert pd.isna(t.loc[t.pooling == "encdec_first", "layer"]).all()
    assert t.loc[t.pooling == "enc_mean", "layer"].tolist() == [2, 2]
    assert np.isfinite(t["spearman"]).all()
    assert report.best["spearman"] == pytest.approx(t["spearman"].max())
    # enc_mean is layer:2 (the encoder output) averaged over tokens
    a = t.set_index(["pooling", "calibration"])
    assert a.loc[("enc_mean", "none"), "spearman"] == pytest.approx(a.loc[("layer:2", "none"), "spearman"], abs=1e-9)


# ------------------------------------------------------------------ CLI


def test_cli_json(cli, capsys, demo_pairs, tmp_path) -> None:
    path = tmp_path / "pairs.csv"
    demo_pairs.to_frame().to_csv(path, index=False)
    argv = ["pooling", "--pairs", str(path), "--json", "--no-cache", "--quiet", "--max-length", "64"]
    assert cli([*argv, "--calibrate", "whitening:32", "--calibrate", "sn"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["n_pairs"] == len(demo_pairs)
    assert len(out["table"]) == 3 * 13  # model, 5 named poolings, layer:0..6
    assert {r["calibration"] for r in out["table"]} == {"none", "whitening:32", "sn"}
    assert set(out["table"][0]) == set(COLUMNS)
    assert out["best"]["spearman"] == max(r["spearman"] for r in out["table"])
    assert next(r for r in out["table"] if r["pooling"] == "last2avg")["layer"] is None


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("sentence1,sentence2\na,b\nc,d\ne,f\n", "gold scores"),
        ("sentence1,sentence2,score\na,b,1\n", "at least 3 scored pairs"),
        (None, "file not found"),
        ("sentence1,sentence2,score\na,b,1\nc,d,2\ne,f,3\n", "unknown calibration method 'flux'"),
    ],
)
def test_cli_bad_input_exit_2(cli, tmp_path, capsys, content: str | None, message: str) -> None:
    path = tmp_path / "pairs.csv"
    if content is not None:
        path.write_text(content)
    argv = ["pooling", "--pairs", str(path), "--json", "--no-cache", "--quiet", "--calibrate", "flux"]
    assert cli(argv if "flux" in message else argv[:-2]) == 2
    assert message in one_error_line(capsys)
