"""Cluster labels that read like topics: class-based TF-IDF (c-TF-IDF, as BERTopic) of each cluster's texts
against the whole corpus.

terms = TermCounts.build(texts)          # which words each text holds: (n, v) sparse 0/1
words = terms.top_words(labels, top=3)   # {cluster: ["garlic", "oven", "soup"]}, labels (n,) int, -1 = none

Words are runs of at least 3 letters, lower-cased (``'s`` dropped, other apostrophes kept, so "don't" is
one word, and a stop word); a run touching a digit, ``#`` or ``@`` is left out, which drops sub-word pieces
such as WordPiece's ``##ing``, hashtags and handles; English stop words (scikit-learn's list and ours) are
left out. Each text counts a word once. A word's weight in cluster c is ``tf(w, c) * log(1 + A / f(w))``:
``tf`` the share of the cluster's word occurrences that are w, ``f(w)`` the texts of the whole corpus (every
text, clustered or not) holding w, ``A`` the mean number of word occurrences per cluster. A label word must
occur in at least ``min(MIN_TEXTS, size)`` texts of its cluster. Deterministic: ties go to the word first
in alphabetical order.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

LABEL_WORDS = 3
MIN_TEXTS = 3
_OURS = """also among another around became become could else etc even ever every get gets got however
    just like made make many may might much must near need never one really said say says seem seemed since
    still such take than thing things though thus today told too two upon use used uses using via want way
    well went within without would yet yes""".split()
_CONTRACTIONS = """aren't can't couldn't didn't doesn't don't hadn't hasn't haven't he'd he'll he's i'd i'll i'm
    i've isn't it'd it'll it's let's she'd she'll she's shouldn't that's there's they'd they'll they're
    they've wasn't we'd we'll we're we've weren't what's where's who's won't wouldn't you'd you'll you're
    you've""".split()
_WORD = re.compile(r"(?<![\w#@'’])[^\W\d_]{3,}(?:['’][^\W\d_]+)?(?![\w#@])")


def stop_words() -> frozenset[str]:
    """English stop words: scikit-learn's list, contractions and a few of ours."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS) | frozenset(_OURS) | frozenset(_CONTRACTIONS)


def words(text: str, stop: frozenset[str]) -> set[str]:
    """The distinct label words of one text (see the module doc)."""
    out = set()
    for w in _WORD.findall(text.lower()):
        w = w.replace("’", "'")
        if w.endswith("'s"):
            w = w[:-2]
        if len(w) >= 3 and w not in stop:
            out.add(w)
    return out


@dataclass
class TermCounts:
    """Which words each text holds: ``matrix`` (n, v) scipy CSR of 0/1, ``vocab`` (v,) the words."""

    matrix: object
    vocab: np.ndarray

    @classmethod
    def build(cls, texts: Sequence[str]) -> TermCounts:
        from scipy.sparse import csr_matrix

        stop = stop_words()
        index: dict[str, int] = {}
        cols: list[int] = []
        indptr = [0]
        for text in texts:
            cols.extend(index.setdefault(w, len(index)) for w in sorted(words(text, stop)))
            indptr.append(len(cols))
        vocab = np.empty(len(index), dtype=object)
        for w, j in index.items():
            vocab[j] = w
        data = np.ones(len(cols), np.float64)
        matrix = csr_matrix((data, np.asarray(cols, np.int64), np.asarray(indptr, np.int64)), (len(texts), len(index)))
        return cls(matrix, vocab.astype(str) if len(vocab) else np.zeros(0, str))

    def top_words(self, labels: np.ndarray, top: int = LABEL_WORDS) -> dict[int, list[str]]:
        """The ``top`` words of each cluster (labels >= 0) by c-TF-IDF against the whole corpus, best first."""
        from scipy.sparse import csr_matrix

        labels = np.asarray(labels)
        clusters = np.unique(labels[labels >= 0])
        if len(clusters) == 0:
            return {}
        n_clusters = int(clusters.max()) + 1
        rows = np.flatnonzero(labels >= 0)
        onehot = csr_matrix((np.ones(len(rows)), (labels[rows], rows)), shape=(n_clusters, len(labels)))
        counts = (onehot @ self.matrix).tocsr()  # (C, v) sparse: texts of each cluster holding each word
        corpus = np.asarray(self.matrix.sum(axis=0)).ravel()  # (v,) texts of the corpus holding each word
        sizes = np.bincount(labels[rows], minlength=n_clusters)  # (C,)
        per_cluster = np.asarray(counts.sum(axis=1)).ravel()  # (C,) word occurrences
        mean = per_cluster[sizes > 0].mean()
        out: dict[int, list[str]] = {}
        for c in clusters.tolist():
            lo, hi = counts.indptr[c], counts.indptr[c + 1]
            cols, held = counts.indices[lo:hi], counts.data[lo:hi]  # (m,) the cluster's words
            ok = held >= min(MIN_TEXTS, sizes[c])
            cols, held = cols[ok], held[ok]
            score = held / max(per_cluster[c], 1) * np.log1p(mean / corpus[cols])  # tf x idf against the corpus
            best = np.lexsort((self.vocab[cols], -score))[:top]
            out[c] = [str(self.vocab[cols[j]]) for j in best]
        return out
