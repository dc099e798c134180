"""Adapter method strings (``procrustes``, ``ridge:procrustes``, ``lowrank:64``, ``mlp``, ``local:8``) made into
unfitted adapters, by the one grammar of fitted maps (``isoscope.calibrate.methods``, family ``adapter``): one
adapter per string, never a chain."""

from __future__ import annotations

from isoscope.calibrate.methods import choices, parse_method
from isoscope.errors import InputError
from isoscope.migrate.adapters import Adapter
from isoscope.migrate.options import DEFAULT_ADAPTERS

FAMILY = "adapter"
__all__ = ["DEFAULT_ADAPTERS", "FAMILY", "make_adapter"]


def make_adapter(method: str, *, seed: int = 0) -> Adapter:
    """``method`` as an unfitted adapter (its held-out split and initial draws seeded with ``seed``); InputError
    listing the valid choices for anything else."""
    spec = parse_method(method, family=FAMILY)
    if len(spec.steps) != 1:
        raise InputError(f"'{method}': an adapter is one map, not a chain; valid choices: {', '.join(choices(FAMILY))}")
    (step,) = spec.steps
    adapter = step.cls(**dict(step.args))
    if "seed" in adapter.get_params():
        adapter.set_params(seed=seed)
    return adapter
