"""Hubness of a space (Radovanovic, Nanopoulos & Ivanovic 2010, "Hubs in Space").

In high dimensions a few points (hubs) turn up in very many other points' k-nearest-neighbour lists while
many (anti-hubs) are nobody's neighbour. The k-occurrence ``N_k(x)`` counts how often ``x`` is among the
others' ``k`` nearest neighbours; its mean is exactly ``k``, and its skewness measures hubness (0 for a
symmetric distribution, large and positive with hubs). Centring/whitening-type calibrations are known
remedies (Suzuki et al. 2013, "Centering Similarity Measures to Reduce Hubs"), so comparing A and B
shows whether a calibration removed hubs here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.stats import skew


@dataclass
class Hubness:
    """k-occurrence counts of one space and their summary."""

    k: int
    k_occurrence: np.ndarray  # (n,) int64: times each text is among the others' k nearest neighbours

    @property
    def skewness(self) -> float:
        """Standardised third moment of N_k (``scipy.stats.skew``, biased); NaN when N_k is constant."""
        counts = self.k_occurrence.astype(np.float64)
        if len(counts) < 3 or np.ptp(counts) == 0:
            return float("nan")
        return float(skew(counts))

    @property
    def antihub_share(self) -> float:
        """Share of texts that are no text's neighbour (N_k == 0)."""
        return float(np.mean(self.k_occurrence == 0)) if len(self.k_occurrence) else float("nan")

    @property
    def max_occurrence(self) -> int:
        return int(self.k_occurrence.max()) if len(self.k_occurrence) else 0

    def top(self, m: int = 10) -> np.ndarray:
        """The ``m`` biggest hubs: highest N_k first, ties by row id. (m,) int64."""
        order = np.lexsort((np.arange(len(self.k_occurrence)), -self.k_occurrence))
        return order[:m].astype(np.int64)

    def top_frame(self, texts: list[str] | None = None, m: int = 10) -> pd.DataFrame:
        """The top hubs as a table: id, k_occurrence (and text)."""
        ids = self.top(m)
        frame = pd.DataFrame({"id": ids, "k_occurrence": self.k_occurrence[ids]})
        if texts is not None:
            frame["text"] = [texts[i] for i in ids]
        return frame

    def summary(self, texts: list[str] | None = None, m: int = 10) -> dict:
        """``{"k", "skewness", "antihub_share", "max_occurrence", "top": [{"id", "k_occurrence"[, "text"]}]}``."""
        return {
            "k": self.k,
            "skewness": self.skewness,
            "antihub_share": self.antihub_share,
            "max_occurrence": self.max_occurrence,
            "top": self.top_frame(texts, m).to_dict("records"),
        }


def hubness(neighbour_ids: np.ndarray) -> Hubness:
    """Hubness from a neighbour table (n, k) whose row ``i`` lists text ``i``'s neighbours (never ``i`` itself)."""
    ids = np.asarray(neighbour_ids)
    if ids.ndim != 2:
        raise ValueError(f"neighbour_ids must be (texts, k), got shape {ids.shape}")
    n, k = ids.shape
    counts = np.bincount(ids.ravel(), minlength=n)[:n].astype(np.int64)  # (n,)
    return Hubness(k=int(k), k_occurrence=counts)
