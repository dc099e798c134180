"""The method strings a user can ask for: their one grammar (``parse_method``), the choices offered and their words.

A method string is one or more steps joined by ``+``, applied left to right. A step is the name of a registered
calibrator (``isoscope.calibrate.registry``; an alias works too), optionally followed by ``:`` and its arguments,
separated by commas: values in the order of the class's ``arguments``, or ``name=value`` for any of them
(``whitening:64``, ``whitening:64,eps=1e-4``, ``abtt:3``). Each value is parsed as its ``Param`` says (whole
number, number, text, true/false) and checked against its bounds. Case and the spaces around a step do not
matter: ``" SN+abtt:5 "`` is ``sn+abtt:5``. A generic choice (``whitening:K``, ``sn+abtt:D``) writes a parameter's
symbol in place of its value, to be set next to it (``open_param``, ``fill_placeholder``).

spec = parse_method("sn+abtt:3")  # MethodSpec((MethodStep("sn"), MethodStep("abtt", (("n_components", 3),))))
str(spec) == "sn+abtt:3"

The names come from the classes, so this module imports them on the first parse; it is itself light to import
(the command line's help reads ``methods_help``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from isoscope.errors import InputError

if TYPE_CHECKING:
    from isoscope.calibrate.base import FittedMap, Param

FAMILY = "calibrator"
KINDS = {"calibrator": "calibration method"}  # a family's methods in words (default: the family's name)


def methods_help() -> str:
    """For a help text: the grammar in a few words (the names are listed by ``isoscope calibrate --methods``)."""
    return (
        "a calibrator such as whitening, whitening:64, sn+abtt:3 or flow (NAME[:VALUE,...], steps joined by +; "
        "isoscope calibrate --methods lists them all)"
    )


@dataclass(frozen=True)
class MethodStep:
    """One step of a method string: ``whitening:64`` is ``MethodStep("whitening", (("n_components", 64),))``.

    ``args`` holds the parameters the string set, in the order of the class's ``arguments``; ``first`` names the
    class's first parameter (the one written without its name)."""

    name: str
    args: tuple[tuple[str, Any], ...] = ()
    first: str = ""
    family: str = FAMILY

    def __str__(self) -> str:
        parts = [_text(v) if k == self.first else f"{k}={_text(v)}" for k, v in self.args]
        return f"{self.name}:{','.join(parts)}" if parts else self.name

    def value(self, name: str, default: Any = None) -> Any:
        return dict(self.args).get(name, default)

    @property
    def cls(self) -> type[FittedMap]:
        return _class(self.name, self.name, self.family)


@dataclass(frozen=True)
class MethodSpec:
    """A parsed method string: its steps, applied left to right; ``str(spec)`` is the method string again."""

    steps: tuple[MethodStep, ...]

    def __str__(self) -> str:
        return "+".join(str(step) for step in self.steps)

    @property
    def trains_for_epochs(self) -> bool:
        """Whether a step is trained for epochs (a flow: a progress bar of epochs; the others are closed form)."""
        return any(step.cls.trains_for_epochs for step in self.steps)

    @property
    def generic(self) -> str:
        """The choice this method is an instance of, its values as symbols: ``sn+abtt:3`` -> ``sn+abtt:D``."""
        out = []
        for step in self.steps:
            symbols = {p.name: p.symbol for p in step.cls.arguments if p.symbol}
            parts = [
                symbols[k] if k in symbols and k == step.first else f"{k}={symbols.get(k) or _text(v)}"
                for k, v in step.args
            ]
            out.append(f"{step.name}:{','.join(parts)}" if parts else step.name)
        return "+".join(out)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if isinstance(value, float) else str(value)


def format_step(name: str, arguments: tuple[Param, ...], values: dict[str, Any]) -> str:
    """A step's string from its class's name, ``arguments`` and the ``values`` that differ from the defaults."""
    first = arguments[0].name if arguments else ""
    return str(MethodStep(name, tuple((p.name, values[p.name]) for p in arguments if p.name in values), first))


def _unknown(method: str, family: str) -> InputError:
    valid = ", ".join(choices(family))
    return InputError(f"unknown {KINDS.get(family, family)} '{method[:80]}'; valid choices: {valid}")


def _class(name: str, method: str, family: str) -> type[FittedMap]:
    from isoscope.calibrate import registry

    cls = registry.lookup(family, name)
    if cls is None:
        raise _unknown(method, family)
    return cls


def _split(method: str, family: str = FAMILY) -> list[tuple[str, str]]:
    """``method`` as its steps' (name, text after ':'); InputError for an empty step."""
    text = str(method).strip()
    parts = [part.strip() for part in text.split("+")]
    if not text or any(not part for part in parts):
        raise _unknown(text, family)
    return [(name.strip().lower(), arg.strip()) for name, _, arg in (part.partition(":") for part in parts)]


def _values(cls: type[FittedMap], method: str, text: str) -> dict[str, str]:
    """The argument texts of one step by parameter name: positional values in order, then ``name=value``."""
    params = cls.arguments
    by_name = {p.name: p for p in params} | {p.symbol.lower(): p for p in params if p.symbol}
    out: dict[str, str] = {}
    keyword = False
    for i, item in enumerate(part.strip() for part in text.split(",")):
        key, eq, value = item.partition("=")
        if eq:
            keyword, key = True, key.strip().lower()
            if key not in by_name:
                names = ", ".join(p.name for p in params) or "none"
                raise InputError(f"'{method}': {cls.name} has no parameter '{key[:40]}' (it takes: {names})")
            key = by_name[key].name
        elif not keyword and i < len(params):
            key, value = params[i].name, item
        elif not params:
            raise InputError(f"'{method}': {cls.name} takes no values")
        else:
            raise InputError(f"'{method}': {cls.name} takes {len(params)} value(s) in order, then name=value")
        if key in out:
            raise InputError(f"'{method}': {key} is given twice")
        if not value.strip():
            raise InputError(f"'{method}': an empty value after '{cls.name}:'")
        out[key] = value.strip()
    return out


