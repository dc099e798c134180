"""isoscope.atlas.distributed and the ray_* modules: the ray engine on a two-node Ray cluster on this machine (ray.cluster_utils.Cluster),
against the one-machine build of the same vectors: the folder opens alike, the graph's recall against exact
search, the layout's trustworthiness, and a driver killed mid-build resuming to the same files."""

from __future__ import annotations

import builtins
import json
import os
import subprocess
import sys
import textwrap
import types

import numpy as np
import pytest

from isoscope.atlas.pipeline import AtlasConfig, build_atlas, load_atlas
from isoscope.atlas.synthetic import synthetic_vectors
from isoscope.neighbours.exact import exact_topk
from isoscope.neighbours.index import as_unit_float32
from isoscope.sampling import sample_indices
from tests.core.atlas.ray_support import WorkerKiller, layout_trust, ledger_files

ray = pytest.importorskip("ray")

N = 8_000
DIM = 32
CONFIG = {"calibrate": "none", "landmarks": 2_000}
RAY = {"engine": "ray", "shard_rows": 2_000}  # four shards
PROGRESS: dict[str, list[tuple[int, int]]] = {}  # the ray build's progress, stage by stage (the ``built`` fixture)


@pytest.fixture(scope="module")
def data():
    texts, _, vectors = synthetic_vectors(N, DIM, seed=3)
    return texts, vectors


@pytest.fixture(scope="module")
def built(cluster, data, tmp_path_factory):
    """The same vectors built by the ray engine and by the one-machine engine."""
    texts, vectors = data
    root = tmp_path_factory.mktemp("atlases")

    def progress(stage, done, total):  # what each stage reported as it went (the stage marks (0, 1), (1, 1) apart)
        if total > 1:
            PROGRESS.setdefault(stage, []).append((done, total))

    config = AtlasConfig(**CONFIG, **RAY)
    ray_run = build_atlas(None, texts, root / "ray", config=config, vectors=vectors, progress=progress)
    local_run = build_atlas(None, texts, root / "local", config=AtlasConfig(**CONFIG), vectors=vectors)
    return root, ray_run, local_run


def test_a_ray_build_opens_like_a_one_machine_build(built):
    root, ray_run, local_run = built
    assert ray_run.computed == local_run.computed  # the same stages, recorded in the same ledger
    a, b = load_atlas(root / "ray"), load_atlas(root / "local")
    assert a.n == b.n == N and set(a.spaces) == set(b.spaces) == {"raw"}
    assert a.points["text"].tolist() == b.points["text"].tolist()
    np.testing.assert_array_equal(a.vectors(), b.vectors())
    assert set(ledger_files(root / "ray")) == set(ledger_files(root / "local")) | {"raw/knn_recall.json"}
    assert not (root / "ray" / "raw" / "knn.parts").exists() and not (root / "ray" / "raw" / "layout.parts").exists()
    assert a.manifest["config"]["engine"] == "ray" and "engine" not in b.manifest["config"]


def test_the_ray_engines_tiles_are_the_ones_rendered_in_process(built, tmp_path):
    """The ``tiles`` stage ran as Ray tasks (one per level) on the two nodes: its files are byte for byte what the
    one-machine engine's in-process rendering of the same folder writes."""
    import shutil

    from isoscope.atlas.pyramid import TOP_LEVEL, render_levels, top_files

    root, ray_run, _ = built
    assert "tiles" in ray_run.computed
    copy = tmp_path / "copy"
    shutil.copytree(root / "ray", copy)
    shutil.rmtree(copy / "raw" / "tiles")
    render_levels(copy, "raw", range(TOP_LEVEL + 1))
    ray_files, local_files = top_files(root / "ray", "raw"), top_files(copy, "raw")
    assert len(ray_files) == 341 and [p.read_bytes() for p in ray_files] == [p.read_bytes() for p in local_files]


def test_the_ray_engines_clusters_are_the_ones_computed_in_process(built, tmp_path):
    """The clusters stage ran as Ray tasks (bounds, points per cell and every row's labels per shard of 2,000 rows;
    the words in row-group tasks): its files are byte for byte what the one-machine engine writes from the same
    layout in one block of rows."""
    import shutil

    from isoscope.atlas.clusters import clusters_stage

    root, ray_run, _ = built
    assert "raw_clusters" in ray_run.computed
    copy = tmp_path / "copy"
    shutil.copytree(root / "ray", copy)
    names = ("cluster.npy", "density.npy", "grid.npy", "clusters.json")
    for name in names:
        (copy / "raw" / name).unlink()
    clusters_stage(copy, copy / "raw", AtlasConfig(**CONFIG))
    for name in names:
        assert (copy / "raw" / name).read_bytes() == (root / "ray" / "raw" / name).read_bytes(), name
    assert not (copy / "raw" / "clusters.parts").exists() and not (root / "ray" / "raw" / "clusters.parts").exists()
    meta = json.loads((copy / "raw" / "clusters.json").read_text())
    assert len(meta["levels"]) == 3 and meta["clusters"] and all(c["words"] for c in meta["clusters"])


