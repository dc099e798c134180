"""A small seeded generator of realistic English sentences on a few topics, for benchmarks and tests.

texts, topics = synthetic_corpus(1000, seed=0)   # 1000 sentences, their topic names
folder, run = synthetic_atlas(out, 20_000)       # an atlas of such sentences with made-up clustered vectors
space = TopicSpace.make(384, seed=0); x = space.draw(topic_codes, seed=(0, start))   # (m, 384) structured vectors

Each sentence is built from a topic's own nouns, verbs and adjectives plus shared function words, with a
few templates, so sentences of one topic share vocabulary (and land near each other in an embedding
space) while the corpus still has many distinct strings. Written for Isoscope; no outside data.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

TOPICS: dict[str, dict[str, tuple[str, ...]]] = {
    "cooking": {
        "nouns": ("soup", "bread", "oven", "recipe", "garlic", "sauce", "pasta", "kitchen", "spice", "dough"),
        "verbs": ("bakes", "stirs", "tastes", "simmers", "chops", "roasts", "seasons", "serves"),
        "adjs": ("spicy", "fresh", "crispy", "warm", "savory", "sweet", "homemade", "golden"),
    },
    "football": {
        "nouns": ("striker", "goal", "match", "referee", "stadium", "coach", "league", "penalty", "defender"),
        "verbs": ("scores", "passes", "tackles", "defends", "wins", "loses", "kicks", "trains"),
        "adjs": ("late", "decisive", "crowded", "tactical", "injured", "unbeaten", "rival", "famous"),
    },
    "finance": {
        "nouns": ("market", "bank", "loan", "stock", "investor", "budget", "inflation", "bond", "profit"),
        "verbs": ("invests", "lends", "borrows", "trades", "saves", "raises", "cuts", "reports"),
        "adjs": ("volatile", "quarterly", "risky", "stable", "annual", "strong", "weak", "global"),
    },
    "weather": {
        "nouns": ("storm", "rain", "wind", "forecast", "cloud", "snow", "sunshine", "temperature", "flood"),
        "verbs": ("brings", "hits", "clears", "falls", "rises", "warns", "covers", "sweeps"),
        "adjs": ("heavy", "cold", "humid", "stormy", "mild", "freezing", "sunny", "windy"),
    },
    "medicine": {
        "nouns": ("doctor", "patient", "vaccine", "clinic", "symptom", "nurse", "treatment", "virus", "surgery"),
        "verbs": ("treats", "examines", "prescribes", "heals", "tests", "recovers", "diagnoses", "monitors"),
        "adjs": ("chronic", "mild", "severe", "routine", "medical", "healthy", "rare", "early"),
    },
    "travel": {
        "nouns": ("train", "airport", "hotel", "passport", "journey", "beach", "museum", "ticket", "island"),
        "verbs": ("visits", "books", "explores", "departs", "arrives", "packs", "returns", "crosses"),
        "adjs": ("crowded", "scenic", "quiet", "delayed", "cheap", "remote", "ancient", "busy"),
    },
    "music": {
        "nouns": ("guitar", "concert", "album", "singer", "piano", "melody", "band", "drummer", "song"),
        "verbs": ("plays", "records", "sings", "composes", "tours", "performs", "releases", "tunes"),
        "adjs": ("loud", "acoustic", "catchy", "live", "classical", "new", "soft", "brilliant"),
    },
    "computing": {
        "nouns": ("server", "laptop", "database", "network", "software", "bug", "compiler", "password", "cloud"),
        "verbs": ("crashes", "installs", "updates", "compiles", "encrypts", "deploys", "runs", "stores"),
        "adjs": ("slow", "secure", "open", "remote", "broken", "fast", "legacy", "encrypted"),
    },
}
SUBJECTS = ("The", "A", "Our", "Every", "That", "This")
TIMES = ("today", "this morning", "last night", "again", "every week", "on Sunday", "at noon", "before dawn")
TEMPLATES = (
    "{S} {adj} {noun} {verb} the {noun2} {time}.",
    "{S} {noun} {verb} a {adj} {noun2}.",
    "Why the {noun} {verb} the {adj} {noun2} {time} is unclear.",
    "{S} {noun2} was {adj}, so the {noun} {verb} it {time}.",
    "I think the {adj} {noun} {verb} the {noun2}.",
    "After the {noun2}, {S_lower} {noun} {verb} {time}.",
)


def synthetic_corpus(n: int, seed: int = 0) -> tuple[list[str], list[str]]:
    """``n`` sentences and their topic names (both lists of length ``n``), the same for the same seed."""
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    rng = np.random.default_rng(seed)
    names = list(TOPICS)
    topic = rng.integers(0, len(names), n)  # (n,)
    template = rng.integers(0, len(TEMPLATES), n)
    picks = rng.integers(0, 1 << 30, (n, 7))  # (n, 7) indices taken modulo each word list
    texts: list[str] = []
    for i in range(n):
        words = TOPICS[names[topic[i]]]
        p = picks[i]
        subject = SUBJECTS[p[0] % len(SUBJECTS)]
        noun = words["nouns"][p[1] % len(words["nouns"])]
        noun2 = words["nouns"][p[2] % len(words["nouns"])]
        text = TEMPLATES[template[i]].format(
            S=subject,
            S_lower=subject.lower(),
            noun=noun,
            noun2=noun2 if noun2 != noun else words["nouns"][(p[2] + 1) % len(words["nouns"])],
            verb=words["verbs"][p[3] % len(words["verbs"])],
            adj=words["adjs"][p[4] % len(words["adjs"])],
            time=TIMES[p[5] % len(TIMES)],
        )
        texts.append(text)
    return texts, [names[t] for t in topic]


def synthetic_vectors(n: int, dim: int = 32, *, seed: int = 0) -> tuple[list[str], list[str], np.ndarray]:
    """``synthetic_corpus(n, seed)`` with made-up vectors (n, dim) float32: one Gaussian blob per topic."""
    import pandas as pd

    texts, topics = synthetic_corpus(n, seed)
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 4 / np.sqrt(dim / 32), (len(TOPICS), dim))
    code = pd.Categorical(topics, categories=list(TOPICS)).codes
    vectors = (centres[code] + rng.normal(0, 1, (n, dim))).astype(np.float32)  # (n, dim)
    return texts, topics, vectors


@dataclass(frozen=True)
class TopicSpace:
    """Made-up vectors shaped like a sentence-embedding space at scale: each topic a centre, each of its
    ``subtopics`` a nearby centre, each row its subtopic's centre plus a point of that subtopic's own
    ``rank``-dimensional subspace plus a little isotropic noise. Neighbourhoods are local and low-dimensional and
    subtopics overlap, so approximate search needs a few lists of an IVF index (recall@15 0.98 at nprobe 8 of
    4 sqrt(n) lists at 200k), unlike isotropic blobs, where nothing at the lists' scale tells neighbours apart."""

    centres: np.ndarray  # (topics * subtopics, dim)
    bases: np.ndarray  # (topics * subtopics, rank, dim)
    subtopics: int
    noise: float

    @classmethod
    def make(
        cls, dim: int, *, topics: int = len(TOPICS), subtopics: int = 256, rank: int = 16, seed: int = 0
    ) -> TopicSpace:
        rng = np.random.default_rng(seed)
        topic = rng.normal(0, 1, (topics, dim))  # (T, dim)
        sub = np.repeat(topic, subtopics, axis=0) + rng.normal(0, 0.12, (topics * subtopics, dim))  # (T*S, dim)
        bases = rng.normal(0, 1 / np.sqrt(dim), (topics * subtopics, rank, dim))  # (T*S, r, dim) ~unit rows
        return cls(sub.astype(np.float32), bases.astype(np.float32), subtopics, 0.12)

    def draw(self, topic: np.ndarray, *, seed) -> np.ndarray:
        """Rows (m, dim) float32 for the topic codes ``topic`` (m,), a random subtopic each; the same for the same
        ``seed`` (an int or a sequence, e.g. (seed, first row), so chunks of a big corpus are drawn apart)."""
        rng = np.random.default_rng(seed)
        m, (_, rank, dim) = len(topic), self.bases.shape
        sub = np.asarray(topic, np.int64) * self.subtopics + rng.integers(0, self.subtopics, m)  # (m,)
        z = rng.normal(0, 1, (m, rank)).astype(np.float32)  # (m, r)
        out = self.centres[sub] + rng.normal(0, self.noise, (m, dim)).astype(np.float32)  # (m, dim)
        for s in range(0, m, 4_096):  # the gathered bases in blocks (4,096 x r x dim floats)
            out[s : s + 4_096] += np.einsum("mr,mrd->md", z[s : s + 4_096], self.bases[sub[s : s + 4_096]])
        return out


def synthetic_atlas(out: Path, n: int, dim: int = 32, *, layout: str = "pca", calibrate: str = "none", seed: int = 0):
    """An atlas in ``out`` of ``n`` synthetic sentences whose vectors are made up, not embedded (clustered
    ``dim``-d points by topic): the render input of ``bench/atlas.py --quick`` (32-d, PCA, raw only) and of the
    Atlas tests, and with ``--precomputed`` the graph, layout and memory of a big corpus without the hours of
    embedding (384-d, UMAP, whitening).
    Returns (folder, AtlasRun or None when it was already complete)."""
    import pandas as pd

    from isoscope.atlas.pipeline import AtlasConfig, build_atlas, is_complete

    if is_complete(out):
        return out, None
    texts, topics, vectors = synthetic_vectors(n, dim, seed=seed)
    config = AtlasConfig(layout=layout, calibrate=calibrate)
    run = build_atlas(None, texts, out, config=config, meta=pd.DataFrame({"topic": topics}), vectors=vectors)
    return out, run
