"""Method strings (``isoscope.calibrate.methods``) parsed into unfitted calibrators."""

from __future__ import annotations

from isoscope.calibrate.base import Calibrator
from isoscope.calibrate.flow import Flow, FlowConfig
from isoscope.calibrate.linear import AllButTheTop, Chain, Identity, StandardNormalization, Whitening
from isoscope.calibrate.methods import methods_help
from isoscope.errors import InputError


def _parse_int(method: str, text: str, what: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise InputError(f"'{method}': {what} must be a whole number, like whitening:256 or abtt:3") from None
    if value < 1:
        raise InputError(f"'{method}': {what} must be >= 1")
    return value


def _unknown(method: str) -> InputError:
    return InputError(f"unknown calibration method '{method}'; valid choices: {methods_help()}")


def _one(method: str, part: str, flow_config: FlowConfig | None) -> Calibrator:
    name, _, arg = part.partition(":")
    if name == "none" and not arg:
        return Identity()
    if name == "flow" and not arg:
        return Flow(flow_config)
    if name == "whitening":
        return Whitening(_parse_int(method, arg, "K (dimensions kept)") if arg else None)
    if name == "sn" and not arg:
        return StandardNormalization()
    if name == "abtt":
        return AllButTheTop(_parse_int(method, arg, "D (directions removed)") if arg else None)
    raise _unknown(method)


def make_calibrator(method: str, flow_config: FlowConfig | None = None) -> Calibrator:
    """Parse ``none, flow, whitening, whitening:K, sn, abtt:D, sn+abtt:D`` into an unfitted calibrator.

    ``+`` chains calibrators left to right. InputError (a ValueError) listing the valid choices for anything
    else.
    """
    method = str(method).strip().lower()
    parts = [p.strip() for p in method.split("+")]
    if not method or any(not p for p in parts):
        raise _unknown(method)
    steps = [_one(method, p, flow_config) for p in parts]
    return steps[0] if len(steps) == 1 else Chain(steps)


def whitened_dims(calibrator: Calibrator, d: int) -> int:
    """How many dimensions a calibrator whitens (0 when it does not whiten)."""
    if isinstance(calibrator, Chain):
        return max((whitened_dims(s, d) for s in calibrator.steps), default=0)
    if isinstance(calibrator, Whitening):
        return d if calibrator.n_components is None else int(calibrator.n_components)
    if isinstance(calibrator, Flow):
        return d if calibrator._config().whiten else 0
    return 0
