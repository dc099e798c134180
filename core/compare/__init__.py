"""How two embedding spaces of the same texts differ: CKA, neighbour overlap, hubness and aligned maps.

A *space* is (model, init, pooling, calibration), a vectors file or an embeddings endpoint, applied to one
list of texts (``spaces``). One concept
per module:

- ``cka``: linear and debiased CKA, and the layer x layer matrix (feature-space Grams, no (n, n) matrix).
- neighbour overlap: ``isoscope.neighbours.overlap`` (the one overlap@k; re-exported here).
- ``hubness``: k-occurrence counts, skewness, anti-hubs, top hubs (Radovanovic et al. 2010).
- ``align``: one 2-D map per space, B aligned onto A by orthogonal Procrustes, trustworthiness/continuity.
- ``spec``: where a space comes from (``SpaceSpec``: a model, a vectors file or an endpoint) and ``parse_space``,
  the one parser of SPEC strings.
- ``spaces``: encoders (local, hub, landscape checkpoint, random init), vectors files and endpoints, the
  vectors of each space (``build_spaces``), calibration.
- ``report``: everything between two spaces (``compare_spaces``) and its JSON form.

report = compare_spaces(vectors_a, vectors_b, k=10)   # report.cka_linear, report.overlap_at_k, ...

The package is also callable: ``isoscope.compare(a, b, k=10, layers=False)`` with two ``isoscope.Space`` objects is
``a.compare(b, ...)`` (``isoscope.space.comparison.compare``: the same numbers, with notebook cards and maps).
"""

from __future__ import annotations

import sys
import types
from typing import Any

from isoscope.compare.align import AlignedMaps, Procrustes, aligned_maps, map_quality, procrustes_align
from isoscope.compare.cka import CKAMatrix, cka_matrix, debiased_cka, linear_cka
from isoscope.compare.hubness import Hubness, hubness
from isoscope.compare.report import Comparison, compare_spaces, layer_cka, spaces_layer_cka
from isoscope.compare.spaces import (
    INITS,
    SPEC_KEYS,
    Space,
    SpaceSources,
    SpaceSpec,
    build_spaces,
    load_space_encoder,
    parse_space,
    random_encoder,
)
from isoscope.neighbours.exact import knn_table
from isoscope.neighbours.overlap import NeighbourOverlap, jaccard_tables, neighbour_overlap

__all__ = [
    "INITS",
    "SPEC_KEYS",
    "AlignedMaps",
    "CKAMatrix",
    "Comparison",
    "Hubness",
    "NeighbourOverlap",
    "Procrustes",
    "Space",
    "SpaceSources",
    "SpaceSpec",
    "aligned_maps",
    "build_spaces",
    "cka_matrix",
    "compare_spaces",
    "debiased_cka",
    "hubness",
    "jaccard_tables",
    "knn_table",
    "layer_cka",
    "linear_cka",
    "load_space_encoder",
    "map_quality",
    "neighbour_overlap",
    "parse_space",
    "procrustes_align",
    "random_encoder",
    "spaces_layer_cka",
]


class _CallableModule(types.ModuleType):
    """``isoscope.compare(a, b, ...)`` calls ``a.compare(b, ...)``: two ``isoscope.Space`` objects compared. The
    call is duck-typed, so this package never imports ``isoscope.space`` (which imports this one)."""

    def __call__(self, a: Any, b: Any, **kwargs: Any) -> Any:
        method = getattr(a, "compare", None)
        if not callable(method):
            from isoscope.errors import InputError

            raise InputError(
                "isoscope.compare(a, b) takes two isoscope.Space objects (isoscope.Space(vectors) wraps an array); "
                f"got {type(a).__name__}. For two arrays use isoscope.compare.compare_spaces(a, b)"
            )
        return method(b, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
