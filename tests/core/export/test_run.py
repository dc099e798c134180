"""``Space.export``: the notebook's round trip (embed, calibrate, export) gives the space's calibrated vectors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import isoscope
from isoscope.data import load_corpus
from isoscope.errors import InputError
from isoscope.paths import DEMO_CORPUS
from tests.tiny_st_models import save_recipe


def test_space_export_round_trip(tmp_path):
    from sentence_transformers import SentenceTransformer

    folder = save_recipe("bge", tmp_path / "bge")
    texts = load_corpus(str(DEMO_CORPUS)).texts[:150]
    space = isoscope.embed(texts, model=str(folder), cache=False, progress=False)
    fixed = space.calibrate("sn+abtt:2", progress=False)
    report = fixed.export(tmp_path / "fixed")
    assert report.n_fit == 150 and report.method == "sn+abtt:2" and report.corpus_digest
    assert report.after["avg_cosine"] < report.before["avg_cosine"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = SentenceTransformer(str(tmp_path / "fixed"), device="cpu").encode(texts[:12])  # (12, 32)
    want = fixed.vectors[:12]
    cos = (got * want).sum(1) / (np.linalg.norm(got, axis=1) * np.linalg.norm(want, axis=1))
    assert cos.min() >= 1 - 1e-5
    with pytest.raises(InputError, match="calibrate the space first"):
        space.export(tmp_path / "raw")
    with pytest.raises(InputError, match="a space of vectors has no model"):
        isoscope.Space(space.vectors).calibrate("centre", progress=False).export(tmp_path / "v")
