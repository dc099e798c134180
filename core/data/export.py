"""Downloads: CSV bytes that a spreadsheet opens as text, never as formulas."""

from __future__ import annotations

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
