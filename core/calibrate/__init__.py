"""Calibrators: unsupervised maps that make sentence-embedding spaces isotropic, so cosine works better.

Pre-trained encoders put sentence vectors in a narrow cone; cosine similarity is then dominated by a few
directions. The calibrators are fitted without labels on embeddings (of the evaluated sentences, "target",
or of a separate corpus) and map any embedding into a better-conditioned space. One concept per module:

- ``base``: the scikit-learn estimator contract and save/load as safetensors + JSON (never pickle);
- ``linear``: ``Identity`` (``none``), ``Centering`` (``centre``), ``Whitening`` (``whitening``, ``whitening:K``),
  ``StandardNormalization`` (``sn``), ``AllButTheTop`` (``abtt:D``) and ``Chain`` (``sn+abtt:D``);
- ``flow``: ``Flow`` (BERT-flow, a normalizing flow to a standard normal; its hyperparameters are its
  ``__init__`` parameters, as scikit-learn's are);
- ``methods``: the method strings users can ask for and their one grammar (``parse_method`` -> ``MethodSpec``;
  light: no torch), ``factory``: them made into calibrators (``make_calibrator``);
- ``fitting``: how many vectors a method needs (``fit_size_warning``, ``safe_method``) and a timed fit;
- ``store``: fitted calibrators kept on disk under their key (method, flow settings, fit vectors);
- ``costs``: what training a flow will cost here.

z = make_calibrator("whitening").fit(vectors).transform(vectors)  # (n, d) float32

Names are imported from their module on first use (PEP 562), so ``isoscope.calibrate.methods`` stays cheap to
import for the command line's help.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    **dict.fromkeys(
        ("CALIBRATORS", "JSON_NAME", "TENSORS_NAME", "Calibrator", "EpochProgressFn", "NotFittedError"), "base"
    ),
    **dict.fromkeys(("check_array", "load_calibrator"), "base"),
    **dict.fromkeys(("AllButTheTop", "Centering", "Chain", "Identity", "StandardNormalization", "Whitening"), "linear"),
    **dict.fromkeys(("EVAL_ROWS", "FLOW_COUPLINGS", "FLOW_LINEARS", "Flow"), "flow"),
    **dict.fromkeys(("CALIBRATION_METHODS", "METHOD_DESCRIPTIONS", "METHOD_NAMES", "CalibrationMethod"), "methods"),
    **dict.fromkeys(("MethodSpec", "MethodStep", "methods_help", "parse_method"), "methods"),
    **dict.fromkeys(("make_calibrator", "whitened_dims"), "factory"),
    **dict.fromkeys(("fit_size_warning", "fit_timed", "fit_too_small", "safe_components", "safe_method"), "fitting"),
}
__all__ = [
    "CALIBRATION_METHODS",
    "CALIBRATORS",
    "EVAL_ROWS",
    "FLOW_COUPLINGS",
    "FLOW_LINEARS",
    "JSON_NAME",
    "METHOD_DESCRIPTIONS",
    "METHOD_NAMES",
    "TENSORS_NAME",
    "AllButTheTop",
    "CalibrationMethod",
    "Calibrator",
    "Centering",
    "Chain",
    "EpochProgressFn",
    "Flow",
    "Identity",
    "MethodSpec",
    "MethodStep",
    "NotFittedError",
    "StandardNormalization",
    "Whitening",
    "check_array",
    "fit_size_warning",
    "fit_timed",
    "fit_too_small",
    "load_calibrator",
    "make_calibrator",
    "methods_help",
    "parse_method",
    "safe_components",
    "safe_method",
    "whitened_dims",
]  # the names of _EXPORTS (tests/core/calibrate check it)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'isoscope.calibrate' has no attribute '{name}'")
    value = getattr(importlib.import_module(f"isoscope.calibrate.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


if TYPE_CHECKING:  # for type checkers and IDEs: the same names, imported eagerly
    from isoscope.calibrate.base import (
        CALIBRATORS,
        JSON_NAME,
        TENSORS_NAME,
        Calibrator,
        EpochProgressFn,
        NotFittedError,
        check_array,
        load_calibrator,
    )
    from isoscope.calibrate.factory import make_calibrator, whitened_dims
    from isoscope.calibrate.fitting import fit_size_warning, fit_timed, fit_too_small, safe_components, safe_method
    from isoscope.calibrate.flow import EVAL_ROWS, FLOW_COUPLINGS, FLOW_LINEARS, Flow
    from isoscope.calibrate.linear import AllButTheTop, Centering, Chain, Identity, StandardNormalization, Whitening
    from isoscope.calibrate.methods import (
        CALIBRATION_METHODS,
        METHOD_DESCRIPTIONS,
        METHOD_NAMES,
        CalibrationMethod,
        MethodSpec,
        MethodStep,
        methods_help,
        parse_method,
    )
