"""Hostile inputs to a migration (issue 53.6): mismatched row counts, NaN and empty vectors, a fit set smaller than
the dimension (regularised, and said so), too few pairs, a fit fraction out of range, an unknown method or
direction; in the library one ``InputError`` line each, on the command line exit status 2 and one line."""

from __future__ import annotations

import numpy as np
import pytest

from isoscope.errors import InputError
from isoscope.migrate.config import MigrationConfig
from isoscope.migrate.run import evaluate_migration
from tests.core.migrate.synthetic import rotation, synthetic
from tests.hostile.conftest import assert_cli_refused, assert_one_line
from tests.retrieval_helpers import write_beir
from tests.vector_files import write_parquet

FAST = {"resamples": 100, "curve": ()}


@pytest.fixture(scope="module")
def pair():
    s = synthetic(seed=4)
    return s, s.D @ rotation(16, 6), s.Q @ rotation(16, 6)


def _refused(call, *fragments: str) -> str:
    with pytest.raises(InputError) as err:
        call()
    message = str(err.value)
    assert_one_line(message)
    for f in fragments:
        assert f in message, f"{f!r} not in {message!r}"
    return message


def test_vectors_that_are_not_the_same_texts_or_not_numbers(pair):
    s, Db, Qb = pair
    config = MigrationConfig(**FAST)
    run = lambda old, new: evaluate_migration(old, new, s.task, config=config)  # noqa: E731
    _refused(lambda: run((s.Q, s.D), (Qb, Db[:-1])), "the old space holds 240 documents and the new 239")
    _refused(lambda: run((s.Q, s.D), (Qb[:-1], Db)), "60 queries and 240 documents, but vectors of 60 and 59")
    bad = Db.copy()
    bad[5, 3] = np.nan
    _refused(lambda: run((s.Q, s.D), (Qb, bad)), "the new documents row 5 holds NaN or inf")
    zero = s.D.copy()
    zero[7] = 0
    _refused(lambda: run((s.Q, zero), (Qb, Db)), "the old documents row 7 is all zeros")
    _refused(lambda: run((s.Q[:, :8], s.D), (Qb, Db)), "the old space's vectors have 8 and 16 dimensions")
    generic = (np.ones((10, 16)), np.ones((9, 16)))
    _refused(lambda: evaluate_migration((s.Q, s.D), (Qb, Db), s.task, fit=generic, config=config),
             "10 old vectors and 9 new")  # fmt: skip


def test_a_fit_set_smaller_than_the_dimension_is_regularised_and_said_so(pair):
    """12 pairs (5% of 240 documents) for 16 dimensions: the maps are regularised (the rotation, the penalty), every
    number stays finite, and the notes say it; the defaults that cannot fit leave themselves out, said too."""
    s, Db, Qb = pair
    result = evaluate_migration((s.Q, s.D), (Qb, Db), s.task, config=MigrationConfig(**FAST))
    assert result.n_pairs == 12
    regularised = [n for n in result.notes if "fewer pairs than dimensions, so the map is regularised" in n]
    assert len(regularised) == 3 * 2  # procrustes, ridge, ridge:procrustes, both ways
    assert any(n.startswith("mlp left out") for n in result.notes)
    assert any(n.startswith("lowrank:64 left out") for n in result.notes)
    table = result.table()
    assert np.isfinite(table.loc[table["role"] == "adapted", ["ndcg@10", "agreement@10", "c/b"]].to_numpy()).all()


def test_too_few_pairs_and_a_method_that_cannot_fit_here(pair):
    s, Db, Qb = pair
    few = MigrationConfig(fit_fraction=0.01, **FAST)  # 2 of 240 documents
    _refused(lambda: evaluate_migration((s.Q, s.D), (Qb, Db), s.task, config=few), "an adapter needs at least 4")
    wide = MigrationConfig(methods=("lowrank:64",), fit_fraction=0.5, **FAST)
    _refused(
        lambda: evaluate_migration((s.Q, s.D), (Qb, Db), s.task, config=wide), "lowrank:R needs R between 1 and 16"
    )


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        ({"fit_fraction": 1.0}, "between 0 and less than 1"),
        ({"fit_fraction": -0.1}, "between 0 and less than 1"),
        ({"fit_fraction": float("nan")}, "must be a number"),
        ({"fit_fraction": "half"}, "must be a number"),
        ({"curve": (0.0,)}, "a curve share must be between more than 0"),
        ({"methods": ("whitening",)}, "unknown"),
        ({"methods": ("procrustes+ridge",)}, "an adapter is one map, not a chain"),
        ({"methods": ()}, "at least one adapter method"),
        ({"directions": ("up",)}, "unknown direction 'up'"),
        ({"directions": ()}, "at least one direction"),
        ({"threshold": 1.5}, "between 0 and 1"),
        ({"resamples": 10**9}, "resamples"),
        ({"tested": ("bleu",)}, "unknown metric 'bleu'"),
    ],
)
def test_a_config_that_cannot_run_is_refused_when_made(options, fragment):
    _refused(lambda: MigrationConfig(**options), fragment)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("migrate-hostile")
    s = synthetic(seed=4)
    ids = [(f"q{i}", t) for i, t in enumerate(s.task.queries)], [(f"d{i}", t) for i, t in enumerate(s.task.documents)]
    write_beir(root / "beir", *ids, [(q, d, 1) for q, docs in s.task.qrels.items() for d in docs])
    texts = [*s.task.queries, *s.task.documents]
    A = np.vstack([s.Q, s.D]).astype(np.float32)
    write_parquet(root / "old.parquet", A, texts)
    nan = A.copy()
    nan[3, 0] = np.nan
    write_parquet(root / "nan.parquet", nan, texts)
    write_parquet(root / "half.parquet", A[:150], texts[:150])
    write_parquet(root / "bare.parquet", A)
    (root / "empty.txt").write_text("", encoding="utf-8")
    return root


@pytest.mark.parametrize(
    ("new", "extra", "fragments"),
    [
        ("vectors={root}/nan.parquet:emb", [], ("nan",)),
        ("vectors={root}/half.parquet:emb", [], ("150 of the 240 texts are not in its text column",)),
        ("vectors={root}/bare.parquet:emb", [], ("has no text column",)),
        ("vectors={root}/old.parquet:emb", ["--fit", "{root}/empty.txt"], ("empty",)),
        ("model={root}/no-such-model", [], ()),
        ("vectors={root}/old.parquet:emb,calibrate=whitening", [], ("drop calibrate=",)),
    ],
)
def test_the_command_refuses_in_one_line(cli, files, new, extra, fragments):
    argv = ["migrate", "--old", f"vectors={files}/old.parquet:emb", "--new", new.format(root=files),
            "--beir", str(files / "beir"), "--quiet", *(a.format(root=files) for a in extra)]  # fmt: skip
    assert_cli_refused(cli(*argv), *fragments)
