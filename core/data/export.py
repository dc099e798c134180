"""What leaves Isoscope for other programs: CSV bytes that a spreadsheet opens as text, never as formulas, and
plain JSON values (the CLI's ``--json`` output and the JSON files Isoscope writes)."""

from __future__ import annotations

import numpy as np
import pandas as pd

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def safe_csv(df: pd.DataFrame) -> bytes:
    """CSV bytes in which text cells that a spreadsheet would run as formulas are prefixed with a quote."""

    def guard(v: object) -> object:
        return "'" + v if isinstance(v, str) and v.startswith(FORMULA_PREFIXES) else v

    safe = df.copy()
    safe.columns = [guard(c) for c in safe.columns]  # user-named metadata columns reach the header row
    for c in safe.columns:
        if safe[c].dtype == object or pd.api.types.is_string_dtype(safe[c]):
            safe[c] = safe[c].map(guard)
    # CRLF rows (RFC 4180): the csv writer then quotes any cell holding a \r or \n. With "\n" rows a bare \r
    # stays unquoted and a spreadsheet starts a new row there, so "a\r=cmd|..." would begin a cell with "=".
    return safe.to_csv(index=False, lineterminator="\r\n").encode("utf-8")


def to_jsonable(obj: object) -> object:
    """Dicts, lists, numpy arrays and scalars as plain JSON values; NaN and inf become None."""
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return to_jsonable(obj.tolist())
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not np.isfinite(obj):
        return None
    return obj
