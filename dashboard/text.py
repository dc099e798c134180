"""User text, shown safely: never rendered as HTML.

``literal`` escapes Markdown for ``st.markdown``/``st.error``; ``plot_text`` HTML-escapes (and wraps) text for
plotly hover labels, which render a subset of HTML tags. Pure functions: figures use them without Streamlit.
"""

from __future__ import annotations

import html
import re

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:])")


def literal(text: object) -> str:
    """Escape Markdown so user text shows exactly as typed inside st.markdown/st.error."""
    return _MD_SPECIAL.sub(r"\\\1", " ".join(str(text).split()))


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
