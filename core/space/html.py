"""Safe HTML for cards and reports: user text is escaped, never rendered as HTML, and the small inline SVG
figures of the notebook cards are drawn from numbers only.

- ``esc``: any value as escaped HTML text (quotes too, so it is safe inside attributes);
- ``plot_text``: user text for plotly hover labels (escaped, wrapped with ``<br>``, at most six lines);
- ``fmt``: a number as a short string (``n/a`` for None/NaN);
- ``line_svg`` / ``scatter_svg`` / ``bars_svg``: tiny SVG figures (no script, no external reference).
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence

import numpy as np

PALETTE: tuple[str, ...] = ("#3366cc", "#dc3912", "#109618", "#ff9900", "#990099", "#0099c6", "#dd4477", "#66aa00")


def esc(value: object) -> str:
    """``value`` as text safe inside HTML elements and attributes."""
    return html.escape(str(value), quote=True)


def plot_text(text: object, width: int = 80) -> str:
    """User text for plotly hover labels: HTML-escaped, wrapped with <br> (at most six lines)."""
    words, lines, line = str(text).split(), [], ""
    for w in words:
        if line and len(line) + len(w) > width:
            lines.append(line)
            line = ""
        line = f"{line} {w}".strip()
    lines.append(line)
    return "<br>".join(html.escape(x) for x in lines[:6])


def clip(text: object, limit: int) -> str:
    """``text`` in at most ``limit`` characters, cut after a whole word with "…" (issue 41: the report's
    neighbour texts were cut mid-word); a single word longer than ``limit`` is cut where it must be."""
    text = str(text)
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    mid_word = not (head[-1].isspace() or text[limit - 1].isspace())
    if mid_word and len(head.split()) > 1:
        head = head.rsplit(None, 1)[0]  # drop the part of a word
    return head.rstrip(" ,;:-") + "…"


def fmt(value: object, spec: str = ".3f") -> str:
    """A number formatted with ``spec``; ``n/a`` for None and NaN, ints with thousands separators."""
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int | np.integer):
        return f"{int(value):,}"
    try:
        x = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return esc(value)
    return "n/a" if math.isnan(x) else format(x, spec)


def _scale(values: np.ndarray, lo: float, hi: float, out_lo: float, out_hi: float) -> np.ndarray:
    span = hi - lo if hi > lo else 1.0
    return out_lo + (values - lo) / span * (out_hi - out_lo)


def _svg(width: int, height: int, body: str, label: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="{esc(label)}" style="display:block">{body}</svg>'
    )


def line_svg(
    series: dict[str, Sequence[float]],
    *,
    width: int = 220,
    height: int = 70,
    log: bool = False,
    label: str = "spectrum",
) -> str:
    """One polyline per named series (same x positions 0..m-1), on a shared y axis (log10 when ``log``)."""
    clean = {}
    for name, ys in series.items():
        y = np.asarray(ys, np.float64)
        if log:
            y = np.log10(np.where(y > 0, y, np.nan))
        clean[name] = y
    finite = np.concatenate([y[np.isfinite(y)] for y in clean.values()] or [np.zeros(1)])
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    pad = 4
    body = [f'<rect x="0" y="0" width="{width}" height="{height}" fill="#fafafa" stroke="#ddd"/>']
    for i, (_name, y) in enumerate(clean.items()):
        x = _scale(np.arange(len(y), dtype=np.float64), 0, max(len(y) - 1, 1), pad, width - pad)
        yy = _scale(y, lo, hi, height - pad, pad)
        points = " ".join(f"{a:.1f},{b:.1f}" for a, b in zip(x, yy, strict=True) if np.isfinite(b))
        colour = PALETTE[i % len(PALETTE)]
        body.append(f'<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{points}"/>')
    return _svg(width, height, "".join(body), label)


def scatter_svg(
    x: np.ndarray,
    y: np.ndarray,
    groups: np.ndarray | None = None,
    *,
    width: int = 220,
    height: int = 160,
    label: str = "scatter",
    max_points: int = 2000,
) -> str:
    """Dots at (x, y), coloured by integer ``groups`` (at most ``max_points``, an even stride)."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    step = max(1, len(x) // max_points)
    x, y = x[::step], y[::step]
    g = None if groups is None else np.asarray(groups)[::step]
    pad = 6
    xs = _scale(x, float(np.nanmin(x)), float(np.nanmax(x)), pad, width - pad) if len(x) else x
    ys = _scale(y, float(np.nanmin(y)), float(np.nanmax(y)), height - pad, pad) if len(y) else y
    body = [f'<rect x="0" y="0" width="{width}" height="{height}" fill="#fafafa" stroke="#ddd"/>']
    for i, (a, b) in enumerate(zip(xs, ys, strict=True)):
        colour = PALETTE[int(g[i]) % len(PALETTE)] if g is not None else PALETTE[0]
        body.append(f'<circle cx="{a:.1f}" cy="{b:.1f}" r="1.6" fill="{colour}" fill-opacity="0.6"/>')
    return _svg(width, height, "".join(body), label)


def bars_svg(values: Sequence[float], *, width: int = 220, height: int = 70, label: str = "bars") -> str:
    """Vertical bars of ``values`` (>= 0), left to right."""
    v = np.asarray(values, np.float64)
    top = float(np.nanmax(v)) if len(v) and np.nanmax(v) > 0 else 1.0
    gap, pad = 2, 4
    w = (width - 2 * pad) / max(len(v), 1)
    body = [f'<rect x="0" y="0" width="{width}" height="{height}" fill="#fafafa" stroke="#ddd"/>']
    for i, value in enumerate(v):
        h = 0.0 if not np.isfinite(value) else value / top * (height - 2 * pad)
        x0 = pad + i * w
        body.append(
            f'<rect x="{x0:.1f}" y="{height - pad - h:.1f}" width="{max(w - gap, 1):.1f}" height="{h:.1f}" '
            f'fill="{PALETTE[0]}"/>'
        )
    return _svg(width, height, "".join(body), label)
