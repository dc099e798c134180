"""Everything measured between two spaces of the same texts, and its plain-JSON form (CLI ``--json``)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from isoscope.comparison.align import MAP_POINTS, AlignedMaps, aligned_maps
from isoscope.comparison.cka import CKAMatrix, cka_matrix
from isoscope.comparison.hubness import Hubness, hubness
from isoscope.neighbours.overlap import NeighbourOverlap, check_k, neighbour_overlap

if TYPE_CHECKING:
    from isoscope.sources.build import SpaceVectors

log = logging.getLogger(__name__)

ProgressFactory = Callable[[str], Callable[[int, int], None] | None]  # stage -> (done, total) callback
TOP = 10  # texts listed as most changed and as hubs


@dataclass
class ComparisonMetrics:
    """CKA, neighbour overlap, hubness of each space and the aligned maps of A (n, d_a) vs B (n, d_b)."""

    n: int
    cka: CKAMatrix  # (1, 1): the two spaces
    overlap: NeighbourOverlap
    hubness_a: Hubness
    hubness_b: Hubness
    maps: AlignedMaps | None
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def cka_linear(self) -> float:
        return float(self.cka.linear[0, 0])

    @property
    def cka_debiased(self) -> float:
        return float(self.cka.debiased[0, 0])

    @property
    def overlap_at_k(self) -> float:
        return self.overlap.overlap_at_k

    def moved(self, texts: Sequence[str] | None = None, top: int = TOP) -> list[dict]:
        """The texts whose neighbours changed most, each with both neighbour lists (id, cosine[, text])."""
        out = []
        for i in self.overlap.most_changed(top):
            lists = {}
            for side, ids, scores in (
                ("a", self.overlap.neighbours_a[i], self.overlap.scores_a[i]),
                ("b", self.overlap.neighbours_b[i], self.overlap.scores_b[i]),
            ):
                lists[f"neighbours_{side}"] = [
                    {"id": int(j), "cosine": float(s), **({"text": texts[j]} if texts is not None else {})}
                    for j, s in zip(ids, scores, strict=True)
                ]
            row = {"id": int(i), "overlap": float(self.overlap.overlap[i]), "shared": int(self.overlap.shared[i])}
            if texts is not None:
                row["text"] = texts[i]
            out.append({**row, **lists})
        return out

    def to_dict(self, texts: Sequence[str] | None = None, top: int = TOP) -> dict:
        """The JSON keys of ``python -m isoscope compare --json`` (without the layer matrix and the inputs)."""
        texts = list(texts) if texts is not None else None
        maps = self.maps
        return {
            "n_texts": self.n,
            "k": self.overlap.k,
            "cka_linear": self.cka_linear,
            "cka_debiased": self.cka_debiased,
            "overlap_at_k": self.overlap_at_k,
            "overlap_histogram": self.overlap.histogram().to_dict("records"),
            "most_changed": self.moved(texts, top),
            "hubness": {"a": self.hubness_a.summary(texts, top), "b": self.hubness_b.summary(texts, top)},
            "procrustes_disparity": maps.disparity if maps is not None else None,
            "map": None
            if maps is None
            else {
                "method": maps.method,
                "points": len(maps.rows),
                "scale": maps.procrustes.scale,
                "reflected": bool(np.linalg.det(maps.procrustes.rotation) < 0),
                **maps.quality,
                "quality_points": maps.quality_rows,
                "quality_k": maps.quality_k,
            },
            "seconds": dict(self.seconds),
        }


def compare_spaces(
    a: np.ndarray,
    b: np.ndarray,
    k: int = 10,
    *,
    maps: bool = True,
    map_method: str = "pca",
    map_points: int = MAP_POINTS,
    seed: int = 0,
    progress: ProgressFactory | None = None,
) -> ComparisonMetrics:
    """Measure how B (n, d_b) differs from A (n, d_a) on the same texts (rows).

    CKA on the vectors as given; neighbours, hubness and maps by cosine. ``b is a`` (the same array) skips
    the second neighbour search.
    """
    n = int(np.shape(a)[0])
    k = check_k(k, n)
    seconds: dict[str, float] = {}
    t = time.perf_counter()
    cka = cka_matrix([a], [b])
    seconds["cka"] = time.perf_counter() - t
    t = time.perf_counter()
    overlap = neighbour_overlap(a, b, k, progress=progress("neighbours") if progress else None)
    seconds["neighbours"] = time.perf_counter() - t
    hub_a, hub_b = hubness(overlap.neighbours_a), hubness(overlap.neighbours_b)
    amap = None
    if maps:
        t = time.perf_counter()
        bar = progress(f"maps ({map_method})") if progress else None
        amap = aligned_maps(a, b, map_method, max_points=map_points, seed=seed)
        if bar is not None:
            bar(1, 1)
        seconds["maps"] = time.perf_counter() - t
    return ComparisonMetrics(n, cka, overlap, hub_a, hub_b, amap, seconds)


def layer_cka(layers_a: Sequence[np.ndarray], layers_b: Sequence[np.ndarray] | None = None) -> CKAMatrix:
    """CKA of every layer of A (rows, embeddings first) against every layer of B (columns); ``layers_b``
    None compares A's layers with themselves (a unit diagonal)."""
    return cka_matrix(layers_a, layers_b)


def spaces_layer_cka(a: SpaceVectors, b: SpaceVectors) -> CKAMatrix:
    """``layer_cka`` of two spaces built with their layers (``build_spaces(..., layers=True)``); two spaces of
    the same encoder compare its layers with themselves (a unit diagonal, whatever their pooling)."""
    if a.layers is None or b.layers is None:
        raise ValueError("both spaces need their layers: build_spaces(..., layers=True)")
    same = a.spec.encoder_key == b.spec.encoder_key
    return layer_cka(a.layers, None if same else b.layers)
