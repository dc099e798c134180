"""isoscope.threads: a UMAP layout leaves torch's thread count where the caller put it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT

# A fresh process: numba sets OpenMP's thread count only the first time its threading layer starts.
# torch at 1 thread (OMP_NUM_THREADS=1), NUMBA_NUM_THREADS=3: without the guard torch ends at 3 anywhere.
SCRIPT = """
import numpy as np, torch
before = torch.get_num_threads()  # 1, from OMP_NUM_THREADS
X = np.random.default_rng(0).standard_normal((200, 8)).astype(np.float32)
if {which!r} == "atlas":
    from isoscope.atlas.graph import knn_graph_chunked
    from isoscope.atlas.layout import layout
    xy = layout(X, "umap", knn=knn_graph_chunked(X, 10), seed=0)
else:
    from isoscope.neighbours.projection import project
    xy = project(X, "umap", seed=0)
assert xy.shape == (200, 2), xy.shape
print(before, torch.get_num_threads())
"""


@pytest.mark.parametrize("which", ["atlas", "projection"])
def test_umap_keeps_torch_threads(which):
    env = dict(os.environ, NUMBA_NUM_THREADS="3", OMP_NUM_THREADS="1")
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT.format(which=which)], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split()[-2:] == ["1", "1"]


def test_threads_kept_is_a_no_op_without_a_change():
    import torch

    from isoscope.threads import torch_threads_kept

    before = torch.get_num_threads()
    with torch_threads_kept():
        pass
    assert torch.get_num_threads() == before
    with torch_threads_kept():
        torch.set_num_threads(before + 1)
    assert torch.get_num_threads() == before
