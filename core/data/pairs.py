"""Sentence pairs (sentence1, sentence2, optional gold score) from a user's file."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from isoscope.data.limits import DecodeLimits, resolve
from isoscope.data.source import TABLE_FORMATS, as_source
from isoscope.data.tables import check_rows, clean_texts, read_table, truncate_texts
from isoscope.errors import InputError

SCORE_RANGE = (0.0, 5.0)


@dataclass
class Pairs:
    """Sentence pairs with optional gold similarity scores."""

    sentence1: list[str]
    sentence2: list[str]
    scores: np.ndarray | None = None  # (n,) float64, or None when the file has no scores
    warnings: list[str] = field(default_factory=list)
    name: str = ""

    def __len__(self) -> int:
        return len(self.sentence1)

    @property
    def texts(self) -> list[str]:
        """All sentences, first column then second (what an unsupervised calibrator fits on)."""
        return self.sentence1 + self.sentence2

    def to_frame(self) -> pd.DataFrame:
        df = pd.DataFrame({"sentence1": self.sentence1, "sentence2": self.sentence2})
        if self.scores is not None:
            df["score"] = self.scores
        return df


def load_pairs(
    source: str | Path | bytes,
    name: str | None = None,
    *,
    max_rows: int | None = None,
    max_chars: int | None = None,
    limits: DecodeLimits | None = None,
) -> Pairs:
    """Load sentence pairs (sentence1, sentence2, optional score), with or without a header.

    Without a header, columns are taken by position: sentence1, sentence2, score. The STS-B files load
    as they are. ``limits`` (default: ``current_limits()``) bound what is read; ``max_rows`` and
    ``max_chars`` override two of them.
    """
    limits = resolve(limits, max_rows, max_chars)
    src = as_source(source, name, limits)
    name = src.name
    if src.is_blank():
        raise InputError(f"{name}: the file is empty")
    fmt = src.format(TABLE_FORMATS)
    df, has_header, warnings = read_table(src, name, fmt, limits=limits)
    df = _pair_columns(df, name, has_header)
    check_rows(len(df), name, limits.max_rows)
    s1, s2 = clean_texts(df["sentence1"]), clean_texts(df["sentence2"])
    keep = (s1 != "") & (s2 != "")
    if not keep.any():
        raise InputError(f"{name}: every row has an empty sentence")
    if (~keep).sum():
        warnings.append(f"{name}: dropped {int((~keep).sum())} row(s) with an empty sentence")
    scores = None
    if "score" in df.columns:
        scores_all = pd.to_numeric(df["score"].map(_as_number), errors="coerce")
        bad = scores_all.isna() | ~np.isfinite(scores_all.fillna(0))
        out = ~bad & ((scores_all < SCORE_RANGE[0]) | (scores_all > SCORE_RANGE[1]))
        if bad[keep].any():
            warnings.append(f"{name}: dropped {int(bad[keep].sum())} row(s) whose score is missing or not a number")
        if out[keep].any():
            lo, hi = SCORE_RANGE
            warnings.append(f"{name}: dropped {int(out[keep].sum())} row(s) with a score outside {lo:g}-{hi:g}")
        keep &= ~bad & ~out
        if not keep.any():
            raise InputError(f"{name}: no row has a numeric score between {SCORE_RANGE[0]:g} and {SCORE_RANGE[1]:g}")
        scores = scores_all[keep].to_numpy(np.float64)
    s1, s2 = s1[keep], s2[keep]
    s1, s2 = truncate_texts([s1, s2], name, warnings, max_chars=limits.max_chars)
    return Pairs(s1.tolist(), s2.tolist(), scores, warnings, name)


def _as_number(v: object) -> object:
    """Scores as numbers; text is parsed but never evaluated."""
    if isinstance(v, str):
        v = v.strip()
        return v if v else None
    return v


def _scores_under_a_header(df: pd.DataFrame) -> bool:
    """A first row whose third cell is not a number above rows whose third cells are: the first row names the
    columns (a header of unknown names), so reading it by position would drop it as a row without a score."""
    if df.shape[1] < 3 or len(df) < 2:
        return False
    third = pd.to_numeric(df.iloc[:, 2].map(_as_number), errors="coerce")  # (rows,)
    return bool(np.isnan(third.iloc[0]) and third.iloc[1:].notna().mean() > 0.5)


def _pair_columns(df: pd.DataFrame, name: str, has_header: bool) -> pd.DataFrame:
    cols = {str(c).strip().lower(): c for c in df.columns}
    if "sentence1" in cols and "sentence2" in cols:
        out = pd.DataFrame({"sentence1": df[cols["sentence1"]], "sentence2": df[cols["sentence2"]]})
        for alias in ("score", "label", "similarity", "gold"):
            if alias in cols:
                out["score"] = df[cols[alias]]
                break
        return out
    if not has_header and _scores_under_a_header(df):  # e.g. question,answer,rating: a header, never data
        df.columns = [str(c).strip() for c in df.iloc[0]]
        has_header = True
    if has_header:
        raise InputError(
            f"{name}: missing columns; need sentence1 and sentence2 (and optionally score), found "
            + ", ".join(map(str, df.columns))[:200]
        )
    if df.shape[1] < 2:
        raise InputError(
            f"{name}: found one column; need sentence1, sentence2[, score] separated by commas (.csv) or tabs (.tsv)"
        )
    out = pd.DataFrame({"sentence1": df.iloc[:, 0], "sentence2": df.iloc[:, 1]})
    if df.shape[1] >= 3:
        out["score"] = df.iloc[:, 2]
    return out
