"""Loss landscapes of fine-tuning from pre-trained weights versus training from scratch (Hao et al., 2019).

One concept per module:

- ``tasks``: labelled tasks (built-in STS-B / demo tasks, user files) and their splits.
- ``classifier``: encoder + mean pooling + linear head, and the fixed-batch ``Evaluator``.
- ``flat``: flat parameter vectors (layout, views for ``functional_call``, float64 dot products).
- ``train``: fine-tuning runs with a resumable checkpoint per epoch.
- ``axes``: the plane (Gram-Schmidt axes) and signed projection onto it.
- ``surface``: 1D curves and 2D grids of any function of theta.
- ``curvature``: top Hessian eigenvalue (power iteration, Hessian-vector products) and grid curvature.
- ``rollback``: resetting groups of layers to theta0.
- ``store`` / ``results``: files written and read back (JSON, npz, safetensors; never pickle).
- ``pipeline``: the experiment for both initialisations, cached and resumable.
"""

from __future__ import annotations

from core.landscape.pipeline import LandscapeConfig, run_landscape
from core.landscape.results import LandscapeResults, list_results, load_results
from core.landscape.tasks import BUILTIN_TASKS, Task, TaskSplit, load_task
from core.landscape.train import TrainConfig

__all__ = [
    "BUILTIN_TASKS",
    "LandscapeConfig",
    "LandscapeResults",
    "Task",
    "TaskSplit",
    "TrainConfig",
    "list_results",
    "load_results",
    "load_task",
    "run_landscape",
]
