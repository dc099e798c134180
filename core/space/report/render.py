"""A report as one self-contained HTML file: plotly.js inlined once, every figure drawn from data in the file,
no request to any host (it opens offline and can be mailed), user text escaped, the numbers as JSON too.
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

import numpy as np

from isoscope.space.html import clip, esc, fmt

if TYPE_CHECKING:
    import pandas as pd
    import plotly.graph_objects as go

    from isoscope.space.report.content import Report

FIGURE_CONFIG = {"displaylogo": False, "responsive": True, "toImageButtonOptions": {"format": "png", "scale": 2}}
MAX_CELL_CHARS = 300
CSS = """
:root { --ink:#1f2328; --muted:#57606a; --line:#d8dee4; --accent:#0b5cad; --bg:#ffffff; --soft:#f6f8fa; }
* { box-sizing: border-box; }
body { margin:0; background:var(--bg); color:var(--ink);
  font:15px/1.55 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif; }
main { max-width:1080px; margin:0 auto; padding:32px 28px 64px; }
header h1 { font-size:28px; line-height:1.2; margin:0 0 4px; }
header .sub { color:var(--muted); margin:0 0 18px; }
nav { font-size:13px; margin:0 0 22px; color:var(--muted); }
nav a { color:var(--accent); text-decoration:none; margin-right:14px; }
.verdict { background:var(--soft); border-left:4px solid var(--accent); padding:12px 16px; margin:0 0 20px;
  border-radius:4px; }
.verdict p { margin:4px 0; }
.tiles { display:flex; flex-wrap:wrap; gap:12px; margin:0 0 26px; }
.tile { border:1px solid var(--line); border-radius:8px; padding:10px 14px; min-width:150px; flex:1 1 150px; }
.tile .v { font-size:24px; font-weight:650; font-variant-numeric:tabular-nums; }
.tile .l { font-size:12px; color:var(--muted); text-transform:uppercase; letter-spacing:.03em; }
.tile .n { font-size:12px; color:var(--muted); }
section { margin:34px 0 0; padding-top:6px; border-top:1px solid var(--line); }
section h2 { font-size:20px; margin:12px 0 8px; }
section p { max-width:820px; }
.figure { margin:12px 0 18px; border:1px solid var(--line); border-radius:6px; padding:4px; }
table { border-collapse:collapse; font-size:13px; margin:6px 0 18px; font-variant-numeric:tabular-nums;
  width:100%; }
caption { text-align:left; font-weight:600; padding:4px 0; color:var(--ink); }
th, td { border-bottom:1px solid var(--line); padding:4px 8px; text-align:right; vertical-align:top; }
th { color:var(--muted); font-weight:600; background:var(--soft); }
td.t, th.t { text-align:left; }
.warn { color:#9a6700; }
dl { display:grid; grid-template-columns:max-content 1fr; gap:4px 18px; font-size:13px; }
dt { color:var(--muted); } dd { margin:0; word-break:break-all; }
code { font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,monospace; background:var(--soft); padding:1px 4px;
  border-radius:3px; }
footer { margin-top:40px; color:var(--muted); font-size:12px; }
@media print { nav { display:none; } .figure { break-inside:avoid; } section { break-before:auto; } }
"""


def _cell(value: Any) -> tuple[str, bool]:
    """(escaped text, is text) of one table cell."""
    if isinstance(value, str):
        return esc(clip(value, MAX_CELL_CHARS)), True
    if isinstance(value, bool | np.bool_):
        return ("yes" if value else "no"), False
    if isinstance(value, int | np.integer):
        return fmt(int(value)), False
    if isinstance(value, float | np.floating):
        x = float(value)
        spec = ".3f" if math.isnan(x) or abs(x) < 1000 else ",.0f"
        return fmt(x, spec), False
    return esc(value), True


def table_html(caption: str, frame: pd.DataFrame) -> str:
    cols = list(frame.columns)
    text_cols = {c for c in cols if frame[c].dtype == object}
    head = "".join(f'<th class="{"t" if c in text_cols else ""}">{esc(c)}</th>' for c in cols)
    body = []
    for row in frame.itertuples(index=False):
        cells = []
        for value in row:
            text, is_text = _cell(value)
            cells.append(f'<td class="{"t" if is_text else ""}">{text}</td>')
        body.append(f"<tr>{''.join(cells)}</tr>")
    return (
        f"<table><caption>{esc(caption)}</caption><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    )


def figure_html(fig: go.Figure, div_id: str) -> str:
    fig.update_layout(template="plotly_white", font={"family": "system-ui, sans-serif"})
    inner = fig.to_html(full_html=False, include_plotlyjs=False, config=FIGURE_CONFIG, div_id=div_id)
    return f'<div class="figure">{inner}</div>'


def json_script(data: dict[str, Any]) -> str:
    """The numbers as JSON inside the page, safe in a script element (``<`` escaped)."""
    from isoscope.data.export import to_jsonable

    text = json.dumps(to_jsonable(data), allow_nan=False, default=str).replace("<", "\\u003c")
    return f'<script type="application/json" id="isoscope-data">{text}</script>'


def _made(made: dict[str, Any]) -> str:
    rows = [("date", made["date"]), ("command", made["command"])]
    prov = made["provenance"]
    flat = (
        prov.items() if "a" not in prov else [(f"{side} {k}", v) for side in ("a", "b") for k, v in prov[side].items()]
    )
    rows += [(str(k), v) for k, v in flat]
    rows += [(f"setting {k}", v) for k, v in made["settings"].items()]
    rows += [(f"version {k}", v) for k, v in made["versions"].items()]
    rows.append(("seconds to build", made["seconds"]))
    items = "".join(f"<dt>{esc(k)}</dt><dd><code>{esc(v)}</code></dd>" for k, v in rows)
    return f'<section id="made"><h2>How it was made</h2><dl>{items}</dl></section>'


def render(report: Report) -> str:
    """The report as one HTML document (a string)."""
    from importlib.metadata import version

    from plotly.offline import get_plotlyjs

    nav = "".join(f'<a href="#{esc(s.key)}">{esc(s.title)}</a>' for s in report.sections)
    nav += '<a href="#made">How it was made</a>'
    tiles = "".join(
        f'<div class="tile"><div class="l">{esc(label)}</div><div class="v">{esc(value)}</div>'
        f'<div class="n">{esc(note)}</div></div>'
        for label, value, note in report.tiles
    )
    verdict = "".join(f"<p>{esc(p)}</p>" for p in report.verdict)
    warnings = "".join(f'<p class="warn">{esc(w)}</p>' for w in report.warnings)
    sections, n_fig = [], 0
    for s in report.sections:
        parts = [f'<section id="{esc(s.key)}"><h2>{esc(s.title)}</h2>']
        parts += [f"<p>{esc(p)}</p>" for p in s.paragraphs]
        for fig in s.figures:
            n_fig += 1
            parts.append(figure_html(fig, f"figure-{n_fig}"))
        parts += [table_html(caption, frame) for caption, frame in s.tables]
        parts.append("</section>")
        sections.append("".join(parts))
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="generator" content="Isoscope">'  # how isoscope.data.outputs.REPORT knows its own files
        f"<title>{esc(report.title)}</title><style>{CSS}</style>"
        f'<script type="text/javascript">{get_plotlyjs()}</script></head><body><main>'
        f'<header><h1>{esc(report.title)}</h1><p class="sub">{esc(report.subtitle)}</p></header>'
        f'<nav>{nav}</nav><div class="verdict">{verdict}{warnings}</div><div class="tiles">{tiles}</div>'
        + "".join(sections)
        + _made(report.made)
        + f"<footer>Made with Isoscope {esc(version('isoscope'))}: see the geometry of embedding spaces, and fix it. "
        "Every figure is interactive (zoom, hover, PNG from its toolbar) and drawn from data inside this file.</footer>"
        + json_script(report.data)
        + "</main></body></html>"
    )
