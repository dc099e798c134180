"""The notebook cards: every result's ``_repr_html_``, a compact box with its headline numbers and one small
figure, so that a cell ending with a result shows something useful.

Every user-given string (a space's name, texts, metadata, file names) goes through ``html.esc``; figures are
inline SVG drawn from numbers (no script, nothing loaded from anywhere). Styles are inline, so a card looks
the same in JupyterLab, VS Code, Colab, nbviewer and an exported HTML file.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from isoscope.space.html import esc, fmt

BOX = (
    "font-family:system-ui,-apple-system,'Segoe UI',sans-serif;font-size:13px;line-height:1.35;"
    "border:1px solid #d0d7de;border-radius:8px;padding:10px 14px;margin:4px 0;max-width:760px;"
    "background:#fff;color:#1f2328"
)
TITLE = "font-weight:600;font-size:14px;margin-bottom:2px"
SUB = "color:#57606a;font-size:12px;margin-bottom:8px"
ROW = "display:flex;gap:18px;align-items:flex-start;flex-wrap:wrap"
STAT = "min-width:92px"
STAT_VALUE = "font-size:18px;font-weight:600;font-variant-numeric:tabular-nums"
STAT_LABEL = "color:#57606a;font-size:11px"
NOTE = "color:#9a6700;font-size:12px;margin-top:6px"
TABLE = "border-collapse:collapse;font-size:12px;margin-top:8px;font-variant-numeric:tabular-nums"
CELL = "border-bottom:1px solid #eaeef2;padding:2px 8px;text-align:right"
HEAD = "border-bottom:1px solid #d0d7de;padding:2px 8px;text-align:right;color:#57606a;font-weight:600"
MARK = "isoscope-card"  # class of every card's outer box (tests look for it in executed notebooks)


@dataclass
class CardStat:
    label: str
    value: str  # already formatted
    help: str = ""


@dataclass
class Card:
    """One card: a title, a line under it, headline numbers, one figure (inline SVG), a small table, notes."""

    title: str
    subtitle: str = ""
    stats: list[CardStat] = field(default_factory=list)
    figure: str = ""  # inline SVG (trusted: drawn by isoscope.space.html from numbers)
    caption: str = ""  # under the figure
    series: list[str] = field(default_factory=list)  # the figure's series, shown as a colour legend
    table: tuple[Sequence[str], Sequence[Sequence[object]]] | None = None  # header, rows (escaped here)
    notes: list[str] = field(default_factory=list)  # warnings, hints (escaped here)
    kind: str = ""  # what the card shows, as a class name: space, geometry, sts, ...

    def html(self) -> str:
        parts = [f'<div class="{MARK} {MARK}-{esc(self.kind)}" style="{BOX}">']
        parts.append(f'<div style="{TITLE}">{esc(self.title)}</div>')
        if self.subtitle:
            parts.append(f'<div style="{SUB}">{esc(self.subtitle)}</div>')
        parts.append(f'<div style="{ROW}">')
        if self.stats:
            parts.append('<div style="display:flex;gap:14px;flex-wrap:wrap;max-width:460px">')
            for s in self.stats:
                tip = f' title="{esc(s.help)}"' if s.help else ""
                parts.append(
                    f'<div style="{STAT}"{tip}><div style="{STAT_VALUE}">{esc(s.value)}</div>'
                    f'<div style="{STAT_LABEL}">{esc(s.label)}</div></div>'
                )
            parts.append("</div>")
        if self.figure:
            cap = f'<div style="{STAT_LABEL}">{legend(self.series)} {esc(self.caption)}</div>'
            parts.append(f"<div>{self.figure}{cap}</div>")
        parts.append("</div>")
        if self.table is not None:
            parts.append(table_html(*self.table))
        parts += [f'<div style="{NOTE}">{esc(n)}</div>' for n in self.notes]
        parts.append("</div>")
        return "".join(parts)


def table_html(header: Sequence[str], rows: Sequence[Sequence[object]], spec: str = ".3f") -> str:
    """A small table; numbers formatted with ``spec``, text escaped, the first column left-aligned."""
    left = ";text-align:left"
    head = "".join(f'<th style="{HEAD}{left if i == 0 else ""}">{esc(h)}</th>' for i, h in enumerate(header))
    body = []
    for row in rows:
        cells = []
        for i, v in enumerate(row):
            text = v if isinstance(v, str) else fmt(v, spec)
            cells.append(f'<td style="{CELL}{left if i == 0 else ""}">{esc(text)}</td>')
        body.append(f"<tr>{''.join(cells)}</tr>")
    return f'<table style="{TABLE}"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def legend(names: Sequence[str]) -> str:
    """Coloured names for a figure's series, in the palette's order (escaped)."""
    from isoscope.space.html import PALETTE

    return " ".join(
        f'<span style="color:{PALETTE[i % len(PALETTE)]}">&#9632;</span> {esc(n)}' for i, n in enumerate(names)
    )
