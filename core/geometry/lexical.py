"""Lexical-overlap bias: does a similarity score follow meaning or just shared words?

For each sentence pair we compute a normalised edit distance (word-level Levenshtein by default, optionally
character-level) and report the Spearman correlation (x100, the STS convention) of each similarity with it:
the gold scores, the raw cosine and the calibrated cosine. Li et al. (2020, BERT-flow, Section 5) found that
raw BERT cosines track edit distance much more strongly than the human labels do, and that the flow weakens
that dependence. A similarity that is more negatively correlated with edit distance than the gold labels are
is rewarding lexical overlap rather than meaning.

summary, pairs = overlap_analysis(s1, s2, {"gold": gold, "raw": cos_raw, "calibrated": cos_cal})
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from isoscope.errors import InputError
from isoscope.geometry.options import EDIT_LEVELS, EditLevel
from isoscope.geometry.pairs import spearman_x100

if TYPE_CHECKING:  # pandas is imported where tables are built, so parsing options stays cheap
    import pandas as pd

log = logging.getLogger(__name__)

__all__ = [
    "EDIT_LEVELS",
    "SMALL_EDIT_MAX",
    "edit_distance",
    "edit_distances",
    "levenshtein",
    "overlap_analysis",
    "spearman_x100",
    "tokens_for_level",
    "word_tokens",
]

# Pairs whose raw (unnormalised) word edit distance is at most this form the "small edit" subset, where
# lexical overlap is high and only meaning can separate similar from dissimilar pairs.
SMALL_EDIT_MAX = 3

# A word: letters/digits/underscore, with an inner apostrophe kept ("woman's", "don't"). Punctuation is
# dropped so that "hair." and "hair" are the same word.
_WORD_RE = re.compile(r"\w+(?:['’]\w+)*")


def word_tokens(text: str) -> list[str]:
    """Lower-cased words of ``text`` (punctuation dropped, inner apostrophes kept)."""
    return _WORD_RE.findall(str(text).lower())


def tokens_for_level(text: str, level: EditLevel = "word") -> list[str]:
    """Units the edit distance counts: words (``word``) or characters of the lower-cased text (``char``)."""
    if level == "word":
        return word_tokens(text)
    if level == "char":
        return list(" ".join(str(text).lower().split()))  # whitespace runs collapsed to one space
    raise InputError(f"unknown edit-distance level '{level}'; choose one of {', '.join(EDIT_LEVELS)}")


def levenshtein(a: Sequence[object], b: Sequence[object]) -> int:
    """Levenshtein distance: fewest insertions, deletions and substitutions turning ``a`` into ``b``.

    Classic dynamic programme ``D[i][j] = min(D[i-1][j] + 1, D[i][j-1] + 1, D[i-1][j-1] + [a_i != b_j])``
    kept to two rows, ``O(len(a) len(b))`` time and ``O(min(len(a), len(b)))`` memory.
    """
    if len(a) < len(b):
        a, b = b, a
    if not b:
        return len(a)
    prev = list(range(len(b) + 1))  # D[i-1][*]
    for i, x in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, y in enumerate(b, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y))
        prev = cur
    return prev[-1]


def edit_distance(s1: str, s2: str, *, level: EditLevel = "word", normalize: bool = True) -> float:
    """Edit distance between two sentences, divided by the longer length when ``normalize``.

    Normalised values lie in ``[0, 1]``: 0 for identical word (or character) sequences, 1 when nothing can
    be kept (e.g. no word in common at any aligned position and equal lengths). Two empty sentences are at
    distance 0.
    """
    a, b = tokens_for_level(s1, level), tokens_for_level(s2, level)
    dist = levenshtein(a, b)
    if not normalize:
        return float(dist)
    longest = max(len(a), len(b))
    return dist / longest if longest else 0.0


def edit_distances(
    sentence1: Sequence[str], sentence2: Sequence[str], level: EditLevel = "word"
) -> tuple[np.ndarray, np.ndarray]:
    """Per pair: (normalised distance (n,), raw distance in units (n,))."""
    if len(sentence1) != len(sentence2):
        raise InputError(f"sentence1 has {len(sentence1)} rows but sentence2 has {len(sentence2)}; pair them up")
    if level not in EDIT_LEVELS:
        raise InputError(f"unknown edit-distance level '{level}'; choose one of {', '.join(EDIT_LEVELS)}")
    norm = np.empty(len(sentence1), np.float64)  # (n,)
    raw = np.empty(len(sentence1), np.float64)  # (n,)
    for i, (x, y) in enumerate(zip(sentence1, sentence2, strict=True)):
        a, b = tokens_for_level(x, level), tokens_for_level(y, level)
        raw[i] = levenshtein(a, b)
        longest = max(len(a), len(b))
        norm[i] = raw[i] / longest if longest else 0.0
    return norm, raw


def overlap_analysis(
    sentence1: Sequence[str],
    sentence2: Sequence[str],
    similarities: Mapping[str, np.ndarray | None],
    *,
    level: EditLevel = "word",
    small_edit_max: int = SMALL_EDIT_MAX,
) -> tuple[dict[str, object], pd.DataFrame]:
    """Correlate each similarity with the edit distance of the pairs.

    ``similarities`` maps a name (e.g. ``gold``, ``raw``, ``calibrated``) to one value per pair; ``None``
    entries are skipped. Returns ``(summary, pairs)``:

    - ``summary``: ``level``, ``n_pairs``, ``mean_edit_distance``, ``spearman`` (name -> Spearman x100 of
      the similarity with the normalised edit distance, over all pairs; negative = more edits, less
      similar) and ``small_edit`` (the same on the pairs with at most ``small_edit_max`` word edits,
      whatever ``level``, with its ``n_pairs``): among near-paraphrases in wording, only meaning should
      decide the similarity.
    - ``pairs``: one row per pair: ``sentence1``, ``sentence2``, ``edit_distance`` (normalised),
      ``edits`` (raw count) and one column per similarity.
    """
    import pandas as pd

    sims = {str(k): np.asarray(v, np.float64) for k, v in similarities.items() if v is not None}
    n = len(sentence1)
    for name, values in sims.items():
        if values.shape != (n,):
            raise InputError(f"similarity '{name}' has shape {values.shape}; need one value per pair ({n})")
        if not np.isfinite(values).all():
            raise InputError(f"similarity '{name}' contains NaN or inf; drop those pairs first")
    norm, raw = edit_distances(sentence1, sentence2, level)
    word_edits = raw if level == "word" else edit_distances(sentence1, sentence2, "word")[1]  # (n,)
    small = word_edits <= small_edit_max  # (n,)
    summary: dict[str, object] = {
        "level": level,
        "n_pairs": n,
        "mean_edit_distance": float(norm.mean()) if n else float("nan"),
        "spearman": {name: spearman_x100(values, norm) for name, values in sims.items()},
        "small_edit": {
            "max_edits": int(small_edit_max),
            "n_pairs": int(small.sum()),
            "spearman": {name: spearman_x100(values[small], norm[small]) for name, values in sims.items()},
        },
    }
    pairs = pd.DataFrame(
        {"sentence1": list(sentence1), "sentence2": list(sentence2), "edit_distance": norm, "edits": raw}
    )
    for name, values in sims.items():
        pairs[name] = values
    log.debug("overlap_analysis: %s", summary)
    return summary, pairs
