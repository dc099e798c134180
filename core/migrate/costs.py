"""What a migration run will cost here, before it starts: embedding both sides (``isoscope.encode.costs``: tokens
over each model's measured throughput; free when cached), and the residual MLP's training (pair-epochs x the
seconds of one, measured by training the same architecture for 2 and 6 epochs on random pairs of the same widths).
The linear adapters, the searches and the curve take seconds: not worth saying. The MLP's figure is an upper bound
(every epoch it may train; early stopping usually ends it sooner).

The value is ``isoscope.costs.Cost``. Light to import: numpy and torch are imported inside ``measure_mlp_rate``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from isoscope.costs import FREE, Cost
from isoscope.migrate.options import HOLDOUT

if TYPE_CHECKING:
    from isoscope.migrate.config import MigrationConfig
    from isoscope.migrate.sides import SideSource

PROBE_PAIRS = 512
PROBE_EPOCHS = (2, 6)  # two short fits: the difference is epochs of work, the rest the fit's setup


@dataclass(frozen=True)
class MlpRate:
    """The residual MLP's speed here: ``pair_epoch`` seconds per pair and epoch, and ``setup`` seconds of the work
    around the epochs (the ridge map under it, the split)."""

    pair_epoch: float
    setup: float = 0.0


def measure_mlp_rate(d_in: int, d_out: int, hidden: int = 256) -> MlpRate:
    """``MLPAdapter(hidden)`` fitted here on ``PROBE_PAIRS`` seeded random pairs for 2 and for 6 epochs (patience
    longer than either): the extra epochs' seconds over their pair-epochs, and what the shorter fit spent besides."""
    import time

    import numpy as np

    from isoscope.migrate.mlp import MLPAdapter

    rng = np.random.default_rng(0)
    X, Y = rng.standard_normal((PROBE_PAIRS, d_in)), rng.standard_normal((PROBE_PAIRS, d_out))
    MLPAdapter(hidden, epochs=1).fit(X[:64], Y[:64])  # warm-up: torch's import and first kernels are no epoch's
    seconds = []
    for epochs in PROBE_EPOCHS:
        start = time.perf_counter()
        MLPAdapter(hidden, epochs=epochs, patience=epochs + 1).fit(X, Y)
        seconds.append(time.perf_counter() - start)
    trained = PROBE_PAIRS * (1 - HOLDOUT)
    pair_epoch = max(seconds[1] - seconds[0], 1e-6) / ((PROBE_EPOCHS[1] - PROBE_EPOCHS[0]) * trained)
    return MlpRate(pair_epoch, max(seconds[0] - PROBE_EPOCHS[0] * trained * pair_epoch, 0.0))


def mlp_cost(n_pairs: int, rate: MlpRate, *, epochs: int = 200, directions: int = 2) -> Cost:
    """At most ``epochs`` passes over ``n_pairs`` pairs in each direction, plus each fit's setup (early stopping
    usually ends sooner: patience 10 epochs without a better held-out cosine)."""
    return Cost(directions * (rate.setup + epochs * n_pairs * (1 - HOLDOUT) * rate.pair_epoch))


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
    from isoscope.migrate.methods import make_adapter
    from isoscope.migrate.mlp import MIN_MLP_PAIRS
    from isoscope.migrate.options import DEFAULT_ADAPTERS

    total, parts = FREE, []
    for label, side in (("old", old), ("new", new)):
        cost = side.cost(texts) if side.cost is not None else FREE
        if cost.seconds > 0:
            parts.append(f"embedding {len(texts):,} texts with the {label} model ({side.name}): {cost.describe()}")
        total = total + cost
    methods = config.methods if config.methods is not None else DEFAULT_ADAPTERS
    mlps = [make_adapter(m) for m in methods if m.split(":")[0] == "mlp"]
    if mlps and n_pairs >= MIN_MLP_PAIRS and old.dims and new.dims:
        cost = FREE
        for mlp in mlps:
            rate = measure_mlp_rate(old.dims, new.dims, mlp.hidden)
            cost = cost + mlp_cost(n_pairs, rate, epochs=mlp.epochs, directions=len(config.directions))
        parts.append(
            f"the residual MLP on {n_pairs:,} pairs, {len(config.directions)} direction(s): at most "
            f"{cost.describe()} (early stopping usually ends sooner)"
        )
        total = total + cost
    return total, parts
