"""Method strings (``isoscope.calibrate.methods``) made into unfitted calibrators: each step's class, from the
registry, built with the values the string set."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sklearn.base import clone

from isoscope.calibrate.base import Calibrator
from isoscope.calibrate.methods import MethodSpec, MethodStep, parse_method

if TYPE_CHECKING:
    from isoscope.calibrate.flow import Flow


def _calibrator(step: MethodStep, flow: Flow | None) -> Calibrator:
    cls = step.cls
    if flow is not None and isinstance(flow, cls):  # a template carrying the flow's hyperparameters
        return clone(flow).set_params(**dict(step.args))
    return cls(**dict(step.args))


def make_calibrator(method: str | MethodSpec, *, flow: Flow | None = None) -> Calibrator:
    """A method string (``parse_method``: ``whitening:64``, ``sn+abtt:3``, ...) as an unfitted calibrator.

    ``+`` chains calibrators left to right. ``flow``: an unfitted ``Flow`` whose hyperparameters every flow step
    copies (``sklearn.base.clone``; default: ``Flow()``). InputError (a ValueError) listing the valid choices for
    any other method.
    """
    from isoscope.calibrate.linear import Chain

    steps = [_calibrator(step, flow) for step in parse_method(method).steps]
    return steps[0] if len(steps) == 1 else Chain(steps)
