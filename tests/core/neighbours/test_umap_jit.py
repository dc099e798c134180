"""isoscope.neighbours.umap_jit: umap's kernels compile once per machine, not once per process."""

from __future__ import annotations

import json
import os
import subprocess
import sys

# one cheap umap kernel: compile it, call it, report numba's cache counters for it
PROBE = """
import json, sys
import numpy as np
from isoscope.neighbours.umap_jit import import_umap
umap = import_umap()
from umap.distances import euclidean
d = float(euclidean(np.array([3.0, 4.0], np.float32), np.zeros(2, np.float32)))
print(json.dumps({"d": d, "hits": sum(euclidean.stats.cache_hits.values())}))
"""


def _probe() -> dict:
    """The probe in a new process, with numba's cache where it is for the user (beside umap's own files, or the
    per-user folder): a private cache folder would make the process compile every cached pynndescent kernel too."""
    env = dict(os.environ, NUMBA_NUM_THREADS="1", OMP_NUM_THREADS="1")
    env.pop("NUMBA_CACHE_DIR", None)
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_layout_kernels_get_a_disk_cache():
    from numba.core.caching import NullCache

    from isoscope.neighbours.umap_jit import import_umap

    umap = import_umap()
    for kernel in (umap.umap_.smooth_knn_dist, umap.umap_.compute_membership_strengths, umap.umap_.fast_knn_indices):
        assert not isinstance(kernel._cache, NullCache), kernel
    assert import_umap() is umap  # idempotent


def test_a_second_process_loads_the_kernel_instead_of_compiling():
    first = _probe()  # compiled and written here (or already loaded, when an earlier run wrote it)
    assert first["d"] == 5.0 and first["hits"] in (0, 1)
    assert _probe() == {"d": 5.0, "hits": 1}  # loaded from disk (umap as it comes compiles it again: 0 hits)


def test_after_a_layout_its_kernels_are_ready_for_the_next():
    import numpy as np

    from isoscope.neighbours.projection import project
    from isoscope.neighbours.umap_jit import layout_kernels_ready

    x = np.random.default_rng(0).standard_normal((80, 8)).astype(np.float32)
    project(x, "umap", 2, seed=0)  # compiles, or loads numba's disk cache
    assert layout_kernels_ready()  # every name in LAYOUT_KERNELS is a kernel, compiled now
