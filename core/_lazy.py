"""Lazy exports (PEP 562): a package names what it offers, and each name is imported from its module on first use.

Every ``__init__`` of Isoscope that stays light uses it, so ``import isoscope`` and ``isoscope --help`` never
import numpy, torch or pandas:

    _EXPORTS = {"Space": "space", "embed": "space"}          # name -> module (relative to the package, or absolute)
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

A name found is kept in the package's namespace, so the next lookup is an ordinary attribute.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, exports: Mapping[str, str], *, computed: Mapping[str, Callable[[], Any]] | None = None
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``: ``exports`` maps a name to the module defining it (a
    module of the package by its last part, or an absolute ``isoscope...`` path); ``computed`` maps a name to a
    function giving its value when first asked for."""
    computed = computed or {}

    def __getattr__(name: str) -> Any:
        if name in computed:
            value = computed[name]()
        elif name in exports:
            module = exports[name]
            value = getattr(importlib.import_module(module if "." in module else f"{package}.{module}"), name)
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *exports, *computed})

    return __getattr__, __dir__
