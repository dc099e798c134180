"""Hand cases for edit distance and constructed cases for the lexical-overlap correlations."""

from __future__ import annotations

import math

import numpy as np
import pytest

from isoscope.errors import InputError
from isoscope.geometry.lexical import edit_distance, edit_distances, levenshtein, overlap_analysis, word_tokens


def test_word_tokens_lowercase_no_punctuation_keeps_apostrophes() -> None:
    assert word_tokens("A boy is combing his hair.") == ["a", "boy", "is", "combing", "his", "hair"]
    assert word_tokens("One cat's tail, don't!") == ["one", "cat's", "tail", "don't"]


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("kitten", "sitting", 3),
        ("", "", 0),
        ("", "abc", 3),
        ("abc", "", 3),
        ("flaw", "lawn", 2),
        ("abc", "abc", 0),
    ],
)
def test_levenshtein_hand(a: str, b: str, expected: int) -> None:
    assert levenshtein(a, b) == expected
    assert levenshtein(b, a) == expected


def test_levenshtein_on_word_lists() -> None:
    assert levenshtein(["a", "b", "c"], ["a", "x", "c", "d"]) == 2  # one substitution, one insertion


def test_identical_sentences_distance_zero() -> None:
    assert edit_distance("A man plays the guitar.", "a man plays the guitar") == 0.0


def test_disjoint_sentences_distance_one() -> None:
    assert edit_distance("cats sleep all day", "dogs bark at night") == 1.0
    assert edit_distance("one two", "three four five") == 1.0  # 2 substitutions + 1 insertion over 3


def test_one_substitution_over_longer_length() -> None:
    d = edit_distance("A boy is combing his hair.", "A boy is brushing his hair.")
    assert d == pytest.approx(1 / 6)
    assert edit_distance("a b", "a b c") == pytest.approx(1 / 3)  # one insertion, longer has 3 words
    assert edit_distance("a boy is combing", "a boy is brushing", normalize=False) == 1.0


def test_char_level() -> None:
    assert edit_distance("abc", "abd", level="char") == pytest.approx(1 / 3)
    assert edit_distance("Ab  c", "ab c", level="char") == 0.0  # lower-cased, whitespace collapsed


def test_empty_pair_is_zero_and_bad_level_raises() -> None:
    assert edit_distance("...", "!!") == 0.0
    with pytest.raises(InputError, match="word, char"):
        edit_distance("a", "b", level="token")  # type: ignore[arg-type]


def test_edit_distances_vectorised_matches_single() -> None:
    s1 = ["a b c", "x y", "same words here"]
    s2 = ["a b d", "p q r", "same words here"]
    norm, raw = edit_distances(s1, s2)
    np.testing.assert_allclose(norm, [edit_distance(a, b) for a, b in zip(s1, s2, strict=True)])
    np.testing.assert_array_equal(raw, [1, 3, 0])


def _constructed_pairs(n: int = 40) -> tuple[list[str], list[str], np.ndarray]:
    """Pairs whose i-th pair has i of 40 words replaced: edit distance i / 40 exactly."""
    words = [f"w{j}" for j in range(n)]
    s1, s2 = [], []
    for i in range(n):
        s1.append(" ".join(words))
        s2.append(" ".join([f"z{j}" for j in range(i)] + words[i:]))
    return s1, s2, np.arange(n) / n


def test_overlap_correlations_constructed() -> None:
    s1, s2, dist = _constructed_pairs()
    rng = np.random.default_rng(0)
    lexical = 1.0 - dist  # follows the edit distance exactly: rho = -100
    shuffled = rng.permutation(lexical)  # unrelated to it
    summary, pairs = overlap_analysis(s1, s2, {"gold": shuffled, "raw": lexical, "calibrated": None})
    np.testing.assert_allclose(pairs["edit_distance"], dist)
    assert summary["spearman"]["raw"] == pytest.approx(-100.0)
    assert abs(summary["spearman"]["gold"]) < 40
    assert "calibrated" not in summary["spearman"]  # None entries are skipped
    assert summary["n_pairs"] == 40
    assert summary["mean_edit_distance"] == pytest.approx(dist.mean())
    small = summary["small_edit"]
    assert small["n_pairs"] == 4  # 0, 1, 2 and 3 word edits
    assert small["spearman"]["raw"] == pytest.approx(-100.0)
    assert list(pairs.columns) == ["sentence1", "sentence2", "edit_distance", "edits", "gold", "raw"]


def test_overlap_increasing_similarity_gives_positive_rho() -> None:
    s1, s2, dist = _constructed_pairs(10)
    summary, _ = overlap_analysis(s1, s2, {"odd": dist})
    assert summary["spearman"]["odd"] == pytest.approx(100.0)


def test_overlap_constant_similarity_is_nan() -> None:
    s1, s2, _ = _constructed_pairs(10)
    summary, _ = overlap_analysis(s1, s2, {"flat": np.ones(10)})
    assert math.isnan(summary["spearman"]["flat"])


def test_overlap_bad_inputs() -> None:
    with pytest.raises(InputError, match="one value per pair"):
        overlap_analysis(["a", "b"], ["a", "c"], {"raw": np.ones(3)})
    with pytest.raises(InputError, match="pair them up"):
        overlap_analysis(["a", "b"], ["a"], {})
    with pytest.raises(InputError, match="NaN"):
        overlap_analysis(["a", "b"], ["a", "c"], {"raw": np.array([1.0, np.nan])})
