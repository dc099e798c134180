"""How two embedding spaces of the same texts differ: CKA, neighbour overlap, hubness and aligned maps.

One concept per module:

- ``cka``: linear and debiased CKA, and the layer x layer matrix (feature-space Grams, no (n, n) matrix).
- neighbour overlap: ``isoscope.neighbours.overlap`` (the one overlap@k; re-exported here).
- ``hubness``: k-occurrence counts, skewness, anti-hubs, top hubs (Radovanovic et al. 2010).
- ``align``: one 2-D map per space, B aligned onto A by orthogonal Procrustes, trustworthiness/continuity.
- ``metrics``: everything between two spaces (``compare_spaces`` -> ``ComparisonMetrics``) and its JSON form.

metrics = compare_spaces(vectors_a, vectors_b, k=10)   # metrics.cka_linear, metrics.overlap_at_k, ...

Where the two spaces come from (a model, a vectors file, an endpoint) is ``isoscope.sources``. For two
``isoscope.Space`` objects, ``isoscope.compare(a, b)`` gives the same numbers with notebook cards and maps.
"""

from __future__ import annotations

from isoscope.comparison.align import AlignedMaps, Procrustes, aligned_maps, map_quality, procrustes_align
from isoscope.comparison.cka import CKAMatrix, cka_matrix, debiased_cka, linear_cka
from isoscope.comparison.hubness import Hubness, hubness
from isoscope.comparison.metrics import ComparisonMetrics, compare_spaces, layer_cka, spaces_layer_cka
from isoscope.neighbours.exact import knn_table
from isoscope.neighbours.overlap import NeighbourOverlap, jaccard_tables, neighbour_overlap

__all__ = [
    "AlignedMaps",
    "CKAMatrix",
    "ComparisonMetrics",
    "Hubness",
    "NeighbourOverlap",
    "Procrustes",
    "aligned_maps",
    "cka_matrix",
    "compare_spaces",
    "debiased_cka",
    "hubness",
    "jaccard_tables",
    "knn_table",
    "layer_cka",
    "linear_cka",
    "map_quality",
    "neighbour_overlap",
    "procrustes_align",
    "spaces_layer_cka",
]
