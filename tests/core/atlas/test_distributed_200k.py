"""The ray engine at the issue's scale: a 200,000-row atlas of 384-d vectors shaped like an embedding space
(``TopicSpace``) built on a two-node Ray cluster on this machine and by the one-machine engine: the graph's recall@15
against exact search, the layout's trustworthiness beside the one-machine build's, and a worker killed mid-search
with the build ending on the same files. Minutes: in the heavy tier and ``make test-ray``."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from isoscope.atlas.pipeline import AtlasConfig, build_atlas, load_atlas
from isoscope.atlas.synthetic import TOPICS, TopicSpace, synthetic_corpus
from isoscope.neighbours.exact import exact_topk
from isoscope.neighbours.index import as_unit_float32
from isoscope.sampling import sample_indices
from tests.core.atlas.ray_support import WorkerKiller, layout_trust, ledger_files

pytest.importorskip("ray")

N = 200_000
DIM = 384
CONFIG = {"calibrate": "none", "landmarks": 10_000}
RAY = {"engine": "ray", "shard_rows": 25_000}  # eight shards


@pytest.fixture(scope="module")
def data():
    texts, topics = synthetic_corpus(N, seed=3)
    code = pd.Categorical(topics, categories=list(TOPICS)).codes
    return texts, TopicSpace.make(DIM, seed=3).draw(code, seed=(3, 0))  # (N, DIM)


@pytest.fixture(scope="module")
def built(cluster, data, tmp_path_factory):
    texts, vectors = data
    root = tmp_path_factory.mktemp("atlases-200k")
    build_atlas(None, texts, root / "ray", config=AtlasConfig(**CONFIG, **RAY), vectors=vectors)
    build_atlas(None, texts, root / "local", config=AtlasConfig(**CONFIG), vectors=vectors)
    return root


def test_the_200k_ivf_graph_has_recall_at_15_of_095_against_exact_search(built, data):
    _, vectors = data
    ids = load_atlas(built / "ray").spaces["raw"].knn_ids  # (n, 16), the row itself first
    rows = sample_indices(N, 1_000, 11)  # not the sample the build chose nprobe on
    unit = as_unit_float32(vectors)
    _, truth = exact_topk(unit, unit[rows], 15, exclude=rows)  # (q, 15)
    recall = np.mean([len(set(a[1:]) & set(t)) / 15 for a, t in zip(ids[rows], truth, strict=True)])
    assert recall >= 0.95
    recorded = json.loads((built / "ray" / "raw" / "knn_recall.json").read_text())
    assert recorded["recall"] >= 0.95 and recorded["shards"] == 8


def test_the_200k_ray_layout_is_within_001_of_the_one_machine_layout(built, data):
    """Trustworthiness (15 neighbours, cosine, 2,000 seeded rows) of both builds: the ray layout no worse than the
    one-machine layout by more than 0.01 (it keeps the landmarks fixed and refines along directed edges, which
    scores higher on this data: the bench records both)."""
    _, vectors = data
    rows = sample_indices(N, 2_000, 5)
    score = layout_trust(vectors, built, rows)
    assert score["local"] > 0.9
    assert score["ray"] >= score["local"] - 0.01, score


def test_a_worker_killed_mid_search_at_200k_ends_with_the_same_files(built, data, tmp_path):
    """SIGKILL of a worker searching its shard of the graph: Ray retries the task and the folder ends byte for
    byte as the build that was never interrupted."""
    texts, vectors = data
    killer = WorkerKiller("_search_shard")

    def progress(stage, done, total):
        if stage == "raw_knn" and done > 0:  # the lists are merged: the shard searches are next
            killer.start()

    with killer.armed():
        build_atlas(
            None, texts, tmp_path / "a", config=AtlasConfig(**CONFIG, **RAY), vectors=vectors, progress=progress
        )
    assert killer.killed, "no search task was seen running"
    assert ledger_files(tmp_path / "a") == ledger_files(built / "ray")
