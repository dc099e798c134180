"""What a migration run will cost here, before it starts: embedding both sides (``isoscope.encode.costs``: tokens
over each model's measured throughput; free when cached), and the residual MLP's training (pair-epochs x the
seconds of one, measured by training the same architecture for two epochs on random pairs of the same widths).
The linear adapters, the searches and the curve take seconds: not worth saying.

The value is ``isoscope.costs.Cost``. Light to import: numpy and torch are imported inside ``measure_mlp_rate``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from isoscope.costs import FREE, Cost

if TYPE_CHECKING:
    from isoscope.migrate.config import MigrationConfig
    from isoscope.migrate.sides import SideSource

PROBE_PAIRS = 256
PROBE_EPOCHS = 2


def measure_mlp_rate(d_in: int, d_out: int, hidden: int = 256) -> float:
    """Seconds per (pair x epoch) of ``MLPAdapter(hidden)`` fitted here on ``PROBE_PAIRS`` seeded random pairs."""
    import time

    import numpy as np

    from isoscope.migrate.mlp import MLPAdapter

    rng = np.random.default_rng(0)
    X, Y = rng.standard_normal((PROBE_PAIRS, d_in)), rng.standard_normal((PROBE_PAIRS, d_out))
    start = time.perf_counter()
    MLPAdapter(hidden, epochs=PROBE_EPOCHS, patience=PROBE_EPOCHS).fit(X, Y)
    return (time.perf_counter() - start) / (PROBE_PAIRS * PROBE_EPOCHS)


def mlp_cost(n_pairs: int, rate: float, *, epochs: int = 200, directions: int = 2) -> Cost:
    """At most ``epochs`` passes over ``n_pairs`` pairs in each direction (early stopping usually ends sooner)."""
    return Cost(directions * epochs * n_pairs * rate)


def migration_cost(
    old: SideSource,
    new: SideSource,
    *,
    texts: Sequence[str],
    config: MigrationConfig,
    n_pairs: int,
) -> tuple[Cost, list[str]]:
    """(the whole run's cost, its parts in words): embedding ``texts`` on each side that can say what it costs,
    and the MLP when the run fits it (its widths from the sides' dimensions, when they are known)."""
    from isoscope.migrate.mlp import MIN_MLP_PAIRS
    from isoscope.migrate.options import DEFAULT_ADAPTERS

    total, parts = FREE, []
    for label, side in (("old", old), ("new", new)):
        cost = side.cost(texts) if side.cost is not None else FREE
        if cost.seconds > 0:
            parts.append(f"embedding {len(texts):,} texts with the {label} model ({side.name}): {cost.describe()}")
        total = total + cost
    methods = config.methods if config.methods is not None else DEFAULT_ADAPTERS
    mlps = [m for m in methods if m.split(":")[0] == "mlp"]
    if mlps and n_pairs >= MIN_MLP_PAIRS and old.dims and new.dims:
        rate = measure_mlp_rate(old.dims, new.dims)
        cost = mlp_cost(n_pairs, rate, directions=len(config.directions))
        cost = Cost(cost.seconds * len(mlps))
        parts.append(
            f"the residual MLP on {n_pairs:,} pairs, {len(config.directions)} direction(s): at most "
            f"{cost.describe()} (early stopping usually ends sooner)"
        )
        total = total + cost
    return total, parts
