"""Sentence pairs as the notebook API takes them: a file, ``isoscope.data.Pairs``, a frame or tuples."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from isoscope.errors import InputError

PAIR_COLUMNS = ("sentence1", "sentence2", "score")


def as_pairs(pairs: Any) -> Any:
    """``isoscope.data.Pairs`` from a pairs file (``load_pairs``: bounded, any table format), a ``Pairs``, a
    DataFrame with columns sentence1, sentence2[, score] (else its first two or three columns), or a sequence
    of (sentence1, sentence2[, score]) tuples."""
    import pandas as pd

    from isoscope.data import Pairs, load_pairs

    if isinstance(pairs, Pairs):
        return pairs
    if isinstance(pairs, str | Path):
        return load_pairs(pairs)
    if isinstance(pairs, pd.DataFrame):
        frame = pairs if set(PAIR_COLUMNS[:2]) <= set(pairs.columns) else _by_position(pairs)
        scores = frame["score"].to_numpy(np.float64) if "score" in frame else None
        return _checked(frame["sentence1"].tolist(), frame["sentence2"].tolist(), scores, "pairs")
    if isinstance(pairs, Sequence) and pairs and all(isinstance(p, Sequence) and len(p) in (2, 3) for p in pairs):
        widths = {len(p) for p in pairs}
        if len(widths) > 1:
            raise InputError("pairs: give every pair as (sentence1, sentence2, score), or none with a score")
        scores = np.array([p[2] for p in pairs], np.float64) if widths == {3} else None
        return _checked([p[0] for p in pairs], [p[1] for p in pairs], scores, "pairs")
    raise InputError(
        "pairs must be a pairs file, isoscope.data.Pairs, a DataFrame (sentence1, sentence2, score) or a list of "
        f"(sentence1, sentence2, score) tuples; got {type(pairs).__name__}"
    )


def _by_position(frame: Any) -> Any:
    if frame.shape[1] < 2:
        raise InputError("pairs: the frame needs columns sentence1 and sentence2 (and score)")
    cols = list(frame.columns[:3])
    return frame[cols].set_axis(list(PAIR_COLUMNS[: len(cols)]), axis=1)


def _checked(s1: list[Any], s2: list[Any], scores: np.ndarray | None, name: str) -> Any:
    from isoscope.data import Pairs

    if not s1:
        raise InputError(f"{name}: no pairs")
    if any(not isinstance(t, str) for t in s1 + s2):
        raise InputError(f"{name}: every sentence must be a string")
    if scores is not None and not np.isfinite(scores).all():
        raise InputError(f"{name}: every score must be a finite number")
    return Pairs(list(s1), list(s2), scores, [], name)
