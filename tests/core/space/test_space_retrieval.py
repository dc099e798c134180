"""``Space.retrieval`` and ``Space.clustering``: the library's numbers behind a space, and their cards."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import isoscope
from isoscope.errors import InputError
from isoscope.paths import DEMO_RETRIEVAL
from isoscope.retrieval.load import load_beir
from isoscope.retrieval.run import RetrievalConfig, evaluate_retrieval


def _vectors_space():
    """A space of vectors whose texts are the demo task's queries and documents (vectors made elsewhere)."""
    task = load_beir(DEMO_RETRIEVAL)
    texts = [*task.queries, *task.documents]
    rng = np.random.default_rng(0)
    X = rng.normal(size=(len(texts), 16)).astype(np.float32)
    X[task.n_queries :] += X[: task.n_queries].mean(axis=0)  # something to fix
    return task, isoscope.Space(X, texts, name="<b>made elsewhere</b>", cache=False), X


def test_retrieval_of_a_vectors_space_looks_the_texts_up_and_equals_the_library() -> None:
    task, space, X = _vectors_space()
    got = space.retrieval(task, ["centre", "csls"], progress=False)
    direct = evaluate_retrieval(X[: task.n_queries], X[task.n_queries :], task,
                                config=RetrievalConfig(variants=("centre", "csls")))  # fmt: skip
    pd.testing.assert_frame_equal(got.table, direct.table())
    html = got._repr_html_()
    assert "isoscope-card-retrieval" in html and "<b>made elsewhere</b>" not in html  # user text escaped
    with pytest.raises(InputError, match="prompts cannot apply"):
        space.retrieval(task, ["centre"], prompts={"query": "query: "}, progress=False)


def test_clustering_reads_a_metadata_column() -> None:
    rng = np.random.default_rng(0)
    labels = np.repeat(["a", "b", "c"], 30)
    X = (rng.normal(size=(3, 8))[np.repeat([0, 1, 2], 30)] * 4 + rng.normal(size=(90, 8))).astype(np.float32)
    space = isoscope.Space(X, [f"t{i}" for i in range(90)], pd.DataFrame({"topic": labels}), cache=False)
    got = space.clustering("topic", ["centre"], seeds=(0, 1), progress=False)
    assert list(got.table["variant"]) == ["raw", "centre"] and got.result.label == "topic"
    assert got.table["v_measure"].iloc[0] > 90  # three separated blobs
    assert "isoscope-card-clustering" in got._repr_html_()
    with pytest.raises(InputError, match="no metadata column 'genre'"):
        space.clustering("genre")


def test_the_report_has_a_retrieval_section_when_a_task_is_given() -> None:
    from isoscope.space.report.build import build_space_report
    from isoscope.space.report.render import render

    task, space, X = _vectors_space()
    report = build_space_report(space, vs="whitening:8", retrieval=task, layers=False, map="pca", progress=False)
    (section,) = [s for s in report.sections if s.key == "retrieval"]
    direct = evaluate_retrieval(X[: task.n_queries], X[task.n_queries :], task,
                                config=RetrievalConfig(variants=("centre", "whitening:8", "csls")))  # fmt: skip
    pd.testing.assert_frame_equal(section.tables[0][1], direct.table().round(4))
    assert report.data["retrieval"]["variants"][2]["variant"] == "whitening:8"
    assert any(tile[0] == "nDCG@10" for tile in report.tiles)
    html = render(report)
    assert "Retrieval: would a fix help search?" in html and "<b>made elsewhere</b>" not in html
    without = build_space_report(space, vs="whitening:8", layers=False, map="pca", progress=False)
    assert not [s for s in without.sections if s.key == "retrieval"] and "retrieval" not in without.data
