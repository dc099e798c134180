"""Known answers of a migration run end to end (issue 53.6), from vectors on synthetic retrieval tasks: B is A
rotated, rotated and padded, plus noise, or through a known affine map; what the adapters should keep is then known
exactly, and the verdict too ("stay" where B is no better than A)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from isoscope.data.export import to_jsonable
from isoscope.errors import InputError
from isoscope.migrate.config import MigrationConfig
from isoscope.migrate.run import evaluate_migration
from tests.core.migrate.synthetic import min_gap, rotation, synthetic, unit

FAST = {"resamples": 200, "curve": ()}  # degenerate intervals do not depend on the resamples


def run(old, new, task, **config):
    return evaluate_migration(old, new, task, config=MigrationConfig(**{**FAST, **config}))


@pytest.fixture(scope="module")
def rotated():
    """B = A R: every cosine is A's, so the new model is exactly as good as the old (to float32 round-off, which
    cannot reorder documents whose cosines differ by more than ``min_gap`` asserts)."""
    s = synthetic()
    assert min_gap(s.Q, s.D, s.relevant) > 1e-5
    R = rotation(16, 1)
    result = run((s.Q, s.D), (s.Q @ R, s.D @ R), s.task, methods=("procrustes", "ridge"), fit_fraction=0.25)
    return s, result


def test_a_rotated_model_is_no_better_so_the_verdict_is_stay(rotated):
    _, result = rotated
    old, new = result.system("old"), result.system("new")
    np.testing.assert_array_equal(new.scores.to_numpy(), old.scores.to_numpy())
    test = new.tests["ndcg@10"]
    assert (test.mean_difference, test.ci_low, test.ci_high) == (0.0, 0.0, 0.0)
    rec = result.recommendation
    assert rec.verdict == "stay" and rec.words.startswith("stay: the new model is not better here")
    assert rec.measure == "c/b"  # no gain to recover a share of: the gate reads c / b
    for system in result.systems[2:]:
        kept = system.kept["ndcg@10"]
        assert kept.recovered is None and "no gain to recover" in kept.why


@pytest.mark.parametrize("direction", ["new->legacy", "old->new"])
def test_procrustes_recovers_a_rotation_both_ways(rotated, direction):
    """The rotation is recovered to float64 round-off, so the adapted search is the new model's: every query's
    scores, and every top 10, the same (c / b = 1 exactly, its interval too)."""
    _, result = rotated
    c, b = result.adapted("procrustes", direction), result.system("new")
    np.testing.assert_array_equal(c.scores.to_numpy(), b.scores.to_numpy())
    assert c.mean_agreement == 1.0
    kept = c.kept["ndcg@10"].ratio
    assert (kept.value, kept.low, kept.high) == (1.0, 1.0, 1.0)
    run_ = result.run_of("procrustes", direction)
    # held-out texts: mapped and true vectors are the same unit rows to float32 (~1e-7 per cosine)
    assert abs(run_.heldout.cosine.min() - 1.0) < 1e-6 and run_.heldout.shared.min() == 1.0


def test_rotated_and_padded_to_a_wider_space_is_recovered_by_procrustes_and_ridge():
    """B = [A, 0] R' (24 dimensions): a rotation of A padded with zeros. Procrustes pads A the same way; ridge finds
    the exact linear map both ways (the pairs span A's 16 dimensions; the other 8 of B are left at the start)."""
    s = synthetic(seed=1)
    assert min_gap(s.Q, s.D, s.relevant) > 1e-5
    R = rotation(24, 2)
    pad = lambda X: np.hstack([X, np.zeros((len(X), 8))]) @ R  # noqa: E731
    result = run((s.Q, s.D), (pad(s.Q), pad(s.D)), s.task, methods=("procrustes", "ridge"), fit_fraction=0.25)
    assert (result.old.dims, result.new.dims) == (16, 24)
    b = result.system("new").scores.to_numpy()
    for system in (s_ for s_ in result.systems if s_.role == "adapted"):
        np.testing.assert_array_equal(system.scores.to_numpy(), b, err_msg=system.name)
        assert system.mean_agreement == 1.0, system.name
    assert result.recommendation.verdict == "stay"


def test_a_known_affine_map_is_recovered_old_to_new_and_the_verdict_is_migrate():
    """A has a dominant shared direction that cosine search reads instead of the content; B = A W + 0.1 shrinks it
    50-fold (and rotates): the new model is much better. Ridge old->new finds W and the bias exactly (the pairs
    are the old model's unit rows), so the mapped index is the new one: c = b query by query and the recovered
    fraction (c - a) / (b - a) is 1 exactly. new->legacy cannot be exact: an adapter reads its input's direction,
    and the new vectors' lengths (which A W carries) are lost."""
    s = synthetic(seed=0, cone=2.0, noise=0.3)
    W = np.diag([0.02, *np.ones(15)]) @ rotation(16, 5)
    Qb, Db = s.Q @ W + 0.1, s.D @ W + 0.1
    assert min_gap(Qb, Db, s.relevant) > 1e-5
    result = run((s.Q, s.D), (Qb, Db), s.task, methods=("procrustes", "ridge"), fit_fraction=0.25, resamples=1000)
    new_vs_old = result.system("new").tests["ndcg@10"]
    assert new_vs_old.ci_low > 0  # the gain is real: the recovered fraction is defined
    ridge = result.adapted("ridge", "old->new")
    np.testing.assert_array_equal(ridge.scores.to_numpy(), result.system("new").scores.to_numpy())
    kept = ridge.kept["ndcg@10"]
    assert (kept.ratio.value, kept.recovered.value, kept.recovered.low, kept.recovered.high) == (1.0, 1.0, 1.0, 1.0)
    rec = result.recommendation
    assert (rec.method, rec.direction, rec.verdict) == ("ridge", "old->new", "migrate")
    assert rec.measure == "recovered fraction" and "no relevance label was read" in rec.chosen_by
    assert result.adapted("procrustes", "old->new").kept["ndcg@10"].recovered.value < 0.5  # a rotation cannot
    partial = result.system("ridge (old->new, partly re-embedded)")
    assert partial.vs_full["ndcg@10"].mean_difference == 0.0
    assert any(n.startswith("partly re-embedded (60 fit documents") and "no different" in n for n in result.notes)
    losers = result.losers(5)
    assert list(losers.columns) == ["query_id", "query", "old", "new", "adapted", "change"] and len(losers) == 5
    assert (losers["change"] == 0).all()  # the exact map loses nothing anywhere


def test_a_noisy_copy_is_worse_and_the_map_is_the_identity_within_the_noise():
    """B = A + noise (sd 0.05 a coordinate): B searches worse, so stay. Procrustes old->new is fitted near the
    identity; on held-out texts its mapped vectors' cosine with the true ones is the identity's to within the
    error of a rotation fitted on 60 noisy pairs (~ d sigma^2 / k = 7e-4 of cosine, far under the 0.003 asked)."""
    s = synthetic(seed=2)
    rng = np.random.default_rng(9)
    Qb, Db = s.Q + 0.05 * rng.normal(size=s.Q.shape), s.D + 0.05 * rng.normal(size=s.D.shape)
    result = run((s.Q, s.D), (Qb, Db), s.task, methods=("procrustes",), fit_fraction=0.25)
    assert result.recommendation.verdict == "stay"
    held = result.run_of("procrustes", "old->new").heldout
    identity = np.mean(np.einsum("ij,ij->i", unit(s.D[held.rows]), unit(Db[held.rows])))
    assert abs(held.cosine.mean() - identity) < 3e-3


def test_a_corpus_alone_gives_the_label_free_measures_and_says_what_was_not_measured(rotated):
    s, _ = rotated
    R = rotation(16, 1)
    result = evaluate_migration((None, s.D), (None, s.D @ R), None, config=MigrationConfig(methods=("procrustes",),
                                fit_fraction=0.25, curve=(0.1, 0.5), resamples=200))  # fmt: skip
    assert not result.labelled and result.systems[0].role == "adapted"
    rec = result.recommendation
    assert rec.verdict == "migrate" and "whether the new model is better here was not measured" in rec.words
    assert rec.measure == "shared top 10" and (rec.kept.value, rec.kept.low) == (1.0, 1.0)
    frame = result.per_text()
    assert len(frame) == 180 and frame["cosine"].min() > 1 - 1e-6 and (frame["shared@10"] == 1.0).all()
    curve = result.curve()
    assert len(curve) == 4 and (curve["agreement"] == 1.0).all() and curve["c/b"].isna().all()
    with pytest.raises(InputError, match="relevance labels"):
        result.losers()


def test_the_curve_is_drawn_in_pairs_and_recovers_the_map_once_the_pairs_span_the_space():
    s = synthetic(seed=0, cone=2.0, noise=0.3)
    W = np.diag([0.02, *np.ones(15)]) @ rotation(16, 5)
    result = run((s.Q, s.D), (s.Q @ W + 0.1, s.D @ W + 0.1), s.task, methods=("ridge",), fit_fraction=0.25,
                 curve=(0.01, 0.05, 0.25), curve_seeds=(0, 1))  # fmt: skip
    curve = result.curve()
    assert "curve: 0.01 of 240 documents is 2 pair(s), fewer than 4: left out" in result.notes
    assert sorted(set(curve["pairs"])) == [12, 60] and set(curve["seed"]) == {0, 1}
    exact = curve[(curve["pairs"] == 60) & (curve["direction"] == "old->new")]
    assert len(exact) == 2 and (exact["recovered"] == 1.0).all() and (exact["c/b"] == 1.0).all()
    fig = result.plot()
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.title.text.startswith("recovered fraction")
    assert {t.name for t in fig.data} == {"ridge (new->legacy)", "ridge (old->new)"}


def test_the_result_as_a_table_and_as_json(rotated):
    _, result = rotated
    table = result.table()
    assert list(table["system"][:2]) == ["old", "new"] and len(table) == 2 + 2 * 2 + 2  # + 2 partly re-embedded
    assert {"ndcg@10", "agreement@10", "c/b", "recovered", "fit_seconds", "bytes", "added_us_per_query"} <= set(table)
    out = json.loads(json.dumps(to_jsonable(result.to_dict())))
    assert {"task", "old", "new", "fit", "systems", "adapters", "recommendation", "curve", "losers", "notes"} <= set(
        out
    )
    assert out["fit"] == {"pairs": 60, "corpus_pairs": 60, "generic_pairs": 0, "fraction": 0.25}
    ridge = next(a for a in out["adapters"] if a["method"] == "ridge" and a["direction"] == "old->new")
    assert ridge["bytes"] == (16 * 16 + 16) * 8 and ridge["added_us_per_query"] == 0.0
