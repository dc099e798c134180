"""isoscope.costs: the value every estimate is (``Cost``), in words; the cost models beside their domains stay
light to import."""

from __future__ import annotations

from isoscope import costs
from isoscope.costs import FREE, Cost


def test_a_cost_says_itself_in_words():
    assert Cost(130, 40 * 2**20).describe() == "about 2 min, 40 MB on disk"
    assert Cost(4.2).describe() == "about 4 s"
    assert Cost(42).describe() == "about 40 s"
    assert Cost(3 * 3600 + 600, int(1.1 * 2**30)).describe() == "about 3 h 10 min, 1.1 GB on disk"
    assert Cost(30, 100).describe() == "about 30 s"  # a few bytes are not worth naming
    assert Cost(10, 5) + Cost(15, 7) == Cost(25, 12) and costs.total([]) == FREE
    assert not Cost(costs.SHOW_SECONDS - 0.1).long and Cost(costs.SHOW_SECONDS).long and not FREE.long


def test_no_heavy_import_for_a_cost_in_words():
    """The value and every domain's cost model import numpy, torch and umap only inside the functions that measure."""
    import subprocess
    import sys

    modules = ", ".join(
        f"isoscope.{m}"
        for m in ("costs", "encode.costs", "calibrate.costs", "neighbours.costs", "atlas.costs", "landscape.costs")
    )
    code = f"import sys, {modules}; print(sorted(m for m in ('torch', 'umap', 'numpy') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
