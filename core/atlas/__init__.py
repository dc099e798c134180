"""Whole-corpus atlas: every text of a corpus (up to a million) on one 2-D map, with density, clusters and
their word labels, raw and calibrated, built stage by stage and resumable (see ``core.atlas.pipeline``).

- ``core.atlas.pipeline``: ``AtlasConfig``, ``build_atlas``, ``load_atlas``, ``is_complete``.
- ``core.atlas.graph``: the kNN graph (exact flat, FAISS HNSW beyond 20k rows), neighbour overlap.
- ``core.atlas.layout``: UMAP on the precomputed graph, chunked PCA.
- ``core.atlas.density``: density grid, density-basin clusters, distinctive words.
- ``core.atlas.raster``: every point drawn into one image; density contours.
- ``core.atlas.synthetic``: a seeded sentence generator for benchmarks and tests.
"""
