"""Values that carry their cache key: an array (or a list of texts) and the key that names it, as one value.

Streamlit hashes cached functions' arguments; hashing a (50,000, 384) array on every rerun is slow, and
passing a key next to an unhashed array lets the two drift apart. ``Vectors`` and ``Texts`` hold both, and
``HASH_FUNCS`` tells the caches to hash them by their key alone.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from isoscope.cache import make_key, text_digest
from isoscope.data import Pairs


@dataclass(frozen=True, eq=False)
class Vectors:
    """An (n, d) array and the key naming its content (model, pooling, texts, calibration...)."""

    key: str
    array: np.ndarray  # (n, d) float32

    def __len__(self) -> int:
        return len(self.array)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.array.shape)


@dataclass(frozen=True, eq=False)
class Texts:
    """A tuple of texts and the order-sensitive digest naming them."""

    key: str
    items: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.items)


def texts(items: Sequence[str]) -> Texts:
    """``items`` with their digest."""
    items = tuple(items)
    return Texts(text_digest(items), items)


@dataclass(frozen=True, eq=False)
class Joined(Texts):
    """Several lists of texts one after the other, duplicates dropped (first occurrence kept): e.g. the demo
    corpus + a page's sentences. ``services.embeddings`` embeds each part as itself (cached once) and joins
    the rows, so a fit set built from texts already embedded costs no forward pass."""

    parts: tuple[Texts, ...] = ()


def joined(*lists: Sequence[str] | Texts) -> Joined:
    """The texts of ``lists`` in order without duplicates, keyed like ``texts`` of the same items."""
    parts = tuple(p if isinstance(p, Texts) else texts(p) for p in lists)
    items = tuple(dict.fromkeys(t for p in parts for t in p.items))
    return Joined(text_digest(items), items, parts)


def vectors_of(array: np.ndarray, *parts: object) -> Vectors:
    """An array named by its content (e.g. uploaded vectors), optionally with more ``parts`` in the key."""
    arr = np.ascontiguousarray(array)
    digest = hashlib.sha256(arr.tobytes()).hexdigest()
    return Vectors(make_key("array", arr.shape, arr.dtype.str, digest, *parts), arr)


def pairs_key(pairs: Pairs) -> str:
    """Key naming a pairs set (texts and scores)."""
    scores = "" if pairs.scores is None else np.asarray(pairs.scores, np.float64).tobytes().hex()
    return make_key(text_digest(pairs.texts), scores)


HASH_FUNCS = {Vectors: lambda v: v.key, Texts: lambda t: t.key, Pairs: pairs_key}
