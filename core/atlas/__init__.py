"""Whole-corpus atlas: every text of a corpus (up to a million) on one 2-D map, with density, clusters and
their word labels, raw and calibrated, built stage by stage and resumable (see ``isoscope.atlas.pipeline``).

- ``isoscope.atlas.pipeline``: ``AtlasConfig``, ``build_atlas``, ``load_atlas``, ``is_complete``.
- ``isoscope.atlas.graph``: the kNN graph (exact flat, FAISS HNSW beyond 20k rows), neighbour overlap.
- ``isoscope.atlas.layout``: UMAP on the precomputed graph, chunked PCA.
- ``isoscope.atlas.density``: density grid, density-basin clusters, distinctive words.
- ``isoscope.atlas.raster``: every point drawn into one image; density contours.
- ``isoscope.atlas.synthetic``: a seeded sentence generator for benchmarks and tests.
"""