def test_the_ray_engines_spatial_index_is_the_one_sorted_in_process(built, tmp_path):
    """The index stage ran as a sample sort in Ray tasks (4 shards of keys, 4 groups): its four files are byte for
    byte ``spatial.write_index``'s, which sorts every point in one process; again with groups of 700 rows (12
    groups, several of them cut inside a shard)."""
    import shutil

    from isoscope.atlas.ray_index import ray_index
    from isoscope.atlas.spatial import INDEX_FILES, World, write_index

    root, ray_run, _ = built
    assert "index" in ray_run.computed
    copy = tmp_path / "copy"
    shutil.copytree(root / "ray" / "raw", copy)
    world = World.around(json.loads((copy / "clusters.json").read_text())["bounds"])
    write_index(copy, np.load(copy / "xy.npy"), world)
    for name in INDEX_FILES:
        assert (copy / name).read_bytes() == (root / "ray" / "raw" / name).read_bytes(), name
    ray_index(copy, world, shard_rows=700)
    for name in INDEX_FILES:
        assert (copy / name).read_bytes() == (root / "ray" / "raw" / name).read_bytes(), name
    assert not (copy / "index.parts").exists()


def test_the_ivf_graph_has_recall_at_15_of_095_against_exact_search(built, data):
    root, _, _ = built
    _, vectors = data
    ids = load_atlas(root / "ray").spaces["raw"].knn_ids  # (n, 16), the row itself first
    assert ids.shape == (N, 16)
    np.testing.assert_array_equal(ids[:, 0], np.arange(N))
    rows = sample_indices(N, 500, 11)  # not the sample the build measured on
    unit = as_unit_float32(vectors)
    _, truth = exact_topk(unit, unit[rows], 15, exclude=rows)  # (q, 15) the exact other neighbours
    recall = np.mean([len(set(a[1:]) & set(t)) / 15 for a, t in zip(ids[rows], truth, strict=True)])
    assert recall >= 0.95
    recorded = json.loads((root / "ray" / "raw" / "knn_recall.json").read_text())
    assert recorded["k"] == 15 and recorded["recall"] >= 0.95 and recorded["shards"] == 4
    assert abs(recorded["recall"] - recall) < 0.05  # two samples of the same graph


def test_the_ray_layout_is_as_trustworthy_as_the_one_machine_layout(built, data):
    root, _, _ = built
    _, vectors = data
    rows = sample_indices(N, 2_000, 5)
    scores = layout_trust(vectors, root, rows)
    assert scores["local"] > 0.9
    assert abs(scores["ray"] - scores["local"]) <= 0.01, scores


KILLED_DRIVER = """
import os, signal, sys
import numpy as np, ray
from isoscope.atlas.pipeline import AtlasConfig, build_atlas
from isoscope.atlas.synthetic import synthetic_vectors

texts, _, vectors = synthetic_vectors({n}, {dim}, seed=3)
ray.init(address=sys.argv[1], log_to_driver=False)

def progress(stage, done, total):
    if stage == "raw_layout" and (done, total) == (1, 4):  # the landmarks recorded: the driver dies here
        os.kill(os.getpid(), signal.SIGKILL)

build_atlas(None, texts, sys.argv[2], config=AtlasConfig(**{config}), vectors=vectors, progress=progress)
"""


def test_a_driver_killed_mid_stage_resumes_to_the_same_files(built, cluster, data, tmp_path):
    root, _, _ = built
    texts, vectors = data
    out = tmp_path / "killed"
    script = KILLED_DRIVER.format(n=N, dim=DIM, config={**CONFIG, **RAY})
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), cluster.address, str(out)], capture_output=True, timeout=300
    )
    assert done.returncode == -9, done.stderr.decode()[-2000:]
    anchors = out / "raw" / "layout.parts" / "anchors.npy"
    assert anchors.exists() and not (out / "raw" / "xy.npy").exists()
    before = os.stat(anchors).st_mtime_ns
    seen = []

    def progress(stage, done, total):  # the landmarks are read back, not recomputed
        if stage == "raw_layout" and (done, total) == (1, 4):
            seen.append(os.stat(anchors).st_mtime_ns)

    run = build_atlas(None, texts, out, config=AtlasConfig(**CONFIG, **RAY), vectors=vectors, progress=progress)
    assert seen == [before]
    assert "raw_knn" in run.skipped and "raw_layout" in run.computed
    assert ledger_files(out) == ledger_files(root / "ray")  # byte for byte the build that was never interrupted


