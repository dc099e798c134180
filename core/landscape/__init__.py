"""Loss landscapes of fine-tuning from pre-trained weights versus training from scratch (Hao et al., 2019).

One concept per module:

- ``options``: the option tuples (no torch import, for the command line's parser).
- ``tasks``: labelled tasks (built-in STS-B / demo tasks, user files) and their splits.
- ``classifier``: encoder + mean pooling + linear head, and the fixed-batch ``Evaluator``.
- ``packed``: the padding-free BERT forward used by the evaluator.
- ``flat``: flat parameter vectors (layout, views for ``functional_call``, float64 dot products).
- ``placement``: where the work runs: the model and batches on the encoder's device, the flat vectors beside it
  (the CPU for MPS), seeds forked, the device's kind in the cache keys off the CPU.
- ``train``: fine-tuning runs with a resumable checkpoint per epoch.
- ``axes``: the task plane (Gram-Schmidt axes) and signed projection onto it.
- ``surface``: 1D curves and 2D grids of any function of theta.
- ``task_view``: the task-plane curve, surfaces and trajectories (for trajectories, not flatness).
- ``directions``: filter-normalised random directions (Li et al. 2018) and the sharpness along them.
- ``filter_view``: the filter-normalised curves, surface and sharpness around theta1, cached.
- ``curvature``: top Hessian eigenvalue (power iteration, Hessian-vector products) and grid curvature.
- ``rollback``: resetting groups of layers to theta0.
- ``learning``: per-epoch learning curves and the overfitting summary.
- ``seeds``: headline numbers as mean +- sd over seeds, and learning-curve bands.
- ``cached``: stages cached on disk under content keys.
- ``store`` / ``schema`` / ``records`` / ``results``: files written and read back as typed objects (JSON,
  npz, safetensors; never pickle); each JSON record is one ``schema.Record`` the writer and the reader
  share, read strictly (a schema change fails loudly). ``tables``: flat tables of the typed results.
- ``pipeline``: the experiment for both initialisations and every seed, cached and resumable.
- ``live``: ``LiveRun``, one frozen value for a small run (the dashboard's), and ``run_live``; ``costs``: what
  a live run will cost here (its evaluation points x the seconds of one).

The names below are imported lazily, so ``import isoscope.landscape.options`` does not import torch.
"""

from __future__ import annotations

from isoscope._lazy import lazy_exports

_EXPORTS = {
    "BUILTIN_TASKS": "isoscope.landscape.options",
    "LandscapeConfig": "isoscope.landscape.pipeline",
    "FilterConfig": "isoscope.landscape.filter_view",
    "run_landscape": "isoscope.landscape.pipeline",
    "LandscapeResults": "isoscope.landscape.results",
    "LiveRun": "isoscope.landscape.live",
    "ResultsSchemaError": "isoscope.landscape.schema",
    "list_results": "isoscope.landscape.results",
    "load_results": "isoscope.landscape.results",
    "Task": "isoscope.landscape.tasks",
    "TaskSplit": "isoscope.landscape.tasks",
    "load_task": "isoscope.landscape.tasks",
    "TrainConfig": "isoscope.landscape.train",
    "available_tasks": "isoscope.landscape.tasks",
    "run_live": "isoscope.landscape.live",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
