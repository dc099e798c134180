"""The one-file report: a space (or a comparison of two) measured and written as one self-contained HTML file
that opens offline and can be mailed to a colleague (``content``: what it says; ``build``: measuring it;
``render``: the HTML, plotly inlined).

space.report("report.html", vs="whitening", pairs="stsb-en-test.csv")   # or isoscope report --model ... --out
isoscope.compare(a, b).report("compare.html")
isoscope.migrate(new="model=NAME").report("migration.html")           # or space.report(..., migration=result)
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from isoscope.space.comparison import Comparison
    from isoscope.space.space import Space

__all__ = ["comparison_report", "migration_report", "space_report", "write"]


def write(html: str, path: str | Path, *, force: bool = False) -> Path:
    """Write the report atomically (never a half-written file under its name); returns the path. An existing
    file that is not an Isoscope report is replaced only with ``force`` (``isoscope.data.outputs``)."""
    from isoscope.data.outputs import REPORT, write_output_bytes

    return write_output_bytes(path, html.encode("utf-8"), kind=REPORT, force=force)


def space_report(space: Space, path: str | Path | None = None, **options: Any) -> Path | str:
    """The report of ``space`` (``build.build_space_report`` options: vs, pairs, retrieval, k, layers, map,
    map_points, seed, command, title): written to ``path`` (returns the path), or returned as an HTML string."""
    from isoscope.space.report.build import build_space_report
    from isoscope.space.report.render import render

    html = render(build_space_report(space, **options))
    return html if path is None else write(html, path)


def comparison_report(comparison: Comparison, path: str | Path | None = None, **options: Any) -> Path | str:
    """The report of a comparison (options: pairs, command, title), written to ``path`` or returned."""
    from isoscope.space.report.build import build_comparison_report
    from isoscope.space.report.render import render

    html = render(build_comparison_report(comparison, **options))
    return html if path is None else write(html, path)


def migration_report(result: Any, path: str | Path | None = None, **options: Any) -> Path | str:
    """The report of a migration run (``isoscope.migrate(...)``; options: command, title), written to ``path`` or
    returned. The run is read through its own methods (this package never imports ``isoscope.migrate``)."""
    from isoscope.space.report.build import build_migration_report
    from isoscope.space.report.render import render

    html = render(build_migration_report(result, **options))
    return html if path is None else write(html, path)
