"""umap-learn with numba's on-disk cache switched on for its compiled kernels, so only the first process pays the JIT.

umap = import_umap()    # the ``umap`` module; its kernels compiled once per machine, not once per process
layout_kernels_ready()  # True when a layout will pay no compile (compiled here, or in numba's disk cache)

umap-learn compiles its layout kernels with numba the first time a process runs a layout (``smooth_knn_dist``,
``compute_membership_strengths``, the epoch loop): about 25-50 s of one core on this 2-core machine, before a
150-point map that then takes 0.2 s. pynndescent marks its kernels ``cache=True``; umap-learn 0.5 marks one of
them. ``import_umap`` turns numba's cache on (``Dispatcher.enable_caching``, what ``cache=True`` does) for every
umap kernel that is not compiled yet and has no cache, so the next process loads the machine code numba wrote
(beside umap's own files in ``__pycache__``, or numba's per-user cache folder where those are read-only, as for
pynndescent's) instead of compiling it again. Numba keys each entry by the kernel's source file and signature and
the CPU, and recompiles when either changed. Kernels that umap compiles eagerly at import (explicit signatures,
``umap.utils``) are compiled before this can run; they take a few seconds.
"""

from __future__ import annotations

import os
import sys
from types import ModuleType

CACHED_PACKAGES = ("umap",)
LAYOUT_KERNELS = (  # the cacheable kernels a layout compiles (umap-learn 0.5; its utils compile at import)
    "umap.umap_.smooth_knn_dist",
    "umap.umap_.compute_membership_strengths",
    "umap.layouts._nb_optimize_layout_euclidean_single_epoch",
    "umap.layouts.rdist",
)


def _uncached_dispatchers(module: ModuleType) -> list:
    from numba.core.caching import NullCache
    from numba.core.registry import CPUDispatcher

    return [
        obj
        for obj in vars(module).values()
        if isinstance(obj, CPUDispatcher) and isinstance(obj._cache, NullCache) and not obj.signatures
    ]


def enable_disk_cache(prefixes: tuple[str, ...] = CACHED_PACKAGES) -> int:
    """Switch numba's on-disk cache on for the not yet compiled kernels of the loaded modules named ``prefixes``
    (and their submodules); returns how many kernels it switched on."""
    modules = [m for name, m in list(sys.modules.items()) if m is not None and name.split(".")[0] in prefixes]
    count = 0
    for module in modules:
        for dispatcher in _uncached_dispatchers(module):
            dispatcher.enable_caching()
            count += 1
    return count


def import_umap() -> ModuleType:
    """``import umap`` with its kernels cached on disk (``enable_disk_cache``; idempotent)."""
    import umap
    import umap.umap_  # the kernels live in its submodules

    enable_disk_cache()
    return umap


def import_pynndescent() -> ModuleType:
    """``import pynndescent`` with the kernels it does not mark ``cache=True`` itself (its NN-descent loop among
    them: about 40 s of compiling before a first graph) cached on disk too; idempotent."""
    import pynndescent
    import pynndescent.pynndescent_  # the NN-descent kernels live in its submodules

    enable_disk_cache(("pynndescent",))
    return pynndescent


def layout_kernels_ready() -> bool:
    """Whether the next UMAP layout pays no compile: each of ``LAYOUT_KERNELS`` is compiled in this process or
    has an index in numba's disk cache (an index for another CPU or umap version is recompiled: rare)."""
    import_umap()
    for name in LAYOUT_KERNELS:
        module, _, attr = name.rpartition(".")
        dispatcher = getattr(sys.modules.get(module), attr, None)
        if dispatcher is None:
            return False
        if dispatcher.signatures:
            continue
        cache_file = getattr(getattr(dispatcher, "_cache", None), "_cache_file", None)
        if cache_file is None or not os.path.exists(cache_file._index_path):
            return False
    return True
