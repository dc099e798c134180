"""Plain-JSON conversion shared by the CLI output and the files core writes."""

from __future__ import annotations

import numpy as np


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