KILLED_IN_INDEX = """
import os, signal, sys
import numpy as np, ray
from isoscope.atlas.pipeline import AtlasConfig, build_atlas
from isoscope.atlas.synthetic import synthetic_vectors

texts, _, vectors = synthetic_vectors({n}, {dim}, seed=3)
ray.init(address=sys.argv[1], log_to_driver=False)

def progress(stage, done, total):
    if stage == "index" and total > 1 and done == 6:  # 4 shards' keys and 2 of the 4 groups recorded: dies here
        os.kill(os.getpid(), signal.SIGKILL)

build_atlas(None, texts, sys.argv[2], config=AtlasConfig(**{config}), vectors=vectors, progress=progress)
"""


def test_a_driver_killed_in_the_index_stage_resumes_task_by_task(built, cluster, data, tmp_path):
    """Issue 54.5: the index stage's tasks are recorded in its parts folder's ledger as they finish; a driver killed
    among them leaves them behind, and the rerun reads them back (the shards' keys are not sorted again) and ends
    with the files of the build that was never interrupted."""
    root, _, _ = built
    texts, vectors = data
    out = tmp_path / "killed"
    script = KILLED_IN_INDEX.format(n=N, dim=DIM, config={**CONFIG, **RAY})
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), cluster.address, str(out)], capture_output=True, timeout=600
    )
    assert done.returncode == -9, done.stderr.decode()[-2000:]
    keys = out / "raw" / "index.parts" / "keys-0.npy"
    assert keys.exists() and (out / "raw" / "index.parts" / "group-1-rank.npy").exists()
    assert not (out / "raw" / "morton_rank.npy").exists()
    before = os.stat(keys).st_mtime_ns
    seen: list[tuple[int, int, int]] = []

    def progress(stage, done, total):  # the keys and the groups found done are reported first, then the rest
        if stage == "index" and total > 1:
            seen.append((done, total, os.stat(keys).st_mtime_ns if keys.exists() else 0))

    run = build_atlas(None, texts, out, config=AtlasConfig(**CONFIG, **RAY), vectors=vectors, progress=progress)
    assert seen[0] == (1, 12, before) and seen[5][:2] == (6, 12) and seen[-1][:2] == (12, 12)
    assert "raw_layout" in run.skipped and "index" in run.computed
    assert ledger_files(out) == ledger_files(root / "ray")  # byte for byte the build that was never interrupted
    assert not (out / "raw" / "index.parts").exists()


