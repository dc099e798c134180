"""tests/heavy.py names tests that exist: a renamed or deleted test must leave the list, or it would silently
move back into the gate."""

from __future__ import annotations

import re

from tests.conftest import ROOT
from tests.heavy import HEAVY


def test_every_heavy_entry_names_an_existing_test() -> None:
    missing = []
    for nodeid in HEAVY:
        path, _, name = nodeid.partition("::")
        function = re.sub(r"\[.*\]$", "", name)
        source = (ROOT / path).read_text(encoding="utf-8") if (ROOT / path).is_file() else ""
        if not re.search(rf"^def {re.escape(function)}\(", source, flags=re.M):
            missing.append(nodeid)
    assert not missing, missing
    assert len(set(HEAVY)) == len(HEAVY)
