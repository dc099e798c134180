"""isoscope.encode.shards: shards of vectors, IVF-PQ from shards, the Ray engine and the package its workers get."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import torch

import isoscope.encode.shards as sh
from isoscope.cli import main
from isoscope.data import load_pairs
from isoscope.encode.embed import EmbedConfig, encode
from isoscope.errors import InputError
from isoscope.neighbours.index import build_index, recall_at_k
from tests.data_helpers import clustered


def test_workers_get_the_package_under_its_import_name(tmp_path):
    """A cluster's workers import what Ray ships under the folder's name: it must be ``isoscope``, without the
    dashboard, and importable from that folder ahead of any installed copy."""
    folder = sh.package_for_workers(tmp_path)
    assert folder.name == "isoscope" and (folder / "encode" / "shards.py").is_file()
    assert not (folder / "dashboard").exists() and not list(folder.rglob("__pycache__"))
    code = "import isoscope.encode.shards as s, sys; print(s.__file__)"
    proc = subprocess.run(
        [sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(tmp_path)!r}); {code}"],
        capture_output=True,
        text=True,
        timeout=300,  # an import; generous because other jobs may share the cores
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().startswith(str(folder))


def test_save_and_load_shards_in_id_order(tmp_path):
    X = clustered(1050, 32, 30, seed=0, spread=0.5)
    assert sh.save_shards(X, tmp_path / "s", shard_rows=100) == 11
    ids, vectors = sh.load_shards(tmp_path / "s")
    np.testing.assert_array_equal(ids, np.arange(1050))
    np.testing.assert_array_equal(vectors, X)
    with pytest.raises(InputError, match="already holds shards"):
        sh.save_shards(X, tmp_path / "s")
    sh.shard_path(tmp_path / "s", 4).unlink()
    with pytest.raises(InputError, match="incomplete"):
        sh.load_shards(tmp_path / "s")
    sh.shard_path(tmp_path / "s", 5).write_bytes(b"not a zip")
    with pytest.raises(InputError, match="not a readable shard"):
        sh.load_shards(tmp_path / "s")


def test_ivfpq_from_shards_matches_in_memory_search(tmp_path):
    X = clustered(6000, 32, 30, seed=1, spread=0.5)
    sh.save_shards(X, tmp_path / "s", shard_rows=1000)
    index = sh.build_ivfpq_from_shards(tmp_path / "s", sample_size=3000, nlist=32, m=8, nbits=6, nprobe=8, seed=0)
    assert index.kind == "ivfpq" and index.ntotal == 6000 and index.params.pq_m == 8
    exact = build_index(X, "flat")
    queries = clustered(100, 32, 30, seed=1, spread=0.5) + 0.01
    assert recall_at_k(index, exact, queries, k=10) >= 0.3  # random ids: ~0.002
    _, ids = index.search(X[[5, 4321]], 1)
    np.testing.assert_array_equal(ids[:, 0], [5, 4321])  # ids survive shard-by-shard adding
    with pytest.raises(InputError, match="no complete shard set"):
        sh.build_ivfpq_from_shards(tmp_path / "missing")


@pytest.mark.slow
def test_ray_engine_equals_single_process(tmp_path, stsb_dir, encoder, capsys):
    """800 STS-B sentences through `isoscope embed --engine ray` (local Ray, 2 actors, 4 shards)."""
    pairs = load_pairs(stsb_dir / "stsb-en-train.csv")
    texts = pairs.texts[:800]
    src = tmp_path / "stsb.txt"
    src.write_text("\n".join(texts), encoding="utf-8")
    shards, out = tmp_path / "shards", tmp_path / "stsb.npy"
    argv = ["embed", "--engine", "ray", "--input", str(src), "--shard-dir", str(shards), "--out", str(out)]
    argv += ["--chunk-size", "200", "--actors", "2", "--batch-size", "32", "--quiet", "--json"]
    assert main(argv) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["n"] == 800 and result["shards"] == 4 and result["computed_shards"] == 4
    assert sorted(p.name for p in shards.glob("shard-*.npz")) == [f"shard-{i:06d}.npz" for i in range(4)]

    single = encode(encoder, texts, None, config=EmbedConfig(batch_size=64, max_length=256))  # (800, 384)
    ids, vectors = sh.load_shards(shards)
    np.testing.assert_array_equal(ids, np.arange(800))
    np.testing.assert_allclose(vectors, single, atol=1e-5)
    np.testing.assert_array_equal(np.load(out), vectors)

    # a rerun finds every shard done and starts no Ray work
    assert main(argv) == 0
    again = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert again["computed_shards"] == 0 and again["resumed_shards"] == 4

    index = sh.build_ivfpq_from_shards(shards, sample_size=800, nlist=16, m=48, nprobe=16)
    assert index.ntotal == 800
    _, top = index.search(single[:50], 5)
    assert (top == np.arange(50)[:, None]).any(axis=1).mean() >= 0.9  # each sentence finds itself


def test_actors_ask_for_a_gpu_each_on_cuda():
    assert sh.actor_options("cuda") == {"num_cpus": 1, "num_gpus": 1}
    assert sh.actor_options("cpu") == {"num_cpus": 1} and sh.actor_options("mps") == {"num_cpus": 1}
    assert sh.actor_device("cuda:1") == "cuda" and sh.actor_device("CPU") == "cpu"  # Ray gives each actor its own GPU
    expected = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
    assert sh.actor_device("auto") == expected  # decided by this machine
    assert "num_gpus" not in sh.actor_options(sh.actor_device("cpu"))
