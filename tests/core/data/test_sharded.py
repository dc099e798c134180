"""isoscope.data.sharded: a corpus in Parquet shards read a batch at a time, and the atlas built from it: the same
folder as from the texts in memory."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from isoscope.atlas.pipeline import AtlasConfig, build_atlas, load_atlas
from isoscope.atlas.synthetic import synthetic_vectors
from isoscope.cache import text_digest
from isoscope.data.sharded import ParquetShards, is_shard_folder
from isoscope.errors import InputError


def _write(folder, texts, vectors=None, extra=None, *, files=3, row_group=50):
    """``texts`` (and ``vectors`` as an ``embedding`` column, ``extra`` columns) split over ``files`` Parquet files."""
    folder.mkdir(parents=True, exist_ok=True)
    bounds = np.linspace(0, len(texts), files + 1).astype(int)
    for i, (s, e) in enumerate(itertools.pairwise(bounds)):
        cols = {"text": texts[s:e], **{k: v[s:e] for k, v in (extra or {}).items()}}
        if vectors is not None:
            d = vectors.shape[1]
            cols["embedding"] = pa.FixedSizeListArray.from_arrays(pa.array(vectors[s:e].ravel(), pa.float32()), d)
        pq.write_table(pa.table(cols), folder / f"part-{i:03d}.parquet", row_group_size=row_group)
    return folder


def test_a_scan_counts_digests_and_drops_empty_texts_like_a_corpus(tmp_path):
    texts = [f"text number {i % 40}" for i in range(300)]
    texts[7], texts[100] = "   ", ""  # dropped (their rows) with a warning
    folder = _write(tmp_path / "c", texts, extra={"topic": [f"t{i % 3}" for i in range(300)]})
    shards = ParquetShards.open(folder)
    scan = shards.scan()
    kept = [t for t in texts if t.strip()]
    assert is_shard_folder(folder) and not is_shard_folder(folder / "part-000.parquet")
    assert scan.n == 298 and scan.digest == text_digest(kept)  # keyed as the same texts in a list
    assert scan.repeats == 298 - len(set(kept)) and scan.dims is None
    assert any("dropped 2 row(s) with empty text" in w for w in scan.warnings)
    batches = list(shards.batches())
    assert len(batches) > 3  # read a row group at a time, never the whole corpus
    assert [t for b in batches for t in b.texts] == kept
    topics = pd.concat([b.meta for b in batches], ignore_index=True)["topic"].tolist()
    assert topics == [f"t{i % 3}" for i in range(300) if texts[i].strip()]


def test_the_shards_vectors_come_with_their_rows(tmp_path):
    texts, _, vectors = synthetic_vectors(200, 8, seed=1)
    texts[5] = ""
    shards = ParquetShards.open(_write(tmp_path / "c", texts, vectors), vector_column="embedding")
    got = np.concatenate([b.vectors for b in shards.batches(vectors=True)])
    np.testing.assert_array_equal(got, np.delete(vectors, 5, axis=0))
    assert shards.scan().dims == 8


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: d.mkdir(), "no .parquet files"),
        (lambda d: (d.mkdir(), (d / "a.parquet").write_bytes(b"not parquet at all")), "not a readable Parquet file"),
        (
            lambda d: (
                d.mkdir(),
                pq.write_table(pa.table({"text": ["a b c"]}), d / "a.parquet"),
                pq.write_table(pa.table({"text": ["a b c"], "other": [1]}), d / "b.parquet"),
            ),
            "b.parquet: its columns differ",
        ),
        (lambda d: (d.mkdir(), pq.write_table(pa.table({"n": [1, 2]}), d / "a.parquet")), "no text column"),
    ],
)
def test_bad_shards_get_one_line_naming_the_file(tmp_path, make, message):
    make(tmp_path / "c")
    with pytest.raises(InputError, match=message) as err:
        ParquetShards.open(tmp_path / "c").scan()
    assert "\n" not in str(err.value)


def test_a_vector_that_is_not_finite_is_named_by_its_row(tmp_path):
    texts, _, vectors = synthetic_vectors(60, 4, seed=2)
    vectors[33, 1] = np.nan
    shards = ParquetShards.open(_write(tmp_path / "c", texts, vectors, files=2), vector_column="embedding")
    with pytest.raises(InputError, match=r"part-001.parquet:embedding: row 3 \(counting from 0\) holds NaN"):
        shards.scan()


def test_an_atlas_from_shards_is_the_atlas_of_the_same_texts_in_memory(tmp_path):
    """Texts, metadata and vectors from three shard files against the same rows as lists: every file of the two
    folders but the manifest (the vectors are keyed by the files, not the array) has the same bytes."""
    texts, topics, vectors = synthetic_vectors(900, 16, seed=4)
    folder = _write(tmp_path / "c", texts, vectors, {"topic": topics}, row_group=128)
    config = AtlasConfig(layout="pca", calibrate="none")
    shards = ParquetShards.open(folder, vector_column="embedding")
    build_atlas(None, shards, tmp_path / "a", config=config)
    build_atlas(None, texts, tmp_path / "b", config=config, meta=pd.DataFrame({"topic": topics}), vectors=vectors)
    a, b = load_atlas(tmp_path / "a"), load_atlas(tmp_path / "b")
    pd.testing.assert_frame_equal(a.points, b.points)
    np.testing.assert_array_equal(a.vectors(), b.vectors())
    ledger = {p: json.loads((tmp_path / p / "ledger.json").read_text())["stages"] for p in "ab"}
    outputs = {p: {f: d for s in ledger[p].values() for f, (_, d) in s["outputs"].items()} for p in "ab"}
    assert outputs["a"] == outputs["b"]
    assert json.loads((tmp_path / "a" / "manifest.json").read_text())["texts"] == text_digest(texts)


def test_texts_from_shards_are_embedded_as_the_same_texts_in_memory(tmp_path, encoder):
    """No vector column: the texts are embedded from points.parquet a row group at a time (``ParquetColumn``)."""
    from isoscope.atlas.synthetic import synthetic_corpus

    texts, _ = synthetic_corpus(150, seed=8)
    config = AtlasConfig(layout="pca", calibrate="none", embed_chunk=64)
    build_atlas(encoder, ParquetShards.open(_write(tmp_path / "c", texts)), tmp_path / "a", config=config)
    build_atlas(encoder, texts, tmp_path / "b", config=config)
    np.testing.assert_array_equal(load_atlas(tmp_path / "a").vectors(), load_atlas(tmp_path / "b").vectors())


def test_the_command_builds_an_atlas_from_a_folder_of_shards(tmp_path, capsys):
    from isoscope.cli import main

    texts, topics, vectors = synthetic_vectors(400, 8, seed=5)
    texts[0] = ""
    folder = _write(tmp_path / "c", texts, vectors, {"topic": topics})
    argv = ["atlas", "--vectors", str(folder), "--out", str(tmp_path / "a"), "--layout", "pca", "--calibrate", "none"]
    assert main([*argv, "--json", "--quiet"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["n"] == 399 and any("dropped 1 row(s)" in w for w in result["warnings"])
    atlas = load_atlas(tmp_path / "a")
    assert atlas.points["topic"].tolist() == topics[1:]
    assert main(["atlas", "--vectors", str(folder), "--input", "x.txt", "--out", str(tmp_path / "b")]) == 2
    assert "drop --input" in capsys.readouterr().err


def test_distinct_values_are_counted_bucket_by_bucket_on_disk():
    """``DistinctCount``: the scan's repeated texts without a hash per row in memory; every bucket (the top 8 bits)
    counted on its own gives the distinct values of all batches, repeats across batches and buckets' edges too."""
    from isoscope.data.sharded import DistinctCount

    rng = np.random.default_rng(0)
    values = rng.integers(0, 2**64 - 1, size=5_000, dtype=np.uint64, endpoint=True)
    edges = np.array([0, 2**64 - 1, 2**56 - 1, 2**56, 0], np.uint64)  # the first and last buckets' ends
    values = np.concatenate([values, values[:1_200], edges])
    rng.shuffle(values)
    counter = DistinctCount()
    for batch in np.array_split(values, 7):
        counter.add(batch)
    assert counter.count() == len(np.unique(values)) == 5_004
    assert DistinctCount().count() == 0
