"""Pay a fresh venv's one-time compiles while pip is still installing the dev tools (``make test`` runs this in
the background beside those installs, on the core pip leaves idle).

- Python bytecode: the pip installs run with ``--no-compile`` (byte-compiling every installed file took two
  CPU-minutes, most of it for modules nothing imports), so the first process to import torch, transformers,
  Streamlit, plotly, pandas or scikit-learn compiles what it imports; here that happens once, before the test
  workers and the servers they start all compile the same modules at the same moment.
- numba: the first UMAP layout on a machine compiles umap's kernels (about 45 s of one core); with the disk
  cache ``isoscope.neighbours.umap_jit`` switches on, later processes load them.

Nothing here is needed for correctness: a failure only means the first tests pay these compiles themselves
(the Makefile says so and carries on). Prints what it did and how long each part took.
"""

from __future__ import annotations

import importlib
import time

STACK = (  # what the app, the CLI and the tests import, heaviest first
    "torch",
    "transformers",
    "streamlit",
    "plotly.express",
    "plotly.graph_objects",
    "pandas",
    "pyarrow.parquet",
    "sklearn.decomposition",
    "scipy.stats",
    "onnxruntime",
    "faiss",
    "safetensors.torch",
    "isoscope.dashboard.figures.atlas",
    "isoscope.space",
    "isoscope.encode.models",
    "isoscope.calibrate",
    "isoscope.evaluate.sts",
)


def warm_imports() -> float:
    start = time.perf_counter()
    for name in STACK:
        importlib.import_module(name)
    return time.perf_counter() - start


def warm_umap() -> float:
    import numpy as np

    from isoscope.neighbours.projection import project

    start = time.perf_counter()
    x = np.random.default_rng(0).standard_normal((200, 8)).astype(np.float32)  # (200, 8)
    project(x, "umap", 2, seed=0)  # the layout kernels, compiled into numba's disk cache
    return time.perf_counter() - start


def main() -> int:
    print(f"imports: {warm_imports():.1f} s", flush=True)
    print(f"umap kernels: {warm_umap():.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
