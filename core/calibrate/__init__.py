"""Calibrators: unsupervised maps that make sentence-embedding spaces isotropic, so cosine works better.

Pre-trained encoders put sentence vectors in a narrow cone; cosine similarity is then dominated by a few
directions. The calibrators are fitted without labels on embeddings (of the evaluated sentences, "target",
or of a separate corpus) and map any embedding into a better-conditioned space. One concept per module:

- ``base``: the contract of a fitted map (``FittedMap``; ``Calibrator`` is its unsupervised family): the
  scikit-learn estimator API, its name and typed parameters (``Param``) in the grammar, its affine form, and
  save/load as safetensors + JSON (never pickle);
- ``registry``: the classes by name, alias and class name, built from the classes themselves (each registers
  when it is defined; Isoscope's modules and ``isoscope.plugins`` entry points are imported on the first lookup);
- ``linear``: ``Identity`` (``none``), ``Centering`` (``centre``), ``Whitening`` (``whitening``, ``whitening:K``),
  ``StandardNormalization`` (``sn``), ``AllButTheTop`` (``abtt:D``) and ``Chain`` (``sn+abtt:D``);
- ``flow``: ``Flow`` (BERT-flow, a normalizing flow to a standard normal; its hyperparameters are its
  ``__init__`` parameters, as scikit-learn's are);
- ``methods``: the one grammar of method strings (``parse_method`` -> ``MethodSpec``), the choices and their
  words, from the registered classes; ``factory``: method strings made into calibrators (``make_calibrator``);
- ``fitting``: how many vectors a method needs (``fit_size_warning``, ``safe_method``) and a timed fit;
- ``store``: fitted calibrators kept on disk under their key (method, flow settings, fit vectors);
- ``costs``: what training a flow will cost here.

z = make_calibrator("whitening").fit(vectors).transform(vectors)  # (n, d) float32

A calibrator of your own is a class (docs/library.md, "A calibrator of your own")::

    class Shrink(Calibrator):
        name = "shrink"
        arguments = (Param("alpha", float, "A", "weight of the mean removed", low=0, high=1),)
        ...
    make_calibrator("shrink:0.5")

Names are imported from their module on first use (PEP 562), so ``isoscope.calibrate.methods`` stays cheap to
import for the command line's help.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from isoscope._lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    **dict.fromkeys(
        ("JSON_NAME", "TENSORS_NAME", "Calibrator", "EpochProgressFn", "FittedMap", "NotFittedError"), "base"
    ),
    **dict.fromkeys(("Param", "check_array", "load_calibrator", "register"), "base"),
    **dict.fromkeys(("AllButTheTop", "Centering", "Chain", "Identity", "StandardNormalization", "Whitening"), "linear"),
    **dict.fromkeys(("EVAL_ROWS", "FLOW_COUPLINGS", "FLOW_LINEARS", "Flow"), "flow"),
    **dict.fromkeys(("calibration_methods", "explain_method", "method_names"), "methods"),
    **dict.fromkeys(("MethodSpec", "MethodStep", "methods_help", "parse_method"), "methods"),
    **dict.fromkeys(("make_calibrator",), "factory"),
    **dict.fromkeys(("fit_size_warning", "fit_timed", "fit_too_small", "safe_components", "safe_method"), "fitting"),
}
__all__ = [
    "EVAL_ROWS",
    "FLOW_COUPLINGS",
    "FLOW_LINEARS",
    "JSON_NAME",
    "TENSORS_NAME",
    "AllButTheTop",
    "Calibrator",
    "Centering",
    "Chain",
    "EpochProgressFn",
    "FittedMap",
    "Flow",
    "Identity",
    "MethodSpec",
    "MethodStep",
    "NotFittedError",
    "Param",
    "StandardNormalization",
    "Whitening",
    "calibration_methods",
    "check_array",
    "explain_method",
    "fit_size_warning",
    "fit_timed",
    "fit_too_small",
    "load_calibrator",
    "make_calibrator",
    "method_names",
    "methods_help",
    "parse_method",
    "register",
    "safe_components",
    "safe_method",
]  # the names of _EXPORTS (tests/core/calibrate check it)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)


if TYPE_CHECKING:  # for type checkers and IDEs: the same names, imported eagerly
    from isoscope.calibrate.base import (
        JSON_NAME,
        TENSORS_NAME,
        Calibrator,
        EpochProgressFn,
        FittedMap,
        NotFittedError,
        Param,
        check_array,
        load_calibrator,
        register,
    )
    from isoscope.calibrate.factory import make_calibrator
    from isoscope.calibrate.fitting import fit_size_warning, fit_timed, fit_too_small, safe_components, safe_method
    from isoscope.calibrate.flow import EVAL_ROWS, FLOW_COUPLINGS, FLOW_LINEARS, Flow
    from isoscope.calibrate.linear import AllButTheTop, Centering, Chain, Identity, StandardNormalization, Whitening
    from isoscope.calibrate.methods import (
        MethodSpec,
        MethodStep,
        calibration_methods,
        explain_method,
        method_names,
        methods_help,
        parse_method,
    )
