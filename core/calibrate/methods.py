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
