"""isoscope.atlas.pipeline and ``python -m isoscope atlas`` end to end on a tiny random BERT (seconds, no real model)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from isoscope.atlas.pipeline import STAGES, AtlasConfig, build_atlas, is_complete, load_atlas, planned_stages
from isoscope.atlas.synthetic import synthetic_corpus
from isoscope.encode.embed import EmbedConfig, encode
from isoscope.encode.precision import FP32_ENGINE_TOLERANCE
from isoscope.errors import InputError
from isoscope.neighbours.overlap import jaccard_tables
from tests.tiny_models import tiny_bert


@pytest.fixture(scope="module")
def tiny():
    return tiny_bert(0)


def corpus(n: int = 240) -> tuple[list[str], pd.DataFrame]:
    texts, topics = synthetic_corpus(n, seed=5)
    return texts, pd.DataFrame({"topic": topics, "score": np.arange(n) % 7})


def test_build_writes_every_stage_and_a_rerun_reuses_them(tiny, tmp_path):
    texts, meta = corpus()
    seen: list[str] = []
    run = build_atlas(
        tiny,
        texts,
        tmp_path / "a",
        config=AtlasConfig(layout="pca"),
        meta=meta,
        progress=lambda s, d, t: seen.append(s),
    )
    assert run.computed == list(STAGES) and not run.skipped
    assert set(seen) >= set(STAGES) and is_complete(tmp_path / "a")
    assert run.engine == "ONNX Runtime fp32"  # the fastest engine within the fp32 tolerance, named
    again = build_atlas(tiny, texts, tmp_path / "a", config=AtlasConfig(layout="pca"), meta=meta)
    assert again.computed == [] and again.skipped == list(STAGES) and again.engine == ""  # nothing embedded
    atlas = load_atlas(tmp_path / "a")
    n = len(texts)
    config = AtlasConfig()
    torch_fp32 = encode(tiny, texts, config.pooling, config=EmbedConfig(config.batch_size, config.max_length))  # (n, d)
    rel = np.linalg.norm(atlas.vectors("raw") - torch_fp32, axis=1) / np.linalg.norm(torch_fp32, axis=1)
    assert rel.max() <= FP32_ENGINE_TOLERANCE
    assert atlas.points["text"].tolist() == texts and atlas.points["topic"].tolist() == meta["topic"].tolist()
    assert set(atlas.spaces) == {"raw", "cal"}
    raw = atlas.vectors("raw")
    np.testing.assert_allclose(atlas.norm, np.linalg.norm(raw, axis=1), rtol=1e-6)
    assert atlas.length.tolist() == [len(t) for t in texts]
    assert atlas.overlap.shape == (n,) and 0 <= atlas.overlap.min() and atlas.overlap.max() <= 1
    # the one overlap@k of Isoscope: the Jaccard of each text's 15 graph neighbours, the text itself left out
    raw_ids, cal_ids = atlas.spaces["raw"].knn_ids[:, 1:], atlas.spaces["cal"].knn_ids[:, 1:]
    np.testing.assert_array_equal(atlas.overlap, jaccard_tables(raw_ids, cal_ids)[1].astype(np.float32))
    for space in atlas.spaces.values():
        assert space.xy.shape == (n, 2) and np.isfinite(space.xy).all()
        assert space.knn_ids.shape == (n, 16) and np.array_equal(space.knn_ids[:, 0], np.arange(n))
        x0, y0, x1, y1 = space.bounds
        assert (space.xy >= [x0, y0]).all() and (space.xy <= [x1, y1]).all()
        sizes = [c["size"] for c in space.clusters]
        assert sizes == sorted(sizes, reverse=True) and sum(sizes) == int((space.cluster >= 0).sum())


def test_calibrated_space_is_the_calibrator_applied_to_every_row(tiny, tmp_path):
    from isoscope.calibrate import load_calibrator

    texts, meta = corpus(200)
    build_atlas(tiny, texts, tmp_path / "a", config=AtlasConfig(layout="pca", fit_rows=120), meta=meta)
    atlas = load_atlas(tmp_path / "a")
    calibrator = load_calibrator(tmp_path / "a" / "cal" / "calibrator")
    want = calibrator.transform(np.asarray(atlas.vectors("raw")))
    np.testing.assert_allclose(atlas.vectors("cal"), want, rtol=1e-5, atol=1e-5)  # same float32 ops, chunked


def test_an_interrupted_build_resumes_from_the_missing_stage(tiny, tmp_path):
    texts, meta = corpus(200)
    out = tmp_path / "a"
    build_atlas(tiny, texts, out, config=AtlasConfig(layout="pca"), meta=meta)
    before = np.load(out / "cal" / "xy.npy")
    (out / "cal" / "xy.npy").unlink()
    (out / "overlap.npy").unlink()
    run = build_atlas(tiny, texts, out, config=AtlasConfig(layout="pca"), meta=meta)
    assert run.computed == ["cal_layout", "extras"]
    np.testing.assert_array_equal(np.load(out / "cal" / "xy.npy"), before)


def test_a_folder_of_other_texts_or_settings_is_refused(tiny, tmp_path):
    texts, meta = corpus(100)
    build_atlas(tiny, texts, tmp_path / "a", config=AtlasConfig(layout="pca", calibrate="none"), meta=meta)
    with pytest.raises(InputError, match="other texts, model or settings"):
        build_atlas(
            tiny, texts[:-1], tmp_path / "a", config=AtlasConfig(layout="pca", calibrate="none"), meta=meta.iloc[:-1]
        )
    with pytest.raises(InputError, match="other texts, model or settings"):
        build_atlas(tiny, texts, tmp_path / "a", config=AtlasConfig(layout="pca", calibrate="sn"), meta=meta)
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "notes.txt").write_text("mine")
    with pytest.raises(InputError, match="not empty"):
        build_atlas(tiny, texts, tmp_path / "b", config=AtlasConfig(layout="pca"), meta=meta)
    assert (tmp_path / "b" / "notes.txt").read_text() == "mine"


def test_raw_only_atlas_has_full_overlap_and_one_space(tiny, tmp_path):
    texts, meta = corpus(100)
    build_atlas(tiny, texts, tmp_path / "a", config=AtlasConfig(layout="umap", calibrate="none"), meta=meta)
    atlas = load_atlas(tmp_path / "a")
    assert set(atlas.spaces) == {"raw"} and np.all(atlas.overlap == 1)


def test_duplicates_are_kept_with_a_warning_and_bad_input_is_refused(tiny, tmp_path):
    texts = ["same text here"] * 3 + [f"other sentence {i}" for i in range(20)] + ["other sentence 4"]
    seen: list[tuple[int, int]] = []
    progress = lambda stage, done, total: seen.append((done, total)) if stage == "embed" else None  # noqa: E731
    run = build_atlas(
        tiny, texts, tmp_path / "a", config=AtlasConfig(layout="pca", calibrate="none"), progress=progress
    )
    assert run.n == 24 and any("repeat" in w for w in run.warnings)
    assert (21, 21) in seen and all(total in (1, 21) for _, total in seen)  # each distinct text embedded once
    vectors = load_atlas(tmp_path / "a").vectors("raw")
    assert vectors.shape[0] == 24 and not (tmp_path / "a" / "vectors.distinct.npy").exists()
    config = AtlasConfig()
    alone = encode(
        tiny, texts, config.pooling, config=EmbedConfig(config.batch_size, config.max_length)
    )  # (24, d), torch
    rel = np.linalg.norm(vectors - alone, axis=1) / np.linalg.norm(alone, axis=1)
    assert rel.max() <= FP32_ENGINE_TOLERANCE  # every row its own text's vector, repeats included
    assert np.array_equal(vectors[0], vectors[2]) and np.array_equal(vectors[7], vectors[23])
    with pytest.raises(InputError, match="at least 4 texts"):
        build_atlas(tiny, ["a", "b"], tmp_path / "c")
    with pytest.raises(InputError, match="empty"):
        build_atlas(tiny, ["a", " ", "b", "c", "d"], tmp_path / "d")
    with pytest.raises(InputError, match="unknown layout"):
        build_atlas(tiny, texts, tmp_path / "e", config=AtlasConfig(layout="tsne"))


def test_cli_builds_resumes_and_explains_bad_input(tiny, tmp_path, monkeypatch, capsys):
    import isoscope.commands.atlas as cmd
    from isoscope.cli import main

    monkeypatch.setattr(cmd, "encoder_for", lambda args, space: tiny)
    texts, meta = corpus(150)
    src = tmp_path / "corpus.csv"
    pd.DataFrame({"sentence": texts, "topic": meta["topic"]}).to_csv(src, index=False)
    out = tmp_path / "atlas"
    args = ["atlas", "--input", str(src), "--text-column", "sentence", "--out", str(out), "--layout", "pca"]
    assert main([*args, "--quiet", "--json"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["n"] == 150 and result["computed"] == list(STAGES) and result["engine"] == "ONNX Runtime fp32"
    assert main([*args, "--quiet", "--json"]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["computed"] == []
    assert main([*args[:-2], "--text-column", "nope", "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "no column 'nope'" in err
    assert main([*args, "--calibrate", "bogus", "--quiet"]) == 2
    assert "bogus" in capsys.readouterr().err


def test_raw_only_pca_map_skips_the_graph(tiny, tmp_path):
    texts, meta = corpus(80)
    run = build_atlas(tiny, texts, tmp_path / "a", config=AtlasConfig(layout="pca", calibrate="none"), meta=meta)
    assert "raw_knn" not in run.computed and not (tmp_path / "a" / "raw" / "knn_ids.npy").exists()
    atlas = load_atlas(tmp_path / "a")
    assert atlas.spaces["raw"].knn_ids is None and atlas.texts.tolist() == texts


def test_cli_progress_bars_count_the_work_of_each_stage(tiny, tmp_path, monkeypatch, capsys):
    """The bars of ``isoscope atlas`` show honest totals: the embedding counts texts out of the corpus (not an
    open-ended count of steps); one bar counts the stages done out of those the build runs (issue 41: no
    "texts: 0/1" bar for a stage that counts nothing). On a terminal; in a log they are lines (tests/core/commands/
    test_logs.py)."""
    import sys

    import isoscope.commands.atlas as cmd
    from isoscope.cli import main

    monkeypatch.setattr(cmd, "encoder_for", lambda args, space: tiny)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    texts, _ = corpus(120)
    src = tmp_path / "corpus.txt"
    src.write_text("\n".join(texts) + "\n")
    assert main(["atlas", "--input", str(src), "--out", str(tmp_path / "a"), "--layout", "pca"]) == 0
    err = capsys.readouterr().err
    embed = err.split("embed:", 1)[1].split("raw_knn:")[0]  # every frame of the embedding's bar
    assert "/120 [" in embed and "text/s" in embed and "step" not in embed  # out of the corpus, in texts
    assert "texts:" not in err and "0/1 [" not in err  # a stage that counts nothing draws no bar of its own
    planned = len(planned_stages(AtlasConfig(layout="pca")))  # texts, embed, graphs, calibration, layouts, ...
    frames = [line for line in err.replace("\r", "\n").splitlines() if line.startswith("atlas:")]
    assert planned == 12 and frames[0].startswith(f"atlas:   0%|          | 0/{planned} [") and "stage" in frames[0]
    counts = [int(f.split("/")[0].split("|")[-1]) for f in frames]  # stages done in each frame drawn
    assert counts == sorted(counts) and all(f"/{planned} [" in f for f in frames)
    assert "text/s" in err.split("raw_knn:")[1].split("\r")[0]  # the graph counts texts too


def test_planned_stages_are_the_stages_a_build_runs(tiny, tmp_path):
    """The CLI's stage bar counts out of ``planned_stages``: exactly what a build computes, then finds done."""
    texts, meta = corpus(80)
    for config in (AtlasConfig(layout="pca", calibrate="none"), AtlasConfig(layout="pca")):
        out = tmp_path / config.calibrate
        first = build_atlas(tiny, texts, out, config=config, meta=meta)
        assert first.computed == planned_stages(config)
        again: list[tuple[str, int, int]] = []
        second = build_atlas(tiny, texts, out, config=config, meta=meta, progress=lambda *a, log=again: log.append(a))
        assert second.skipped == planned_stages(config)
        assert [a[0] for a in again] == planned_stages(config) and all(a[1:] == (1, 1) for a in again)
    assert planned_stages(AtlasConfig(layout="pca", calibrate="none")) == [
        "texts",
        "embed",
        "raw_layout",
        "raw_clusters",
        "extras",
        "index",
        "tiles",
    ]
