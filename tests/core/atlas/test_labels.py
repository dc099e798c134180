"""isoscope.atlas.labels: c-TF-IDF cluster labels against the whole corpus, on known answers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from isoscope.atlas.labels import TermTally, stop_words, top_words, words
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
    top = top_words(texts, labels)
    for c, name in enumerate(names):
        own = set(TOPICS[name]["nouns"] + TOPICS[name]["verbs"] + TOPICS[name]["adjs"])
        assert len(top[c]) == 3 and set(top[c]) <= own, (name, top[c])


def test_weights_are_class_tf_idf_against_the_whole_corpus():
    # cluster 0: "apple" in 3 of 3 texts, "pear" in 3; "pear" is also in 6 unclustered texts, so apple wins
    texts = ["apple pear"] * 3 + ["plum fig"] * 3 + ["pear kiwi"] * 6
    labels = np.array([0, 0, 0, 1, 1, 1] + [-1] * 6)
    assert top_words(texts, labels, top=2) == {0: ["apple", "pear"], 1: ["fig", "plum"]}  # ties: alphabetical
    tally = TermTally([labels])
    tally.add(texts)
    assert len(tally.index) == 5 and tally.corpus[tally.index["pear"]] == 9  # texts of the corpus holding "pear"
    mean = 6.0  # word occurrences per cluster: 3 texts x 2 words each
    apple = 3 / 6 * math.log1p(mean / 3)
    pear = 3 / 6 * math.log1p(mean / 9)
    assert apple > pear  # what the order above relies on


def test_a_word_needs_three_texts_of_its_cluster_and_an_empty_cluster_has_no_words():
    texts = ["rare alpha", "alpha beta", "alpha beta", "beta gamma", "the and of", "the and of"]
    labels = np.array([0, 0, 0, 0, 1, 1])
    top = top_words(texts, labels)
    assert top[0] == ["alpha", "beta"] and top[1] == []  # "rare", "gamma": one text each; cluster 1: stop words
    assert top_words(texts, np.full(6, -1)) == {}


def test_a_tally_in_batches_labels_several_labelings_as_each_alone():
    """The texts added in uneven batches, two labelings at once: the words of each as when counted whole."""
    rng = np.random.default_rng(0)
    pool = ["apple pear fig", "plum fig kiwi", "garlic soup oven", "oven bread soup", "goal match striker"]
    texts = [pool[i] + f" word{i}x" for i in rng.integers(0, len(pool), 300)]
    a = rng.integers(-1, 4, 300)
    b = np.asarray([hash(t) % 3 for t in texts])
    tally = TermTally([a, b])
    for s, e in [(0, 7), (7, 150), (150, 151), (151, 300)]:
        tally.add(texts[s:e])
    assert tally.top_words(0) == top_words(texts, a) and tally.top_words(1) == top_words(texts, b)
    assert top_words(texts, a)  # not empty


def test_tallies_of_parts_merged_in_order_are_the_tally_of_the_whole():
    """What the ray engine's label tasks do: each part of the corpus counted apart (sent back pickled, without the
    labelings), merged in row order."""
    import pickle

    rng = np.random.default_rng(3)
    pool = ["apple pear fig", "plum fig kiwi", "garlic soup oven", "oven bread soup", "goal match striker"]
    texts = [pool[i] + f" extra{i % 7}word" for i in rng.integers(0, len(pool), 400)]
    labels = [rng.integers(-1, 5, 400), rng.integers(0, 2, 400)]
    total = TermTally(labels)
    for s, e in [(0, 120), (120, 121), (121, 400)]:
        part = TermTally(labels, start=s)
        part.add(texts[s:e])
        total.merge(pickle.loads(pickle.dumps(part)))
    for i in range(2):
        assert total.top_words(i) == top_words(texts, labels[i])
    late = TermTally(labels, start=300)
    with pytest.raises(ValueError, match="cannot follow"):
        TermTally(labels).merge(late)
