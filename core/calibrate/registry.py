"""The registry of fitted maps, built from the classes: each class that declares a ``name`` adds itself when it is
defined (``isoscope.calibrate.base.FittedMap.__init_subclass__``), and is found here by its name, an alias or its
class name (what a saved ``calibrator.json`` records).

Before a lookup the registry imports the modules that can hold Isoscope's own maps (every public module of each
family's package: ``isoscope.calibrate`` for calibrators, the package a family's base class names with
``add_family`` for the others; a calibrator added in a new module of ``isoscope/calibrate/`` needs no other edit) and the plugins installed as ``isoscope.plugins`` entry points (a package of your own:
``[project.entry-points."isoscope.plugins"] mine = "my_package.calibrators"``; the module is imported, its classes
register themselves). A class defined in a notebook or a script registers itself when its cell runs. A name read
from a file is only ever looked up here: nothing a file names is imported.

Light to import: the modules are imported on the first lookup, not before.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from typing import TYPE_CHECKING

from isoscope.errors import InputError, first_line

if TYPE_CHECKING:
    from isoscope.calibrate.base import FittedMap

PLUGIN_GROUP = "isoscope.plugins"
NAME_PATTERN = re.compile(r"[a-z][a-z0-9_-]{0,39}")  # a step of a method string: no '+', ':', ',' or '='

_by_name: dict[tuple[str, str], type[FittedMap]] = {}  # (family, name or alias) -> class
_by_class: dict[str, type[FittedMap]] = {}  # class name -> class
_packages: dict[str, str] = {"calibrator": "isoscope.calibrate"}  # family -> the package holding Isoscope's maps
_imported: set[str] = set()  # the packages whose modules are imported
_plugins_loaded = False


def add_family(family: str, package: str) -> None:
    """Declare the package whose modules hold Isoscope's maps of ``family`` (called by the family's base module)."""
    _packages[family] = package


def _same(a: type, b: type) -> bool:
    """The same class defined again (a module reloaded, a notebook cell run twice): it replaces the old one."""
    return (a.__module__, a.__qualname__) == (b.__module__, b.__qualname__)


def _where(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def add(cls: type[FittedMap]) -> None:
    """Register ``cls`` under its name, its aliases and its class name; InputError for a name that another class
    holds, or that a method string could not spell."""
    keys = (cls.name, *cls.aliases) if cls.name else ()
    for key in keys:
        if not NAME_PATTERN.fullmatch(key):
            raise InputError(f"{_where(cls)}: name '{key}' must be lower case letters, digits, - or _ (40 at most)")
        held = _by_name.get((cls.family, key))
        if held is not None and not _same(held, cls):
            raise InputError(f"{_where(cls)}: the {cls.family} name '{key}' is taken by {_where(held)}; choose another")
    held = _by_class.get(cls.__name__)
    if held is not None and not _same(held, cls):
        raise InputError(f"{_where(cls)}: the class name {cls.__name__} is taken by {_where(held)}; rename the class")
    for key in keys:
        _by_name[(cls.family, key)] = cls
    _by_class[cls.__name__] = cls


def discover() -> None:
    """Import Isoscope's own maps (each family's package once) and the installed plugins (once)."""
    global _plugins_loaded
    for package in set(_packages.values()) - _imported:
        _imported.add(package)
        for info in pkgutil.iter_modules(importlib.import_module(package).__path__):
            if not info.name.startswith("_"):
                importlib.import_module(f"{package}.{info.name}")
    if _plugins_loaded:
        return
    _plugins_loaded = True
    from importlib.metadata import entry_points

    for plugin in entry_points(group=PLUGIN_GROUP):
        try:
            plugin.load()
        except InputError:
            raise
        except Exception as exc:  # the plugin's own bug: name it, in one line
            raise InputError(
                f"the Isoscope plugin '{plugin.name}' ({plugin.value}) failed to import: {first_line(exc)}"
            ) from exc


def lookup(family: str, name: str) -> type[FittedMap] | None:
    """The class of ``family`` that a method string's step names (its name or an alias), or None."""
    discover()
    return _by_name.get((family, name))


def class_named(class_name: str) -> type[FittedMap] | None:
    """The registered class called ``class_name`` (what a saved file records), or None."""
    discover()
    return _by_class.get(class_name)


def classes(family: str) -> list[type[FittedMap]]:
    """Every class of ``family`` with a name, in the order selectors show them (``order``, then name)."""
    discover()
    found = {cls for (fam, _), cls in _by_name.items() if fam == family}
    return sorted(found, key=lambda cls: (cls.order, cls.name))


def class_names(family: str) -> list[str]:
    """The class names of ``family`` that a saved file may record (combinators such as ``Chain`` included)."""
    discover()
    return sorted(name for name, cls in _by_class.items() if cls.family == family)


def names(family: str) -> list[str]:
    """The names a method string of ``family`` may use, aliases after the names."""
    found = classes(family)
    return [cls.name for cls in found] + [alias for cls in found for alias in cls.aliases]
