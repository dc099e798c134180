"""Keep torch's CPU thread count across calls into libraries that reset OpenMP's (numba, under UMAP).

with torch_threads_kept():
    xy = umap.UMAP(...).fit_transform(X)

numba's OpenMP threading layer calls ``omp_set_num_threads(NUMBA_NUM_THREADS)`` (the number of cores) the
first time a parallel function runs in a process; torch reads its intra-op thread count from the same
OpenMP runtime, so a process limited to one thread with ``OMP_NUM_THREADS=1`` silently got every core back
after its first UMAP layout (two such processes on two cores then slowed each other's torch work about 10x).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def torch_threads_kept() -> Iterator[None]:
    """Restore ``torch.get_num_threads()`` on exit if the block changed it (no-op when torch is not loaded)."""
    torch = sys.modules.get("torch")
    before = torch.get_num_threads() if torch is not None else None
    try:
        yield
    finally:
        if torch is not None and torch.get_num_threads() != before:
            torch.set_num_threads(before)
