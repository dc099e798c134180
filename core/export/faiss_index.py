"""A FAISS index that searches raw vectors in the calibrated space: ``IndexPreTransform`` whose transforms are the
fitted affine map (``LinearTransform``, ``y = A x + b``) and L2 normalisation, over an ``IndexFlatIP``; inner
product after both is the cosine of the calibrated vectors, as Isoscope's exact search scores them. A retrieval
system adds and queries its raw vectors; the index applies the fix."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import faiss

    from isoscope.export.affine import AffineMap


def linear_transform(affine: AffineMap) -> faiss.LinearTransform:
    """FAISS's ``LinearTransform`` ``y = A x + b`` holding ``affine`` (A = W^T, float32), trained."""
    import faiss

    linear = faiss.LinearTransform(affine.d_in, affine.d_out, True)
    faiss.copy_array_to_vector(np.ascontiguousarray(affine.weight.T, np.float32).ravel(), linear.A)  # (d_out, d_in)
    faiss.copy_array_to_vector(np.ascontiguousarray(affine.bias, np.float32), linear.b)  # (d_out,)
    linear.is_trained = True
    return linear


def pretransform_index(affine: AffineMap) -> faiss.Index:
    """An empty ``IndexPreTransform``: the affine map, then L2 normalisation, then ``IndexFlatIP`` (d_out)."""
    import faiss

    linear = linear_transform(affine)
    index = faiss.IndexPreTransform(faiss.NormalizationTransform(affine.d_out, 2.0), faiss.IndexFlatIP(affine.d_out))
    index.prepend_transform(linear)  # applied first: x -> A x + b -> unit length -> inner product
    return index


def write_faiss_index(affine: AffineMap, vectors: np.ndarray, out: str | Path, *, force: bool = False) -> Path:
    """Write ``out``: ``pretransform_index(affine)`` holding the raw ``vectors`` (n, d_in) (row ids = positions),
    beside ``out`` and renamed over it (``isoscope.data.outputs.atomic_file``: an existing ``out`` that is not
    a FAISS index is replaced only with ``force``)."""
    import faiss

    from isoscope.data.outputs import FAISS, atomic_file

    index = pretransform_index(affine)
    index.add(np.ascontiguousarray(vectors, np.float32))
    with atomic_file(out, kind=FAISS, force=force) as tmp:
        faiss.write_index(index, str(tmp))
    return Path(out)
