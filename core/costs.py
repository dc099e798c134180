"""What a long run will cost before it starts: the value every estimate is, time and disk on this machine.

``Cost(seconds, disk_bytes)`` adds up and says itself in words: ``Cost(130, 40e6).describe()`` is
"about 2 min, 40 MB on disk". A result that is cached costs ``FREE``; ``Cost.long`` says whether it is worth
telling the user before the run (``SHOW_SECONDS``).

Nothing in the estimates is a constant that only holds on one computer: each is a count of work, taken from
the run's own settings and data, times a rate measured here, and each cost model lives beside the work it
estimates:

- embedding and the int8 build: ``isoscope.encode.costs`` (tokens / the encoder's throughput on a short probe;
  the int8 build of one- and two-layer random copies, extrapolated to the model's layers);
- a flow: ``isoscope.calibrate.costs`` (optimiser steps x seconds per step of the same architecture);
- UMAP: ``isoscope.neighbours.costs`` (point-epochs x seconds per point-epoch, of the layouts timed in this
  process or of a probe);
- an atlas's kNN graph and layout: ``isoscope.atlas.costs`` (n^2 d exact or n log2 n NN-descent, timed on
  probe vectors; the landmark layout);
- a landscape live run: ``isoscope.landscape.costs`` (evaluation points x the seconds of one point);
- the isotropy metrics of a space: ``isoscope.geometry.costs`` (uniformity's pairs and the passes over the rows,
  each timed on a probe of the same dimension).

Light to import: nothing but the standard library.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

SHOW_SECONDS = 20.0  # a run this long or longer is announced before it starts


@dataclass(frozen=True)
class Cost:
    """What a run will take: wall-clock seconds on this machine and bytes it leaves on disk."""

    seconds: float = 0.0
    disk_bytes: int = 0

    def __add__(self, other: Cost) -> Cost:
        return Cost(self.seconds + other.seconds, self.disk_bytes + other.disk_bytes)

    @property
    def long(self) -> bool:
        """Worth saying before the run starts (``SHOW_SECONDS`` or more)."""
        return self.seconds >= SHOW_SECONDS

    def describe(self) -> str:
        """``about 2 min, 40 MB on disk`` (the disk part only when the run writes something worth naming)."""
        text = f"about {duration_text(self.seconds)}"
        if self.disk_bytes >= 2**20:
            text += f", {size_text(self.disk_bytes)} on disk"
        return text


FREE = Cost()


def total(costs: Sequence[Cost]) -> Cost:
    """The sum of ``costs`` (``FREE`` for none)."""
    out = FREE
    for c in costs:
        out = out + c
    return out


def duration_text(seconds: float) -> str:
    """``5 s``, ``40 s``, ``2 min``, ``1 h 10 min``: rounded to what an estimate can promise."""
    s = max(0.0, float(seconds))
    if s < 10:
        return f"{max(1, round(s))} s"
    if s < 90:
        return f"{5 * round(s / 5)} s"
    if s < 3600:
        return f"{round(s / 60)} min"
    h, m = divmod(round(s / 60), 60)
    return f"{h} h" + (f" {m} min" if m else "")


def size_text(n_bytes: float) -> str:
    """``800 KB``, ``40 MB``, ``1.1 GB`` (binary units, as the disk usage tools show them)."""
    b = max(0.0, float(n_bytes))
    if b < 2**20:
        return f"{max(1, round(b / 2**10))} KB"
    if b < 2**30:
        mb = b / 2**20
        return f"{mb:.1f} MB" if mb < 10 else f"{round(mb):,} MB"
    return f"{b / 2**30:.1f} GB"
