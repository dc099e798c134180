"""Pay a fresh venv's one-time compiles while pip is still installing the dev tools (``make test`` runs this in
the background beside those installs, whose pip leaves most of the CPU idle, then ``--bytecode`` once more for
what those installs added).

- Python bytecode: the pip installs run with ``--no-compile`` (byte-compiling every installed file took two
  CPU-minutes in pip's one process), and where ``PYTHONDONTWRITEBYTECODE`` is set (as on this project's machines)
  Python never writes the bytecode it compiles on import: every process compiled each module it imported from
  source again (``from transformers import PreTrainedModel``: 12 s of ``compile`` in each test worker, server and
  command). ``compileall`` writes it once, here.
- numba: the first UMAP layout on a machine compiles umap's kernels (about 45 s of one core), the first atlas
  graph above 20,000 rows pynndescent's (about 60 s, of which 40 s can be cached; its NN-descent loop, 20 s,
  compiles in every process); with the disk cache ``isoscope.neighbours.umap_jit`` switches on, later processes
  load them.

Nothing here is needed for correctness: a failure only means the tests pay these compiles themselves (the
Makefile says so and carries on). Prints what it did and how long each part took.
"""

from __future__ import annotations

import argparse
import compileall
import sysconfig
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SKIPPED = ("pip", "setuptools", "ray", "debugpy")  # never imported by the app or the gate's tests
OWN = ("core", "dashboard")  # the package's own folders (installed editable)


def bytecode_folders() -> list[Path]:
    """Every package folder of the venv's site-packages but ``SKIPPED``, and the package's own folders."""
    site = Path(sysconfig.get_paths()["purelib"])
    skip = {*SKIPPED, "__pycache__"}
    folders = [p for p in sorted(site.iterdir()) if p.is_dir() and p.name not in skip and "." not in p.name]
    return folders + [ROOT / name for name in OWN]


def write_bytecode(workers: int) -> float:
    """``compileall`` over ``bytecode_folders`` with ``workers`` processes (0: one per core); files whose
    bytecode is current are skipped."""
    start = time.perf_counter()
    compileall.compile_dir(sysconfig.get_paths()["purelib"], maxlevels=0, quiet=2)  # single-file modules
    for folder in bytecode_folders():
        compileall.compile_dir(folder, quiet=2, workers=workers)
    return time.perf_counter() - start


def warm_umap() -> float:
    import numpy as np

    from isoscope.atlas.graph import knn_graph_chunked
    from isoscope.neighbours.projection import project

    start = time.perf_counter()
    x = np.random.default_rng(0).standard_normal((200, 8)).astype(np.float32)  # (200, 8)
    project(x, "umap", 2, seed=0)  # the layout kernels, compiled into numba's disk cache
    knn_graph_chunked(x, 16, exact_max_rows=0)  # the atlas's NN-descent graph kernels, likewise
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bytecode", action="store_true", help="only the bytecode, on every core (the last pass)")
    args = parser.parse_args(argv)
    if args.bytecode:
        print(f"bytecode (last pass, every core): {write_bytecode(0):.1f} s", flush=True)
        return 0
    print(f"bytecode: {write_bytecode(0):.1f} s", flush=True)
    print(f"umap and nndescent kernels: {warm_umap():.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
