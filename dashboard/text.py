"""User text, shown safely: never rendered as HTML.

``literal`` escapes Markdown for ``st.markdown``/``st.error``; ``plot_text`` HTML-escapes (and wraps) text for
plotly hover labels, which render a subset of HTML tags. Pure functions: figures use them without Streamlit.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from isoscope.space.html import plot_text

__all__ = ["glossary", "literal", "plot_text"]

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:])")


def literal(text: object) -> str:
    """Escape Markdown so user text shows exactly as typed inside st.markdown/st.error."""
    return _MD_SPECIAL.sub(r"\\\1", " ".join(str(text).split()))


def glossary(options: Iterable[object], describe: Callable[[str], str], lead: str = "") -> str:
    """A widget's ``help=``: ``lead``, then one Markdown line per option, ``**name**: describe(name)``. Options
    that share one description (every ``layer:K``) share one line: ``layer:0 … layer:6``."""
    groups: dict[str, list[str]] = {}
    for option in options:
        groups.setdefault(describe(str(option)), []).append(str(option))
    lines = []
    for words, names in groups.items():
        label = f"{names[0]} … {names[-1]}" if len(names) > 2 else ", ".join(names)
        lines.append(f"- **{literal(label)}**: {words}")
    return "\n\n".join([lead, "\n".join(lines)] if lead else ["\n".join(lines)])
