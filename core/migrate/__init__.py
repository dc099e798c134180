"""Model migration: move a corpus to a new embedding model without re-embedding it, and measure what is kept.

One concept per module:

- ``adapters``: the maps fitted on pairs of spaces (``Adapter``, a ``FittedMap`` family): ``ProcrustesAdapter``, ``RidgeAdapter``
  (towards zero or the rotation), ``LowRankAdapter``; ``mlp``: ``MLPAdapter``; ``local``: ``LocalAdapter`` (a map per
  cluster, where it helps). Their method strings (``ridge:procrustes``, ``lowrank:64``) are read by
  ``isoscope.migrate.methods.make_adapter``.

Directions: ``new -> legacy`` maps the new model's query vectors into the old space (the index is untouched);
``old -> new`` maps the stored old vectors into the new space (no text re-embedded).
"""
