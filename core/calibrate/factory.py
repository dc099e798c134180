"""Method strings (``isoscope.calibrate.methods``) made into unfitted calibrators."""

from __future__ import annotations

from sklearn.base import clone

from isoscope.calibrate.base import Calibrator
from isoscope.calibrate.flow import Flow
from isoscope.calibrate.linear import AllButTheTop, Centering, Chain, Identity, StandardNormalization, Whitening
from isoscope.calibrate.methods import MethodSpec, MethodStep, parse_method


def _calibrator(step: MethodStep, flow: Flow | None) -> Calibrator:
    if step.name == "flow":
        return Flow() if flow is None else clone(flow)
    if step.name == "whitening":
        return Whitening(step.arg)
    if step.name == "centre":
        return Centering()
    if step.name == "sn":
        return StandardNormalization()
    if step.name == "abtt":
        return AllButTheTop(step.arg)
    return Identity()  # none


def make_calibrator(method: str | MethodSpec, *, flow: Flow | None = None) -> Calibrator:
    """``none, centre, flow, whitening, whitening:K, sn, abtt:D, sn+abtt:D`` (``parse_method``) as an unfitted calibrator.

    ``+`` chains calibrators left to right. ``flow``: an unfitted ``Flow`` whose hyperparameters every flow step
    copies (``sklearn.base.clone``; default: ``Flow()``). InputError (a ValueError) listing the valid choices for
    any other method.
    """
    steps = [_calibrator(step, flow) for step in parse_method(method).steps]
    return steps[0] if len(steps) == 1 else Chain(steps)


def whitened_dims(calibrator: Calibrator, d: int) -> int:
    """How many dimensions a calibrator whitens (0 when it does not whiten)."""
    if isinstance(calibrator, Chain):
        return max((whitened_dims(s, d) for s in calibrator.steps), default=0)
    if isinstance(calibrator, Whitening):
        return d if calibrator.n_components is None else int(calibrator.n_components)
    if isinstance(calibrator, Flow):
        return d if calibrator.whiten else 0
    return 0
