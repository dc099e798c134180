"""``isoscope._lazy.lazy_exports``: one helper behind every light ``__init__``."""

from __future__ import annotations

import subprocess
import sys

import pytest

import isoscope


def test_a_package_of_its_own_resolves_each_name_once_on_first_use(tmp_path, monkeypatch) -> None:
    pkg = tmp_path / "lazypkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        "from isoscope._lazy import lazy_exports\n"
        "_EXPORTS = {'thing': 'heavy', 'json_dumps': 'json'}\n"
        "__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, computed={'answer': lambda: 42})\n"
    )
    (pkg / "heavy.py").write_text("thing = object()\nLOADED = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import lazypkg

    assert "lazypkg.heavy" not in sys.modules  # nothing imported before a name is asked for
    assert {"thing", "answer", "json_dumps"} <= set(dir(lazypkg))
    thing = lazypkg.thing
    assert "lazypkg.heavy" in sys.modules and thing is sys.modules["lazypkg.heavy"].thing
    assert vars(lazypkg)["thing"] is thing  # kept: the next lookup is an ordinary attribute
    assert lazypkg.answer == 42
    with pytest.raises(ModuleNotFoundError, match=r"lazypkg\.json"):
        _ = lazypkg.json_dumps  # a dot-less module name is the package's own (lazypkg.json), never the stdlib's json
    with pytest.raises(AttributeError, match="module 'lazypkg' has no attribute 'nothing'"):
        _ = lazypkg.nothing


def test_every_light_package_uses_the_helper_and_stays_light() -> None:
    for name in ("calibrate", "data", "landscape", "retrieval", "sources", "space"):
        package = __import__(f"isoscope.{name}", fromlist=["_EXPORTS"])
        assert package.__getattr__.__module__ == "isoscope._lazy", name
        assert set(package._EXPORTS) <= set(dir(package)), name
    assert isoscope.__getattr__.__module__ == "isoscope._lazy"
    code = "import sys, isoscope, isoscope.data, isoscope.calibrate, isoscope.space; print('numpy' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"
