"""Isoscope core: a library for seeing and fixing the geometry of sentence-embedding spaces.

Never imports streamlit; the dashboard is a thin layer over this package. The notebook API is at the top:

import isoscope
space = isoscope.embed(texts)                 # or isoscope.Space(vectors, texts=None, metadata=None, name=None)
space.geometry(); white = space.calibrate("whitening"); cmp = isoscope.compare(space, white)
space.map(color="topic"); space.report("report.html")
isoscope.migrate(new="model=NAME").table()     # switch models without re-embedding? (the package is callable)

These names are imported on first use (PEP 562), so ``import isoscope`` and ``isoscope --help`` stay instant.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from isoscope._lazy import lazy_exports

__version__ = "0.2.0"

# name -> module that defines it
_EXPORTS: dict[str, str] = {
    "Space": "isoscope.space.space",
    "embed": "isoscope.space.space",
    "compare": "isoscope.space.space",
    "Comparison": "isoscope.space.comparison",
}
__all__ = ["Comparison", "Space", "__version__", "compare", "embed", "migrate"]

__getattr__, __dir__ = lazy_exports(
    __name__, _EXPORTS, computed={"migrate": lambda: importlib.import_module("isoscope.migrate")}
)  # isoscope.migrate: a callable package, the name is the module itself


if TYPE_CHECKING:
    from isoscope.space.comparison import Comparison
    from isoscope.space.space import Space, compare, embed
