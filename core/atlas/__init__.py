"""Whole-corpus atlas: every text of a corpus (up to a million on one machine, more on a Ray cluster) on one 2-D map, with density, clusters and
their word labels, raw and calibrated, built stage by stage and resumable (see ``isoscope.atlas.pipeline``),
served as tiles that stay sharp at every zoom. One module per stage, the build's machinery and what serves it:

The build:
- ``isoscope.atlas.pipeline``: ``build_atlas`` (the stages in order, each skipped when the ledger shows it fresh).
- ``isoscope.atlas.config``: ``AtlasConfig`` (what an atlas is built with), the engines.
- ``isoscope.atlas.inputs``: what a build reads (texts or Parquet shards, checked) and the ``texts`` stage
  (``points.parquet``).
- ``isoscope.atlas.vectors``: the ``embed`` and ``calibrate`` stages (``vectors.npy``, ``cal/vectors.npy``).
- ``isoscope.atlas.graph``: the kNN graph (exact flat, NN-descent beyond 20k rows), neighbour overlap.
- ``isoscope.atlas.layout``: UMAP on the precomputed graph (the landmark layout for big corpora), chunked PCA.
- ``isoscope.atlas.workers``: stages side by side in worker processes (the two spaces' single-core layouts).
- ``isoscope.atlas.clusters``: the clusters stage over blocks of rows (density, levels, labels, centres).
- ``isoscope.atlas.density``: density grid, density-basin clusters at three levels, the box the map opens on.
- ``isoscope.atlas.labels``: cluster labels by class-based TF-IDF against the whole corpus.
- ``isoscope.atlas.extras``: the extras stage (norm, length, neighbour overlap per row); also ``write_extra`` (below).
- ``isoscope.atlas.spatial``: the layout's spatial index (Morton order: every tile is one slice; box and
  nearest-point queries; ``block_codes``, the one computation of a point's code), written per space by the build's
  ``index`` stage and memory-mapped by the server.
- ``isoscope.atlas.pyramid``: the pyramid's top levels rendered at build time in the default style (the
  ``tiles`` stage), the default style's colour codes, and their checked read-back for the server.
- ``isoscope.atlas.costs``: what a kNN graph and a layout will cost here (rates timed on probe vectors); a build's
  plan (shards, memory per task, time) and whether the one-machine engine fits in the memory available.

The ray engine (the stages as Ray tasks over shards of rows, resumable shard by shard):
- ``isoscope.atlas.distributed``: its machinery (the session, shards, ``map_rows``, a stage's parts ledger) and the
  stages of one fan-out each (embedding by Ray Data actors, label counts, tiles).
- ``isoscope.atlas.ray_graph``: the FAISS IVF graph with its measured recall.
- ``isoscope.atlas.ray_layout``: the landmark layout placed and refined in tasks.
- ``isoscope.atlas.ray_index``: the spatial index as a sample sort in tasks.

Reading and serving:
- ``isoscope.atlas.folder``: the folder on disk: its ledger (every file proved by size and SHA-256), the build
  lock, ``load_atlas`` (every file checked before use; per-point arrays and the spatial index memory-mapped,
  nothing of size n read whole), ``is_complete``.
- ``isoscope.atlas.extras.write_extra``: a per-point float column added after the build (``extras/NAME.npy``,
  recorded in the ledger), a colour of the Atlas page (a migration's adapter cosine: ``isoscope.migrate.where``).
- ``isoscope.atlas.points``: ``points.parquet`` read by row group (texts under the cursor, selected rows,
  search with Arrow's compute, a column for its colours), never whole.
- ``isoscope.atlas.tiles``: the tile pyramid: every point drawn at every zoom, contours per level.
- ``isoscope.atlas.raster``: image helpers (compositing, contour levels, PNG).
- ``isoscope.atlas.synthetic``: a seeded sentence generator for benchmarks and tests.
"""
