"""The calibration methods a user can ask for: their one grammar (``parse_method``), the choices offered
(``CALIBRATION_METHODS``) and their descriptions. No heavy imports: the CLI's help and the dashboard's selectors
are generated from here.

A method string is one or more steps joined by ``+``, applied left to right; a step is a method name
(``CalibrationMethod``), followed for ``whitening`` and ``abtt`` by ``:`` and a whole number (K dimensions
kept, D directions removed; without it, the method's default). Case and the spaces around a step do not matter:
``" SN+abtt:5 "`` is ``sn+abtt:5``. The generic choices ``whitening:K``, ``abtt:D`` and ``sn+abtt:D`` leave
their number to be set next to them (``placeholder``, ``fill_placeholder``).

spec = parse_method("sn+abtt:3")  # MethodSpec((MethodStep("sn"), MethodStep("abtt", 3))); str(spec) == "sn+abtt:3"
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from isoscope.errors import InputError

CalibrationMethod = Literal["none", "centre", "flow", "whitening", "sn", "abtt"]  # the name of one step
METHOD_NAMES: tuple[CalibrationMethod, ...] = get_args(CalibrationMethod)
# the methods that take a whole number after ':': its symbol in a generic choice, and what it counts
ARGUMENTS: dict[str, tuple[str, str]] = {
    "whitening": ("K", "K (dimensions kept)"),
    "abtt": ("D", "D (directions removed)"),
}
CALIBRATION_METHODS: tuple[str, ...] = (
    "none",
    "centre",
    "flow",
    "whitening",
    "whitening:K",
    "sn",
    "abtt:D",
    "sn+abtt:D",
)
METHOD_DESCRIPTIONS: dict[str, str] = {
    "none": "the raw vectors",
    "centre": "centring: remove the mean vector (the direction every text shares)",
    "flow": "BERT-flow, a normalizing flow to an isotropic Gaussian (trained without labels)",
    "whitening": "the linear counterpart of the flow: centre, rotate to the principal axes, scale to unit variance",
    "whitening:K": "whitening that keeps the top K principal components",
    "sn": "standard normalization per dimension",
    "abtt:D": "all-but-the-top: remove the mean and the top D principal directions",
    "sn+abtt:D": "sn, then abtt:D (+ chains any methods left to right)",
}


@dataclass(frozen=True)
class MethodStep:
    """One step of a method string: ``whitening:64`` is ``MethodStep("whitening", 64)``."""

    name: CalibrationMethod
    arg: int | None = None  # K of whitening:K, D of abtt:D (>= 1); None: the method's default

    def __str__(self) -> str:
        return self.name if self.arg is None else f"{self.name}:{self.arg}"


@dataclass(frozen=True)
class MethodSpec:
    """A parsed method string: its steps, applied left to right; ``str(spec)`` is the method string again."""

    steps: tuple[MethodStep, ...]

    def __str__(self) -> str:
        return "+".join(str(step) for step in self.steps)

    @property
    def trains_flow(self) -> bool:
        """Whether a step is a flow (trained for epochs, with a progress bar; the other methods are closed form)."""
        return any(step.name == "flow" for step in self.steps)

    @property
    def generic(self) -> str:
        """The choice this method is an instance of, its numbers as symbols: ``sn+abtt:3`` -> ``sn+abtt:D``."""
        return "+".join(
            step.name if step.arg is None else f"{step.name}:{ARGUMENTS[step.name][0]}" for step in self.steps
        )


def methods_help() -> str:
    """``none, centre, flow, whitening, whitening:K, sn, abtt:D, sn+abtt:D`` for a CLI help text."""
    return ", ".join(CALIBRATION_METHODS)


def _unknown(method: str) -> InputError:
    return InputError(f"unknown calibration method '{method}'; valid choices: {methods_help()}")


def _split(method: str) -> list[tuple[str, str]]:
    """``method`` (already normalised) as its steps' (name, text after ':'); InputError for an empty step."""
    parts = [part.strip() for part in method.split("+")]
    if not method or any(not part for part in parts):
        raise _unknown(method)
    return [(name, arg) for name, _, arg in (part.partition(":") for part in parts)]


def _whole_number(method: str, text: str, what: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise InputError(f"'{method}': {what} must be a whole number, like whitening:256 or abtt:3") from None
    if value < 1:
        raise InputError(f"'{method}': {what} must be >= 1")
    return value


def _step(method: str, name: str, arg: str) -> MethodStep:
    if name in ARGUMENTS:
        return MethodStep(name, _whole_number(method, arg, ARGUMENTS[name][1]) if arg else None)  # type: ignore[arg-type]
    if name in METHOD_NAMES and not arg:
        return MethodStep(name)  # type: ignore[arg-type]
    raise _unknown(method)


def parse_method(method: str | MethodSpec) -> MethodSpec:
    """The one parser of method strings: ``"sn+abtt:3"`` -> ``MethodSpec`` (a ``MethodSpec`` is returned as is).

    InputError (one line) for anything else: an unknown name lists the valid choices, a bad number says what
    it should be.
    """
    if isinstance(method, MethodSpec):
        return method
    text = str(method).strip().lower()
    return MethodSpec(tuple(_step(text, name, arg) for name, arg in _split(text)))


def placeholder(choice: str) -> str | None:
    """The symbol a generic choice leaves to be set next to it (``whitening:K`` -> ``K``, ``sn+abtt:D`` -> ``D``);
    None for a method string that says all its numbers."""
    for name, arg in _split(choice.strip()):
        if name in ARGUMENTS and arg == ARGUMENTS[name][0]:
            return arg
    return None


def fill_placeholder(choice: str, value: int) -> str:
    """``choice`` with its symbol replaced by ``value``: (``sn+abtt:D``, 3) -> ``sn+abtt:3``, checked by
    ``parse_method`` (a choice without a symbol comes back parsed)."""
    steps = [
        f"{name}:{value}" if name in ARGUMENTS and arg == ARGUMENTS[name][0] else f"{name}:{arg}" if arg else name
        for name, arg in _split(choice.strip())
    ]
    return str(parse_method("+".join(steps)))


def describe_method(method: str) -> str:
    """A concrete method string in words, for tooltips and captions (the one glossary of calibrators):
    ``sn+abtt:3`` -> "sn+abtt:3: standard normalization per dimension, then all-but-the-top: remove the mean
    and the top 3 principal directions"."""
    return f"{method}: {explain_method(method)}"


def _explain_step(step: MethodStep) -> str:
    if step.name == "whitening" and step.arg is not None:
        return f"whitening that keeps the top {step.arg} principal components"
    if step.name == "abtt":
        return f"all-but-the-top: remove the mean and the top {step.arg or 'D'} principal directions"
    return METHOD_DESCRIPTIONS[step.name]


def explain_method(method: str) -> str:
    """``describe_method`` without the method's name in front: ``whitening:64`` -> "whitening that keeps the top
    64 principal components"; a generic choice (``whitening:K``, ``sn+abtt:D``) is its ``METHOD_DESCRIPTIONS``."""
    if method in METHOD_DESCRIPTIONS:
        return METHOD_DESCRIPTIONS[method]
    return ", then ".join(_explain_step(step) for step in parse_method(method).steps)
