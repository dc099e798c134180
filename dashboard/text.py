"""User text, shown safely: never rendered as HTML.

``literal`` escapes Markdown for ``st.markdown``/``st.error``; ``plot_text`` HTML-escapes (and wraps) text for
plotly hover labels, which render a subset of HTML tags. Pure functions: figures use them without Streamlit.
"""

from __future__ import annotations

import re

from isoscope.space.html import plot_text

__all__ = ["literal", "plot_text"]

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:])")


def literal(text: object) -> str:
    """Escape Markdown so user text shows exactly as typed inside st.markdown/st.error."""
    return _MD_SPECIAL.sub(r"\\\1", " ".join(str(text).split()))
