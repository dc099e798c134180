"""What a UMAP layout costs here: point-epochs (points x the epochs umap-learn runs) x the seconds per
point-epoch of the layouts already timed in this process (``record_umap``), or of a 1,000-point probe
(``measure_umap``) when numba's disk cache holds the kernels (``isoscope.neighbours.umap_jit.layout_kernels_ready``);
before the first layout on a machine there is no rate: the probe would pay the one-time compile (a minute)
itself.

The value is ``isoscope.costs.Cost``. Light to import: numpy and umap are imported inside ``measure_umap``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from isoscope.costs import Cost

UMAP_PROBE_ROWS = 1_000


@dataclass(frozen=True)
class UmapRate:
    """UMAP's measured cost here: seconds per point and epoch once compiled, and what the first call took on top."""

    seconds_per_point_epoch: float
    compile_seconds: float
    setup_seconds: float = 0.0  # what every layout costs whatever its size (the fuzzy graph, the spectral start)


def umap_epochs(n_points: int) -> int:
    """The epochs umap-learn runs by default: 500 up to 10,000 points, 200 above."""
    return 500 if n_points <= 10_000 else 200


_UMAP_SEEN: dict[str, tuple[int, float]] = {}  # "first" and "latest" (point-epochs, seconds) of layouts timed here


def record_umap(n_points: int, seconds: float, epochs: int | None = None) -> None:
    """Remember a UMAP layout of ``n_points`` points (``epochs``: default ``umap_epochs``) timed in this process."""
    work = n_points * (epochs or umap_epochs(n_points))
    _UMAP_SEEN.setdefault("first", (work, seconds))
    _UMAP_SEEN["latest"] = (work, seconds)


def seen_umap_rate() -> UmapRate | None:
    """The rate of the layouts timed in this process (``record_umap``): seconds per point-epoch of the latest one
    after the first (the first alone: its rate, any compile included, an upper bound); None before any."""
    if "first" not in _UMAP_SEEN:
        return None
    (w1, s1), (w2, s2) = _UMAP_SEEN["first"], _UMAP_SEEN["latest"]
    if len(_UMAP_SEEN) == 2 and (w1, s1) == (w2, s2):
        return UmapRate(s1 / max(w1, 1), 0.0)
    rate = s2 / max(w2, 1)
    return UmapRate(rate, max(s1 - w1 * rate, 0.0))


def measure_umap(dim: int = 32, repeat: bool = True, *, setup: bool = False) -> UmapRate:
    """Time UMAP (``isoscope.neighbours.projection.project``) on ``UMAP_PROBE_ROWS`` seeded random points: the
    first call includes numba's compile when its disk cache lacks the kernels, the second (``repeat``) is the
    rate; ``repeat=False`` times one call and counts it all as the rate (for kernels known to be cached).
    ``setup``: a layout of a quarter of the points is timed too, and the two times split into a cost per layout
    and one per point-epoch (issue 50: a 300-point layout took 3-5 s, a third of the probe's, not 15% of it)."""
    import numpy as np

    from isoscope.neighbours.projection import project

    x = np.random.default_rng(0).standard_normal((UMAP_PROBE_ROWS, dim)).astype(np.float32)
    work = UMAP_PROBE_ROWS * umap_epochs(UMAP_PROBE_ROWS)
    start = time.perf_counter()
    project(x, "umap", 2, seed=0)
    first = time.perf_counter() - start
    if not repeat:
        second, compile_seconds = max(first, 1e-6), 0.0
    else:
        start = time.perf_counter()
        project(x, "umap", 2, seed=0)
        second = max(time.perf_counter() - start, 1e-6)
        compile_seconds = max(first - second, 0.0)
    if not setup:
        return UmapRate(second / work, compile_seconds)
    small = UMAP_PROBE_ROWS // 4
    start = time.perf_counter()
    project(x[:small], "umap", 2, seed=0)
    quarter = time.perf_counter() - start
    per = (second - quarter) / (work - small * umap_epochs(small))  # the line through the two timings
    if not 0 < per <= second / work:  # noise: the smaller layout took as long, or longer; all of it per point
        return UmapRate(second / work, compile_seconds)
    return UmapRate(per, compile_seconds, second - per * work)


def umap_cost(n_points: int, rate: UmapRate, *, compiled: bool = True, epochs: int | None = None) -> Cost:
    """A UMAP layout of ``n_points`` points for ``epochs`` (default ``umap_epochs``): the measured rate times the
    point-epochs, plus the layout's setup (``UmapRate.setup_seconds``) and the compile when not done yet."""
    work = n_points * (epochs or umap_epochs(n_points))
    fixed = rate.setup_seconds + (0.0 if compiled else rate.compile_seconds)
    return Cost(work * rate.seconds_per_point_epoch + fixed)