def test_the_clusters_extras_and_index_report_shard_by_shard(built):
    """Issue 54.5: the clusters (bounds, counts, labels per shard, words per row-group task), extras (norms per
    shard, lengths) and index (keys and ranks per shard, groups) stages report each task as it ends."""
    seen = PROGRESS
    assert seen["raw_clusters"] == [(i, 13) for i in range(1, 14)]  # 3 passes of 4 shards, 1 task of words
    assert seen["extras"] == [(i, 5) for i in range(1, 6)]  # 4 shards of norms, the lengths
    assert seen["index"] == [(i, 12) for i in range(1, 13)]  # 4 shards of keys, 4 groups, 4 shards of ranks
    # the graph: 10 rounds of k-means, 4 shards added, 4 searched, as the share of the rows each stands for
    assert seen["raw_knn"] == [(N * i // 18, N) for i in range(1, 19)]


def test_the_command_prints_its_plan_and_builds_both_spaces_on_ray(cluster, tmp_path, capsys):
    """`isoscope atlas --engine ray` on a vectors file, raw and whitened: the plan on stderr before the build, both
    spaces' graphs with their recall, a folder the app's loader opens."""
    from isoscope.cli import main
    from tests.vector_files import write_parquet

    texts, _, vectors = synthetic_vectors(3_000, DIM, seed=4)
    src = write_parquet(tmp_path / "v.parquet", vectors, texts)
    out = tmp_path / "atlas"
    argv = ["atlas", "--vectors", str(src), "--out", str(out), "--engine", "ray", "--shard-rows", "1000"]
    assert main([*argv, "--landmarks", "1000", "--json"]) == 0
    std = capsys.readouterr()
    result = json.loads(std.out)
    plan = std.err[std.err.index("plan: 3,000 rows x 32 dims, 2 space(s), engine ray") :].splitlines()
    assert "3 shard(s) of 1,000 rows on 2 worker CPU(s)" in plan[1]  # printed before the build
    assert result["plan"]["engine"] == "ray" and result["plan"]["shards"] == 3
    assert {"raw_knn", "cal_knn", "raw_layout", "cal_layout"} <= set(result["computed"])
    atlas = load_atlas(out)
    assert set(atlas.spaces) == {"raw", "cal"} and atlas.n == 3_000
    for space in ("raw", "cal"):
        assert json.loads((out / space / "knn_recall.json").read_text())["recall"] >= 0.95
        assert np.isfinite(atlas.spaces[space].xy).all()


def test_texts_are_embedded_by_ray_data_actors_like_the_one_machine_engine(cluster, encoder, tmp_path):
    """The embed stage on the cluster (isoscope.encode.shards.embed_with_ray, the real model in each actor) over
    texts in Parquet shards (each actor reads its rows from points.parquet): the vectors of the one-machine engine
    (ONNX Runtime fp32) on the same texts as a list within its fp32 tolerance."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from isoscope.atlas.synthetic import synthetic_corpus
    from isoscope.data.sharded import ParquetShards
    from isoscope.encode.precision import FP32_ENGINE_TOLERANCE

    texts, _ = synthetic_corpus(600, seed=6)
    (tmp_path / "corpus").mkdir()
    for i in range(3):
        pq.write_table(pa.table({"text": texts[200 * i : 200 * (i + 1)]}), tmp_path / "corpus" / f"{i}.parquet")
    config = {"calibrate": "none", "layout": "pca"}
    before = builtins.print
    shards = ParquetShards.open(tmp_path / "corpus")
    run = build_atlas(encoder, shards, tmp_path / "ray", config=AtlasConfig(**config, engine="ray", shard_rows=1_000))
    build_atlas(encoder, texts, tmp_path / "local", config=AtlasConfig(**config))
    assert run.engine == "Ray Data (torch)" and not (tmp_path / "ray" / "embed.shards").exists()
    assert builtins.print is before
    a, b = load_atlas(tmp_path / "ray").vectors(), load_atlas(tmp_path / "local").vectors()
    rel = np.linalg.norm(a - b, axis=1) / np.linalg.norm(b, axis=1)
    assert rel.max() <= FP32_ENGINE_TOLERANCE


def test_a_worker_killed_mid_task_is_retried_and_the_files_are_the_same(built, data, tmp_path):
    """SIGKILL of the worker process running a refinement task: Ray retries the task (``max_retries``) and the
    build ends with the files of the build that was never interrupted."""
    root, _, _ = built
    texts, vectors = data
    killer = WorkerKiller("_refine_shard")

    def progress(stage, done, total):
        if stage == "raw_layout" and (done, total) == (2, 4):  # placed: refinement next
            killer.start()

    with killer.armed():
        build_atlas(
            None, texts, tmp_path / "a", config=AtlasConfig(**CONFIG, **RAY), vectors=vectors, progress=progress
        )
    assert killer.killed, "no refinement task was seen running"
    # the driver printed the worker's error without putting Ray's own print in builtins (numba refuses it)
    assert isinstance(builtins.print, types.BuiltinFunctionType)
    assert ledger_files(tmp_path / "a") == ledger_files(root / "ray")


def test_labels_counted_in_tasks_are_the_labels_counted_here(built, data, tmp_path):
    """The ray engine's label tasks (row groups of a points file, 3 a task: 3 tasks over 8 groups of 1,000 rows)
    merged on the driver: the words of every cluster as counted in one process."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from isoscope.atlas.distributed import ray_tally
    from isoscope.atlas.labels import top_words

    root, _, _ = built
    texts, _ = data
    pq.write_table(pa.table({"text": texts}), tmp_path / "points.parquet", row_group_size=1_000)
    rng = np.random.default_rng(0)
    labelings = [rng.integers(-1, 6, N).astype(np.int32), load_atlas(root / "ray").spaces["raw"].cluster]
    paths = [tmp_path / f"labels-{i}.npy" for i in range(2)]
    for path, labels in zip(paths, labelings, strict=True):
        np.save(path, labels)
    tally = ray_tally(tmp_path / "points.parquet", paths, groups_per_task=3)
    for i, labels in enumerate(labelings):
        assert tally.top_words(i) == top_words(texts, labels)


def test_the_address_check_lets_the_clusters_gcs_through(cluster):
    """isoscope.encode.ray_address: Ray's GCS answers the gRPC handshake a remote --ray-address must answer, and a
    driver connects through the checks (a fresh process: this one's Ray is initialised already)."""
    from isoscope.encode.ray_address import check_reachable, parse_ray_address, probe

    host, port = cluster.address.rsplit(":", 1)
    assert probe(host, int(port), 10) is None
    check_reachable(parse_ray_address(cluster.address))  # no InputError
    script = "import sys, ray; from isoscope.encode.shards import _ray_init; print(_ray_init(sys.argv[1], 1)); ray.shutdown()"
    proc = subprocess.run([sys.executable, "-c", script, cluster.address], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("True"), proc.stderr[-3000:]
