"""Cluster labels that read like topics: class-based TF-IDF (c-TF-IDF, as BERTopic) of each cluster's texts
against the whole corpus.

words = top_words(texts, labels, top=3)  # {cluster: ["garlic", "oven", "soup"]}, labels (n,) int, -1 = none
tally = TermTally([labels_a, labels_b]); tally.add(batch) ...; tally.top_words(1)   # texts streamed in batches

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

import numpy as np

LABEL_WORDS = 3
MIN_TEXTS = 3
COMPACT_PARTS = 16  # batches of (cluster, word, texts) triples a tally keeps before summing them into one
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


class TermTally:
    """Word counts per cluster for several labelings of one corpus at once, from its texts in batches, so the
    texts are never all held: per labeling, the texts of each cluster holding each word; for the corpus, the texts
    holding each word. Memory: clusters x vocabulary per labeling, whatever the corpus's size.

    tally = TermTally([labels_a, labels_b])   # each (n,) int, -1 = no cluster
    tally.add(texts_batch)                    # in row order, any batch sizes
    tally.top_words(0)                        # {cluster: words} of labels_a
    """

    def __init__(self, labelings: Sequence[np.ndarray], *, start: int = 0) -> None:
        self.labelings = [np.asarray(lab) for lab in labelings]
        self.stop = stop_words()
        self.index: dict[str, int] = {}
        self.corpus = np.zeros(0, np.int64)  # (v,) texts holding each word
        self.parts: list[list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = [[] for _ in self.labelings]
        self.start = start  # the first row this tally counts (a part of the corpus: see ``merge``)
        self.row = start

    def merge(self, other: TermTally) -> TermTally:
        """Add the counts of ``other``, a tally of the rows that follow this one's (its ``start`` is this one's
        next row): how tallies of parts of the corpus, counted apart (in Ray tasks), become the corpus's."""
        if other.start != self.row:
            raise ValueError(f"a tally from row {other.start} cannot follow one that ends at row {self.row}")
        remap = np.fromiter((self.index.setdefault(w, len(self.index)) for w in other.index), np.int64)  # (v_o,)
        grown = np.zeros(len(self.index), np.int64)
        grown[: len(self.corpus)] = self.corpus
        np.add.at(grown, remap, other.corpus)
        self.corpus = grown
        for mine, theirs in zip(self.parts, other.parts, strict=True):
            mine.extend((r, remap[c], d) for r, c, d in theirs)
            _compact(mine)
        self.row = other.row
        return self

    def __getstate__(self) -> dict:  # what a Ray task sends back: the counts, not the labelings or the stop words
        return {**self.__dict__, "labelings": [np.zeros(0, np.int64)] * len(self.labelings), "stop": None}

    def add(self, texts: Sequence[str]) -> None:
        from scipy.sparse import coo_matrix, csr_matrix

        cols: list[int] = []
        indptr = [0]
        for text in texts:
            cols.extend(self.index.setdefault(w, len(self.index)) for w in sorted(words(text, self.stop)))
            indptr.append(len(cols))
        b, v = len(texts), len(self.index)
        x = csr_matrix((np.ones(len(cols), np.int64), np.asarray(cols, np.int64), np.asarray(indptr)), (b, v))  # (b, v)
        self.corpus = np.concatenate([self.corpus, np.zeros(v - len(self.corpus), np.int64)])
        self.corpus += np.asarray(x.sum(axis=0)).ravel()
        for labels, parts in zip(self.labelings, self.parts, strict=True):
            lab = labels[self.row : self.row + b]  # (b,)
            rows = np.flatnonzero(lab >= 0)
            if len(rows) == 0:
                continue
            onehot = csr_matrix((np.ones(len(rows), np.int64), (lab[rows], rows)), shape=(int(lab.max()) + 1, b))
            held = coo_matrix(onehot @ x)  # (C_batch, v): texts of each cluster holding each word
            parts.append((held.row, held.col, held.data))
            _compact(parts)
        self.row += b

    def top_words(self, which: int, top: int = LABEL_WORDS) -> dict[int, list[str]]:
        """The ``top`` words of each cluster of labeling ``which`` by c-TF-IDF against the whole corpus, best
        first (the module doc); every text must have been added."""
        from scipy.sparse import csr_matrix

        labels = self.labelings[which]
        if self.start != 0 or self.row != len(labels):
            raise ValueError(f"rows {self.start}-{self.row} counted for {len(labels)} labels")
        sizes = _sizes(labels)  # (C,) texts per cluster
        clusters = np.flatnonzero(sizes)
        if len(clusters) == 0:
            return {}
        n_clusters = len(sizes)
        parts = self.parts[which]
        r, c, d = (np.concatenate([p[i] for p in parts]) for i in range(3))
        counts = csr_matrix((d, (r, c)), shape=(n_clusters, len(self.index)))  # (C, v), duplicates summed
        counts.sum_duplicates()
        vocab = np.empty(len(self.index), dtype=object)
        for w, j in self.index.items():
            vocab[j] = w
        vocab = vocab.astype(str)
        per_cluster = np.asarray(counts.sum(axis=1)).ravel()  # (C,) word occurrences
        mean = per_cluster[sizes > 0].mean()
        out: dict[int, list[str]] = {}
        for k in clusters.tolist():
            lo, hi = counts.indptr[k], counts.indptr[k + 1]
            cols, held = counts.indices[lo:hi], counts.data[lo:hi]  # (m,) the cluster's words
            ok = held >= min(MIN_TEXTS, sizes[k])
            cols, held = cols[ok], held[ok]
            score = held / max(per_cluster[k], 1) * np.log1p(mean / self.corpus[cols])  # tf x idf against the corpus
            best = np.lexsort((vocab[cols], -score))[:top]
            out[k] = [str(vocab[cols[j]]) for j in best]
        return out


def _compact(parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> None:
    """Past ``COMPACT_PARTS`` batches of (cluster, word, texts) triples, their sum as one (the same counts), so a
    tally holds clusters x vocabulary numbers however many batches or parts were added."""
    from scipy.sparse import coo_matrix

    if len(parts) <= COMPACT_PARTS:
        return
    r, c, d = (np.concatenate([p[i] for p in parts]) for i in range(3))
    held = coo_matrix((d, (r, c)), shape=(int(r.max()) + 1, int(c.max()) + 1))
    held.sum_duplicates()
    parts[:] = [(held.row, held.col, held.data)]


def _sizes(labels: np.ndarray, chunk: int = 1 << 20) -> np.ndarray:
    """Rows per cluster (max + 1,) int64 of ``labels`` (n,) (-1 = none; a memory map is read ``chunk`` rows at a
    time, never copied whole)."""
    sizes = np.zeros(0, np.int64)
    for start in range(0, len(labels), chunk):
        c = np.asarray(labels[start : start + chunk])
        counts = np.bincount(c[c >= 0])
        if len(counts) > len(sizes):
            sizes = np.concatenate([sizes, np.zeros(len(counts) - len(sizes), np.int64)])
        sizes[: len(counts)] += counts
    return sizes


def top_words(texts: Sequence[str], labels: np.ndarray, top: int = LABEL_WORDS) -> dict[int, list[str]]:
    """``TermTally`` of one labeling of texts held in memory."""
    tally = TermTally([labels])
    tally.add(texts)
    return tally.top_words(0, top)
