"""Model migration: move a corpus to a new embedding model without re-embedding it, and measure what is kept.

``isoscope.migrate(old, new, ...)`` is the notebook API (``api.migrate``): this package is callable, so the name is
both the function and the package of its modules (``import isoscope.migrate.adapters`` works as usual).

One concept per module:

- ``adapters``: the maps fitted on pairs of spaces (``Adapter``, a ``FittedMap`` family): ``ProcrustesAdapter``, ``RidgeAdapter``
  (towards zero or the rotation), ``LowRankAdapter``; ``mlp``: ``MLPAdapter``; ``local``: ``LocalAdapter`` (a map per
  cluster, where it helps). Their method strings (``ridge:procrustes``, ``lowrank:64``) are read by
  ``isoscope.migrate.methods.make_adapter``.
- ``options`` (light: the command line's help reads it): the directions, the defaults; ``config``:
  ``MigrationConfig``, what a run fits and measures.
- ``spaces``: the same texts in both spaces, checked (``SpacePair``), the seeded fit sample, one adapter fitted in a
  direction; ``measure``: kept shares with bootstrap intervals, the label-free shared top 10, cosines, timings;
  ``run``: ``evaluate_migration`` from vectors; ``recommend``: the label-free choice and the labelled verdict;
  ``curve``: kept against fit pairs; ``results``: ``MigrationResult``; ``figures``: the curve as a plotly figure;
  ``where``: where an adapter fails (the per-text error as a map's colour, per cluster in a table).
- ``sides``: where each side's vectors come from (a model, an endpoint, vectors looked up by text) and
  ``run_migration`` from texts; ``costs``: what a run will cost; ``api``: ``isoscope.migrate(...)``.

Directions: ``new -> legacy`` maps the new model's query vectors into the old space (the index is untouched);
``old -> new`` maps the stored old vectors into the new space (no text re-embedded).

Imports isoscope.retrieval, neighbours, sources, encode and calibrate; ``api`` also isoscope.space (its bars, cards
and report), which never imports this package back.
"""

from __future__ import annotations

import sys
import types
from typing import Any


class _CallableModule(types.ModuleType):
    """This package, callable: ``isoscope.migrate(old, new, ...)`` is ``isoscope.migrate.api.migrate``."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from isoscope.migrate.api import migrate

        return migrate(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
