"""Issue 37: a model runs as its authors run it. Tiny random models saved by sentence-transformers (the bge shape,
a prompted mean encoder, a Qwen2 decoder with last-token pooling and left padding, Sentence-T5's mean -> Dense ->
Normalize) are embedded by ``isoscope embed`` at its defaults and by ``SentenceTransformer(folder).encode``.

Tolerance: both sides compute the same float32 graph; they differ only in batching (padded lengths change the
order of float32 sums in attention and the matmuls). Each of those sums of at most a few hundred terms of unit
scale carries a relative error of a few float32 ulps (2**-23 ~ 1.2e-7), which a small network carries through
its layers to a few times 1e-7 on the unit output vectors: 1 - cosine stays below 1e-5 with a wide margin, and
the dimensions are equal exactly.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from isoscope.cli import main
from tests.tiny_st_models import reference_vectors, save_recipe

TEXTS = [
    "A man plays the guitar.",
    "Two dogs run through a field of yellow flowers in the summer sun.",
    "Hi",
    "The quick brown fox jumps over the lazy dog.",
    "A longer text that the tiny models truncate at their own max_seq_length of sixty four tokens " * 3,
    "Stocks fell sharply after the announcement.",
]
TOLERANCE = 1e-5  # 1 - cosine, argued in the module docstring


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("corpus") / "texts.txt"
    path.write_text("\n".join(t.strip() for t in TEXTS) + "\n", encoding="utf-8")
    return path


def _embed(folder: Path, corpus: Path, out: Path, *extra: str) -> np.ndarray:
    argv = ["embed", "--model", str(folder), "--input", str(corpus), "--out", str(out), "--quiet", "--no-cache"]
    assert main([*argv, *extra]) == 0
    return np.load(out)


def _one_minus_cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return 1 - (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


@pytest.mark.parametrize("kind", ["bge", "qwen", "t5"])
def test_isoscope_embeds_as_the_model_does(kind: str, corpus: Path, tmp_path: Path) -> None:
    folder = save_recipe(kind, tmp_path / kind)
    ours = _embed(folder, corpus, tmp_path / "v.npy")
    theirs = reference_vectors(folder, [t.strip() for t in TEXTS])
    assert ours.shape == theirs.shape  # the recipe's Dense sets the dimensions (bge 32, t5 16)
    assert _one_minus_cosine(ours, theirs).max() < TOLERANCE


@pytest.mark.parametrize("include_prompt", [True, False])
def test_a_prompt_by_name_equals_the_models_prompt(include_prompt: bool, corpus: Path, tmp_path: Path) -> None:
    folder = save_recipe("prompted", tmp_path / "prompted", include_prompt=include_prompt)
    texts = [t.strip() for t in TEXTS]
    ours = _embed(folder, corpus, tmp_path / "q.npy", "--prompt", "query")
    theirs = reference_vectors(folder, texts, prompt_name="query")
    assert _one_minus_cosine(ours, theirs).max() < TOLERANCE
    by_text = _embed(folder, corpus, tmp_path / "t.npy", "--prompt-text", "query: ")
    np.testing.assert_array_equal(by_text, ours)  # the same prompt by its text: the same run
    plain = _embed(folder, corpus, tmp_path / "p.npy")
    assert _one_minus_cosine(plain, theirs).max() > 1e-3  # the prompt changes the vectors


def test_an_unknown_prompt_is_one_line(corpus: Path, tmp_path: Path, capsys) -> None:
    folder = save_recipe("prompted", tmp_path / "prompted")
    argv = ["embed", "--model", str(folder), "--input", str(corpus), "--out", str(tmp_path / "x.npy"), "--quiet"]
    assert main([*argv, "--prompt", "passage"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "has prompts: document, query" in err
