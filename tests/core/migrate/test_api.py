"""``isoscope.migrate(old, new, ...)``: the callable package on Spaces of vectors and on encoders, its card, the
one-file report and the migration section of a space's report."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

import isoscope
from isoscope.errors import InputError
from isoscope.migrate.config import MigrationConfig
from tests.core.migrate.synthetic import rotation, synthetic

CONFIG = MigrationConfig(methods=("procrustes", "ridge"), fit_fraction=0.25, curve=(0.1, 0.25), resamples=200)


@pytest.fixture(scope="module")
def spaces():
    """Two Spaces of vectors holding the task's query and document texts: B is A rotated."""
    s = synthetic(seed=3)
    texts = [*s.task.queries, *s.task.documents]
    A = np.vstack([s.Q, s.D])  # (q + n, 16)
    old = isoscope.Space(A, texts, name="old <index>")
    new = isoscope.Space(A @ rotation(16, 4), texts, name="new model")
    return s, old, new


@pytest.fixture(scope="module")
def migration(spaces):
    s, old, new = spaces
    return isoscope.migrate(old, new, task=s.task, config=CONFIG, progress=False)


def test_the_package_is_the_function_and_stays_a_package(migration):
    import isoscope.migrate.methods as methods  # the modules import as before, after a call

    assert callable(isoscope.migrate) and isoscope.migrate.__name__ == "isoscope.migrate"
    assert methods.make_adapter("ridge").method == "ridge"
    assert type(migration).__name__ == "Migration" and isinstance(migration, isoscope.migrate.results.MigrationResult)


def test_spaces_of_vectors_are_looked_up_by_text(migration):
    assert (migration.old.name, migration.old.kind, migration.new.dims) == ("old <index>", "vectors", 16)
    assert migration.recommendation.verdict == "stay"  # a rotation is no better
    assert migration.adapted("procrustes", "old->new").kept["ndcg@10"].ratio.value == 1.0


def test_a_text_the_space_lacks_and_a_calibrated_space_are_refused(spaces):
    s, old, new = spaces
    with pytest.raises(InputError, match="are not in its text column"):
        isoscope.migrate(old, new[:100], task=s.task, config=CONFIG, progress=False)
    with pytest.raises(InputError, match="calibrated"):
        isoscope.migrate(old.calibrate("centre", progress=False), new, task=s.task, config=CONFIG, progress=False)
    with pytest.raises(InputError, match="give the new model"):
        isoscope.migrate(old, None, task=s.task, progress=False)


def test_the_card_shows_the_verdict_and_escapes_text(migration):
    html = migration._repr_html_()
    assert 'class="isoscope-card isoscope-card-migration"' in html
    assert "stay: the new model is not better here" in html and "procrustes (old-&gt;new)" in html
    assert "old &lt;index&gt;" in html and "<index>" not in html


def test_the_one_file_report(migration, tmp_path):
    path = migration.report(tmp_path / "migration.html", command="isoscope migrate --new test")
    html = path.read_text(encoding="utf-8")
    assert "Migration: switch models without re-embedding?" in html and "kept against fit pairs" in html
    data = json.loads(re.search(r'id="isoscope-data">(.*?)</script>', html).group(1))
    assert data["migration"]["recommendation"]["verdict"] == "stay"
    assert data["migration"]["fit"]["corpus_pairs"] == 60


def test_a_space_report_gets_a_migration_section(spaces, migration, tmp_path):
    _, old, _ = spaces
    path = old.report(tmp_path / "space.html", migration=migration, map="pca", layers=False, progress=False)
    html = path.read_text(encoding="utf-8")
    assert 'id="migration"' in html and 'href="#migration"' in html


def test_two_encoders_of_different_widths_on_the_demo_task():
    """Real (tiny, random) models, never mocks: each embeds the demo task's queries and documents itself."""
    from tests.tiny_models import tiny_bert

    old, new = tiny_bert(seed=0), tiny_bert(seed=1, hidden_size=48, intermediate_size=96)
    config = MigrationConfig(methods=("procrustes", "ridge:procrustes"), fit_fraction=0.2, curve=(), resamples=200)
    m = isoscope.migrate(old, new, config=config, progress=False)
    assert (m.task.n_queries, len(m.documents), m.old.dims, m.new.dims) == (55, 300, 32, 48)
    assert m.new.kind == "model" and m.new.provenance["pooling"] == "mean"
    assert {(a.method, a.direction) for a in m.adapters} == {
        (meth, d) for meth in ("procrustes", "ridge:procrustes") for d in ("new->legacy", "old->new")
    }
    assert m.recommendation.verdict in ("stay", "re-embed", "migrate") and m.adapter().n_features_in_ in (32, 48)
