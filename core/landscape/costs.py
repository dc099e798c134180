"""What a landscape live run costs here: evaluation points (every point, training step and Hessian-vector
product the recipe makes, in units of one point) x the seconds of one point, timed on the run's own classifier
and evaluation set (``isoscope.landscape.live.seconds_per_point``); a training step costs ``STEP_FACTOR``
forwards (the backward multiplies by each weight matrix twice: for the input and for the gradient), a
Hessian-vector product ``HVP_FACTOR`` steps (a double backward, on the unfused attention kernel).

The value is ``isoscope.costs.Cost``. Light to import: no torch.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from isoscope.costs import Cost

if TYPE_CHECKING:
    from isoscope.landscape.live import LiveRun

STEP_FACTOR = 3.0  # a training step / a forward pass: the backward multiplies by each weight twice
HVP_FACTOR = 4.0  # a Hessian-vector product (double backward, attention on the unfused kernel) / a training step


def landscape_points(run: LiveRun, num_layers: int) -> dict[str, float]:
    """The work of ``run`` in evaluation points (one point: the ``2 * eval_size`` fixed examples evaluated at one
    parameter vector, what ``seconds_per_point`` times), over both initialisations: the points it evaluates, the
    learning curve's (scaled by its examples), the training steps (a forward and a backward, ``STEP_FACTOR``
    forwards) and the Hessian-vector products (``HVP_FACTOR`` steps), both scaled by their batch."""
    from isoscope.landscape.options import INITS

    per_point = 2 * run.eval_size  # the fixed training and held-out examples of every point
    trajectory = 2 * (run.epochs + 1) - 3  # both runs' checkpoints, minus theta0, theta1, theta2 (known)
    rollback = num_layers + 3  # one group per layer, the embeddings, the whole encoder, none
    filter_points = run.FILTER_DIRECTIONS * 5 + run.grid**2  # 5 points per direction curve, one surface
    points = run.points_1d + run.grid**2 + trajectory + rollback + filter_points
    learning = (run.epochs + 1) * (run.eval_size + run.LEARNING_HELDOUT) / per_point
    steps = 2 * run.epochs * math.ceil(run.n_train / run.BATCH_SIZE)  # per init: both tasks
    step = STEP_FACTOR * run.BATCH_SIZE / per_point
    hvp = HVP_FACTOR * STEP_FACTOR * min(run.HESSIAN_SIZE, run.eval_size) / per_point
    inits = len(INITS)
    return {
        "evaluate": inits * (points + learning),
        "train": inits * steps * step,
        "hessian": inits * run.hessian_iters * hvp,
    }


def landscape_cost(run: LiveRun, *, n_params: int, num_layers: int, point_seconds: float) -> Cost:
    """A live loss-surface run: its work in points (``landscape_points``) x the seconds of one point measured
    on this machine (``isoscope.landscape.live.seconds_per_point``); the disk is ``run.disk_mb`` (every epoch's
    parameters of every run)."""
    work = landscape_points(run, num_layers)
    return Cost(sum(work.values()) * point_seconds, int(run.disk_mb(n_params) * 2**20))
