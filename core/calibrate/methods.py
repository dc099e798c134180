"""The calibration methods a user can ask for, with their descriptions (no heavy imports: the CLI's help
and the dashboard's selectors are generated from here)."""

from __future__ import annotations

from typing import Literal

CalibrationMethod = Literal["none", "flow", "whitening", "whitening:K", "sn", "abtt:D", "sn+abtt:D"]
CALIBRATION_METHODS: tuple[str, ...] = ("none", "flow", "whitening", "whitening:K", "sn", "abtt:D", "sn+abtt:D")
METHOD_DESCRIPTIONS: dict[str, str] = {
    "none": "the raw vectors",
    "flow": "BERT-flow, a normalizing flow to an isotropic Gaussian (trained without labels)",
    "whitening": "the linear counterpart of the flow: centre, rotate to the principal axes, scale to unit variance",
    "whitening:K": "whitening that keeps the top K principal components",
    "sn": "standard normalization per dimension",
    "abtt:D": "all-but-the-top: remove the mean and the top D principal directions",
    "sn+abtt:D": "sn, then abtt:D (+ chains any methods left to right)",
}


def methods_help() -> str:
    """``none, flow, whitening, whitening:K, sn, abtt:D, sn+abtt:D`` for a CLI help text."""
    return ", ".join(CALIBRATION_METHODS)


def describe_method(method: str) -> str:
    """A concrete method string in words, for tooltips and captions (the one glossary of calibrators):
    ``sn+abtt:3`` -> "sn+abtt:3: standard normalization per dimension, then all-but-the-top: remove the mean
    and the top 3 principal directions"."""
    return f"{method}: {explain_method(method)}"


def explain_method(method: str) -> str:
    """``describe_method`` without the method's name in front: ``whitening:64`` -> "whitening that keeps the top
    64 principal components"; a generic choice (``whitening:K``, ``sn+abtt:D``) is its ``METHOD_DESCRIPTIONS``."""
    if method in METHOD_DESCRIPTIONS:
        return METHOD_DESCRIPTIONS[method]
    parts = []
    for step in method.strip().split("+"):
        name, _, value = step.strip().partition(":")
        if name == "whitening" and value:
            parts.append(f"whitening that keeps the top {value} principal components")
        elif name == "abtt":
            parts.append(f"all-but-the-top: remove the mean and the top {value or 'D'} principal directions")
        else:
            parts.append(METHOD_DESCRIPTIONS.get(name, name))
    return ", then ".join(parts)