def _step(method: str, name: str, text: str, family: str) -> MethodStep:
    cls = _class(name, method, family)
    values = _values(cls, method, text) if text else {}
    args = tuple((p.name, p.parse(values[p.name], method)) for p in cls.arguments if p.name in values)
    return MethodStep(cls.name, args, cls.arguments[0].name if cls.arguments else "", family)


def parse_method(method: str | MethodSpec, *, family: str = FAMILY) -> MethodSpec:
    """The one parser of method strings: ``"sn+abtt:3"`` -> ``MethodSpec`` (a ``MethodSpec`` is returned as is).

    InputError (one line) for anything else: an unknown name lists the valid choices, a bad value says what it
    should be. ``family``: whose names (calibrators; ``adapter`` for ``isoscope.migrate``).
    """
    if isinstance(method, MethodSpec):
        return method
    text = str(method).strip()
    return MethodSpec(tuple(_step(text, name, arg, family) for name, arg in _split(text, family)))


def choices(family: str = FAMILY) -> tuple[str, ...]:
    """The choices a selector offers, from the registered classes of ``family`` in their order."""
    from isoscope.calibrate import registry

    return tuple(choice for cls in registry.classes(family) for choice in (cls.choices or (cls.name,)))


def calibration_methods() -> tuple[str, ...]:
    """The calibrators a selector offers: ``none, centre, flow, whitening, whitening:K, sn, abtt:D, sn+abtt:D`` and
    any calibrator of your own."""
    return choices(FAMILY)


def method_names(family: str = FAMILY) -> tuple[str, ...]:
    """The name of every registered map of ``family`` (aliases left out)."""
    from isoscope.calibrate import registry

    return tuple(cls.name for cls in registry.classes(family))


def open_param(choice: str, *, family: str = FAMILY) -> Param | None:
    """The parameter a generic choice leaves to be set next to it (``whitening:K`` -> Whitening's K), or None
    for a method string that says all its values."""
    for name, arg in _split(choice, family):
        if arg:
            for param in _class(name, choice, family).arguments:
                if param.symbol and arg == param.symbol:
                    return param
    return None


def placeholder(choice: str, *, family: str = FAMILY) -> str | None:
    """The symbol a generic choice leaves open (``whitening:K`` -> ``K``, ``sn+abtt:D`` -> ``D``), or None."""
    param = open_param(choice, family=family)
    return param.symbol if param else None


def fill_placeholder(choice: str, value: Any, *, family: str = FAMILY) -> str:
    """``choice`` with its symbol replaced by ``value``: (``sn+abtt:D``, 3) -> ``sn+abtt:3``, checked by
    ``parse_method`` (a choice without a symbol comes back parsed)."""
    param = open_param(choice, family=family)
    steps = [
        f"{name}:{_text(value)}" if param and arg == param.symbol else f"{name}:{arg}" if arg else name
        for name, arg in _split(choice, family)
    ]
    return str(parse_method("+".join(steps), family=family))


def explain_method(method: str, *, family: str = FAMILY) -> str:
    """A method string in words, for tooltips and captions (the one glossary of calibrators), each step as its
    class explains it: ``whitening:64`` -> "whitening that keeps the top 64 principal components"; a generic
    choice keeps its symbols (``abtt:D`` -> "... the top D principal directions")."""
    words = []
    for name, arg in _split(method, family):
        cls = _class(name, method, family)
        symbols = {p.symbol: p.name for p in cls.arguments if p.symbol}
        if arg in symbols:
            words.append(cls.explain({symbols[arg]: arg}))
        else:
            words.append(cls.explain(dict(_step(method, name, arg, family).args)))
    return ", then ".join(words)


def describe_method(method: str) -> str:
    """``method: explain_method(method)``: ``sn+abtt:3`` -> "sn+abtt:3: standard normalization per dimension,
    then all-but-the-top: remove the mean and the top 3 principal directions"."""
    return f"{method}: {explain_method(method)}"


def methods_table(family: str = FAMILY) -> list[tuple[str, str]]:
    """(choice, what it does) for every choice: what ``isoscope calibrate --methods`` prints."""
    return [(choice, explain_method(choice, family=family)) for choice in choices(family)]


def params_table(family: str = FAMILY) -> list[tuple[str, str]]:
    """(name, its parameters in words) for every calibrator that takes some: ``whitening`` -> "n_components (K, a
    whole number >= 1): components kept; eps (a number in [0, 1]): relative eigenvalue floor"."""
    from isoscope.calibrate import registry

    return [
        (cls.name, "; ".join(_param_words(p) for p in cls.arguments))
        for cls in registry.classes(family)
        if cls.arguments
    ]


def _param_words(param: Param) -> str:
    kind = {int: "a whole number", float: "a number", bool: "true or false"}.get(param.type, "text")
    if param.choices:
        kind = "one of " + ", ".join(param.choices)
    if param.low is not None and param.high is not None:
        kind += f" in [{param.low:g}, {param.high:g}]"
    elif param.low is not None:
        kind += f" >= {param.low:g}"
    if param.dims:
        kind += f", at most {param.dims}" if param.dims == "d" else ", below d"
    head = f"{param.name} ({param.symbol}, {kind})" if param.symbol else f"{param.name} ({kind})"
    return f"{head}: {param.what}" if param.what else head
