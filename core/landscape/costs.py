"""What a landscape live run costs here: each kind of work the run does, counted (``landscape_work``: evaluation
points, training steps, Hessian-vector products, parameter vectors written) times its own seconds, each timed on
this machine on the run's own classifier, data and batch (``isoscope.landscape.live.measure_rates`` ->
``LandscapeRates``). Issue 41: the old model timed one point and priced a training step and a Hessian-vector
product as fixed multiples of it; a step (batch 16, padded, a backward and AdamW over every weight) and a
double backward on the unfused attention kernel do not scale like a packed forward, and the estimate said about
55 s for a run of 420 s.

The value is ``isoscope.costs.Cost``. Light to import: no torch.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from isoscope.costs import Cost

if TYPE_CHECKING:
    from isoscope.landscape.live import LiveRun


@dataclass(frozen=True)
class LandscapeRates:
    """Seconds of each kind of work of a live run, measured here (``isoscope.landscape.live.measure_rates``)."""

    point: float  # one evaluation point: the 2 * eval_size fixed examples at one parameter vector
    step: float  # one training step: a batch of BATCH_SIZE, forward, backward, clipping, AdamW
    hvp: float  # one Hessian-vector product on min(HESSIAN_SIZE, eval_size) examples
    write: float  # one parameter vector written to disk (a checkpoint, an optimizer moment)
    warmup: float = 0.0  # once per run: the first step's extra time over a warm one (allocations)

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


def landscape_work(run: LiveRun, num_layers: int) -> dict[str, float]:
    """The work of ``run`` over both initialisations, in the units ``LandscapeRates`` times: evaluation points
    (every point it evaluates, and the learning curve's scaled by its examples), training steps, Hessian-vector
    products and parameter vectors written."""
    from isoscope.landscape.options import INITS

    per_point = 2 * run.eval_size  # the fixed training and held-out examples of every point
    trajectory = 2 * (run.epochs + 1) - 3  # both runs' checkpoints, minus theta0, theta1, theta2 (known)
    rollback = num_layers + 3  # one group per layer, the embeddings, the whole encoder, none
    filter_points = run.FILTER_DIRECTIONS * 5 + run.grid**2  # 5 points per direction curve, one surface
    points = run.points_1d + run.grid**2 + trajectory + rollback + filter_points
    learning = (run.epochs + 1) * (run.eval_size + run.LEARNING_HELDOUT) / per_point
    inits = len(INITS)
    return {
        "point": inits * (points + learning),
        "step": inits * 2 * run.epochs * math.ceil(run.n_train / run.BATCH_SIZE),  # per init: both tasks
        "hvp": inits * run.hessian_iters,
        "write": run.RUNS * ((run.epochs + 1) + 2 * run.epochs),  # every epoch's weights; AdamW's two moments
        "warmup": run.RUNS,
    }


def landscape_cost(run: LiveRun, *, n_params: int, num_layers: int, rates: LandscapeRates) -> Cost:
    """A live loss-surface run: each kind of its work (``landscape_work``) times its seconds measured here
    (``rates``); the disk is ``run.disk_mb`` (every epoch's parameters of every run)."""
    work = landscape_work(run, num_layers)
    seconds = sum(count * getattr(rates, kind) for kind, count in work.items())
    return Cost(seconds, int(run.disk_mb(n_params) * 2**20))
