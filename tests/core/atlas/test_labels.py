"""isoscope.atlas.labels: c-TF-IDF cluster labels against the whole corpus, on known answers."""

from __future__ import annotations

import math

import numpy as np

from isoscope.atlas.labels import TermCounts, stop_words, words
from isoscope.atlas.synthetic import TOPICS, synthetic_corpus


def test_words_drop_stop_words_sub_word_pieces_digits_and_possessives():
    stop = stop_words()
    text = "The striker's ##ing goals, @handle #tag in 2024 don't matter: x1y2 co-op state-of-the-art Émigrés"
    assert words(text, stop) == {"striker", "goals", "matter", "state", "art", "émigrés"}
    assert {"the", "and", "would", "don't", "it's"} <= stop


def test_labels_are_each_topics_own_words():
    texts, topics = synthetic_corpus(800, seed=3)
    names = sorted(set(topics))
    labels = np.array([names.index(t) for t in topics], np.int32)
    top = TermCounts.build(texts).top_words(labels)
    for c, name in enumerate(names):
        own = set(TOPICS[name]["nouns"] + TOPICS[name]["verbs"] + TOPICS[name]["adjs"])
        assert len(top[c]) == 3 and set(top[c]) <= own, (name, top[c])


def test_weights_are_class_tf_idf_against_the_whole_corpus():
    # cluster 0: "apple" in 3 of 3 texts, "pear" in 3; "pear" is also in 6 unclustered texts, so apple wins
    texts = ["apple pear"] * 3 + ["plum fig"] * 3 + ["pear kiwi"] * 6
    labels = np.array([0, 0, 0, 1, 1, 1] + [-1] * 6)
    terms = TermCounts.build(texts)
    assert terms.top_words(labels, top=2) == {0: ["apple", "pear"], 1: ["fig", "plum"]}  # ties: alphabetical
    m = terms.matrix.toarray()
    vocab = list(terms.vocab)
    assert m.shape == (12, 5) and m[:, vocab.index("pear")].sum() == 9
    mean = 6.0  # word occurrences per cluster: 3 texts x 2 words each
    apple = 3 / 6 * math.log1p(mean / 3)
    pear = 3 / 6 * math.log1p(mean / 9)
    assert apple > pear  # what the order above relies on


def test_a_word_needs_three_texts_of_its_cluster_and_an_empty_cluster_has_no_words():
    texts = ["rare alpha", "alpha beta", "alpha beta", "beta gamma", "the and of", "the and of"]
    labels = np.array([0, 0, 0, 0, 1, 1])
    top = TermCounts.build(texts).top_words(labels)
    assert top[0] == ["alpha", "beta"] and top[1] == []  # "rare", "gamma": one text each; cluster 1: stop words
    assert TermCounts.build(texts).top_words(np.full(6, -1)) == {}
