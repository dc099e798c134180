"""The ray engine (``isoscope atlas --engine ray``): the atlas's stages as Ray tasks over shards of rows, into the
same folder and ledger as the one-machine engine, resumable shard by shard. This module holds the machinery every
stage shares and the stages that are one fan-out each; the three big stages have a module each.

with ray_session("local"):                       # or "auto", "ray://head:10001"; an initialised Ray is used as is
    ivf_graph(vectors_path, space_dir, k=16, seed=0, shard_rows=100_000)   # isoscope.atlas.ray_graph
    ray_layout(vectors_path, space_dir, config)                          # isoscope.atlas.ray_layout
    ray_index(space_dir, world, shard_rows=100_000)                      # isoscope.atlas.ray_index

- Machinery: ``shards`` (the row ranges of a stage), ``map_rows`` (a function over blocks of rows of .npy files:
  in turn here, or as Ray tasks), ``row_blocks`` (the blocks the clusters and extras stages map over), ``Parts`` (a
  stage's shard files, each proved by the parts folder's own ledger, ``isoscope.atlas.folder.Ledger`` rooted there,
  so a rerun after a killed worker or driver computes only the shards missing; the parts folder goes when the
  stage's files are complete), ``concat_npy`` (shards' files into one, streamed).
- kNN graph (``isoscope.atlas.ray_graph``): FAISS IVF-Flat, each shard added and searched in a task, list-major, its
  recall measured against exact search.
- Layout (``isoscope.atlas.ray_layout``): UMAP on the landmark sample on the driver, every other row placed from the
  graph and refined by UMAP's own optimiser in shard tasks.
- Clusters and extras (``map_rows``: the one-machine engine runs the same functions on blocks of rows in turn):
  each shard's bounds and points per grid cell in tasks, summed on the driver into ``density.ClusterMap``, then
  each shard's density and labels at every level in tasks, written in row order (``cache.NpyBlocks``); the label
  words counted in tasks over row groups of ``points.parquet`` (``ray_tally``), the norms and the neighbour overlap
  per shard.
- Spatial index (``isoscope.atlas.ray_index``): a sample sort by (Morton code, row) in tasks, the files
  ``spatial.write_index``'s byte for byte.
- Tiles (``ray_tiles``): one task per space and level of the pyramid's top.
- Embedding (``embed_on_ray``): ``isoscope.encode.shards.embed_with_ray`` (Ray Data actors, a GPU each on CUDA), its
  shards copied into ``vectors.npy``.

Memory: a task holds its shard (rows x d x 4 bytes of vectors, rows x k x 8 of graph) and the pages it reads of
memory-mapped files; the driver holds the landmark sample and a shard at a time (each stage's module says how).
The folder must be on a filesystem every node sees (tasks read ``vectors.npy`` and write their shards there).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from isoscope.atlas.folder import Ledger, file_digest
from isoscope.atlas.labels import TermTally
from isoscope.atlas.pyramid import TOP_LEVEL, render_levels
from isoscope.cache import NpyBlocks, PartialNpy, atomic_write_bytes
from isoscope.data.limits import COUNTS
from isoscope.data.sharded import ParquetColumn
from isoscope.errors import InputError

SHARD_ROWS = 100_000
BLOCK_ROWS = 65_536  # rows per block of the one-machine engine's clusters and extras
EMBED_SHARD_ROWS = 8_192
TALLY_GROUPS = 4  # row groups of points.parquet (65,536 rows each) counted per labels task
ProgressFn = Callable[[int, int], None]


# ---------------------------------------------------------------- Ray itself


@contextlib.contextmanager
def ray_session(address: str = "local", *, num_cpus: int | None = None) -> Iterator[None]:
    """Ray for the stages: an initialised Ray is used as it is; else ``address`` (``local``: a private Ray here
    with ``num_cpus``, default all; ``auto`` / ``ray://...``: a cluster, this package shipped to its workers),
    shut down on the way out."""
    from isoscope.encode.shards import _ray_init

    started = _ray_init(address, num_cpus or os.cpu_count() or 1)
    try:
        yield
    finally:
        if started:
            import ray

            ray.shutdown()


def shards(n: int, shard_rows: int) -> list[tuple[int, int]]:
    """The row ranges [start, stop) of ``n`` rows in shards of ``shard_rows``."""
    return [(s, min(n, s + shard_rows)) for s in range(0, n, shard_rows)]


def row_blocks(n: int, *, engine: str, shard_rows: int) -> list[tuple[int, int]]:
    """The blocks of rows a stage maps over (``map_rows``): shards of ``shard_rows`` on the ray engine, blocks of
    ``BLOCK_ROWS`` in this process."""
    return shards(n, shard_rows if engine == "ray" else BLOCK_ROWS)


def remote_task(fn: Callable):
    """``fn`` as a Ray task of one CPU, retried up to three times (a killed worker's task runs again)."""
    import ray

    return ray.remote(num_cpus=1, max_retries=3)(fn)


def _on_rows(paths: list[str], start: int, stop: int, call: tuple[Callable, tuple]):
    fn, args = call
    return fn(*(np.asarray(load_npy(p)[start:stop]) for p in paths), *args)


def map_rows(fn: Callable, paths: list[Path], ranges: list[tuple[int, int]], *args, engine: str = "local") -> Iterator:
    """``fn(block of each .npy in paths, ..., *args)`` for every row range [start, stop), in order: one range at a
    time in this process, or as Ray tasks on the ray engine (at most twice the cluster's CPUs in flight; ``fn``
    and ``args`` put in the object store once, results fetched in order). ``fn``: a module-level function or a
    bound method of a picklable object (``ClusterMap.rows``)."""
    paths = [str(p) for p in paths]
    if engine != "ray":
        for start, stop in ranges:
            yield _on_rows(paths, start, stop, (fn, args))
        return
    import ray

    task, shared = remote_task(_on_rows), ray.put((fn, args))
    window = max(2, 2 * int(ray.cluster_resources().get("CPU", 1)))
    pending = [task.remote(paths, s, e, shared) for s, e in ranges[:window]]
    for i in range(len(ranges)):
        if window + i < len(ranges):
            pending.append(task.remote(paths, *ranges[window + i], shared))
        yield ray.get(pending[i])
        pending[i] = None  # its result may go from the object store


def load_npy(path: str | Path, mmap: bool = True) -> np.ndarray:
    """A .npy file Isoscope wrote, memory-mapped read-only (``mmap``) or read whole; never unpickled."""
    return np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)


def unit_rows(vectors: np.ndarray, start: int, stop: int) -> np.ndarray:
    """Rows [start, stop) of ``vectors`` as unit float32 rows (m, d)."""
    from isoscope.neighbours.index import as_unit_float32

    return as_unit_float32(np.asarray(vectors[start:stop]), "vectors")  # (m, d)


class Parts:
    """A stage's shard files in ``folder``, each proved by the folder's own ledger (size and SHA-256); the folder
    is emptied first when it was made from other ``sources`` (their SHA-256 in ``sources.json``)."""

    def __init__(self, folder: Path, sources: list[Path]) -> None:
        self.folder = folder
        want = json.dumps({p.name: file_digest(p) for p in sources}).encode()
        stamp = folder / "sources.json"
        if folder.exists() and (not stamp.exists() or stamp.read_bytes() != want):
            shutil.rmtree(folder)
        folder.mkdir(parents=True, exist_ok=True)
        if not stamp.exists():
            atomic_write_bytes(stamp, want)
        self.ledger = Ledger(folder)

    def path(self, name: str) -> Path:
        return self.folder / name

    def done(self, name: str, files: list[str], inputs: list[Path] = ()) -> bool:
        return self.ledger.fresh(name, list(inputs), [self.path(f) for f in files])

    def record(self, name: str, files: list[str], inputs: list[Path] = ()) -> None:
        self.ledger.record(name, list(inputs), [self.path(f) for f in files])

    def run(
        self,
        jobs: dict[str, tuple[list[str], Callable[[], object]]],
        inputs: list[Path] = (),
        done: Callable[[], None] | None = None,
    ) -> list[str]:
        """Run the jobs (name -> (files it writes, a function that starts its Ray task and returns the task's
        ObjectRef)) not yet done; record each as it finishes; ``done()`` after each job, found done or finished
        (a stage's progress shard by shard). Returns the names computed."""
        import ray

        todo = {name: job for name, job in jobs.items() if not self.done(name, job[0], inputs)}
        for _ in range(len(jobs) - len(todo)):
            if done is not None:
                done()
        pending = {start(): name for name, (_, start) in todo.items()}
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            name = pending.pop(ready[0])
            ray.get(ready[0])
            self.record(name, todo[name][0], inputs)
            if done is not None:
                done()
        return list(todo)


def concat_npy(parts: list[Path], final: Path) -> None:
    """The row-wise concatenation of the .npy ``parts`` (same dtype and columns) into ``final``, streamed (one
    part in memory at a time), written under a temporary name and renamed."""
    arrays = [load_npy(p) for p in parts]
    with NpyBlocks(final, (sum(len(a) for a in arrays), *arrays[0].shape[1:]), arrays[0].dtype) as out:
        for a in arrays:
            out.write(a)


def report(progress: ProgressFn | None, done: int, total: int) -> None:
    """``progress(done, total)`` when there is a callback."""
    if progress is not None:
        progress(done, total)


# ---------------------------------------------------------------- stages of one fan-out each


def _tally_rows(points_path: str, start: int, stop: int, label_paths: list[str]):
    """The word counts (``labels.TermTally``) of the texts of rows [start, stop) of ``points.parquet`` (whole row
    groups: ``ParquetColumn.rows`` reads only those) for every labeling (each a .npy (n,), memory-mapped)."""

    tally = TermTally([load_npy(p) for p in label_paths], start=start)
    tally.add(ParquetColumn(Path(points_path)).rows(start, stop))
    return tally


def _tally_bounds(points_path: Path, groups_per_task: int) -> list[int]:
    """The first row of each labels task over ``points_path`` (whole row groups, ``groups_per_task`` a task), and n."""
    import pyarrow.parquet as pq

    md = pq.ParquetFile(points_path).metadata
    starts = np.cumsum([0] + [md.row_group(g).num_rows for g in range(md.num_row_groups)])  # (groups + 1,)
    return starts[::groups_per_task].tolist() + ([] if md.num_row_groups % groups_per_task == 0 else [starts[-1]])


def ray_tally_parts(points_path: Path, *, groups_per_task: int = TALLY_GROUPS) -> int:
    """How many tasks ``ray_tally`` runs over ``points_path``."""
    return len(_tally_bounds(points_path, groups_per_task)) - 1


def ray_tally(
    points_path: Path,
    label_paths: list[Path],
    *,
    groups_per_task: int = TALLY_GROUPS,
    progress: ProgressFn | None = None,
):
    """``labels.TermTally`` of every labeling (each a .npy (n,) on a filesystem every node sees) over the texts of
    ``points_path``, counted in tasks of ``groups_per_task`` row groups and merged here in row order, a part at a
    time (``progress(done, total)`` after each): the driver holds clusters x vocabulary counts and the labelings'
    memory maps, never the texts."""
    import ray

    bounds = _tally_bounds(points_path, groups_per_task)
    paths = [str(p) for p in label_paths]
    task = remote_task(_tally_rows)
    refs = [task.remote(str(points_path), int(a), int(b), paths) for a, b in itertools.pairwise(bounds)]
    total = TermTally([load_npy(p) for p in paths])
    for i, ref in enumerate(refs):  # merged in row order, one part at a time
        total.merge(ray.get(ref))
        refs[i] = None  # its counts may go from the object store
        report(progress, i + 1, len(refs))
    return total


# ---------------------------------------------------------------- embedding


def embed_on_ray(texts, out: Path, *, encoder, pooling, config) -> str:
    """``out`` (vectors.npy, (n, d) float32) from ``texts`` embedded by ``isoscope.encode.shards.embed_with_ray``
    (the model loaded by ``encoder.name`` on ``encoder.device`` in each actor; ``config``: the AtlasConfig, its
    batch size and max length; shards next to ``out``, resumable, removed once copied). Returns the engine's name."""
    import ray

    from isoscope.encode.embed import EmbedConfig
    from isoscope.encode.shards import embed_with_ray, iter_shards

    if encoder.precision != "fp32":  # the actors run the model's own weights in PyTorch
        raise InputError(f"the ray engine embeds in fp32, not {encoder.precision}; drop --precision or embed first")

    shard_dir = out.parent / "embed.shards"
    run = embed_with_ray(
        texts,
        shard_dir,
        model=encoder.name,
        pooling=pooling,
        config=EmbedConfig(batch_size=config.batch_size, max_length=config.max_length),
        shard_rows=EMBED_SHARD_ROWS,
        num_actors=min(COUNTS["actors"].most, max(1, int(ray.available_resources().get("CPU", 1)) - 1)),
        device=encoder.device,
    )
    part = PartialNpy.create(out.with_name(out.name + ".partial"), (run.n, run.dim))
    try:
        for ids, vectors in iter_shards(shard_dir):
            part.write(int(ids[0]), vectors)
        part.finish(out)
    finally:
        part.close()
    shutil.rmtree(shard_dir, ignore_errors=True)
    return "Ray Data (torch)"


def ray_tiles(out: Path, spaces: list[str] | tuple[str, ...]) -> None:
    """The ``tiles`` stage as Ray tasks: one per space and level of the pyramid's top
    (``isoscope.atlas.pyramid.render_levels``, each tile written atomically into the folder, which every node
    reads), the deepest levels (the most tiles) started first."""
    import ray

    task = remote_task(render_levels)
    jobs = [(s, z) for z in range(TOP_LEVEL, -1, -1) for s in spaces]
    ray.get([task.remote(str(out), s, [z]) for s, z in jobs])
