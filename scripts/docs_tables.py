"""How scripts/docs_numbers.py writes a result into the pages: the ``Result`` (its commands as its page shows them,
its table rendered from their JSON, the numbers its prose quotes) and the Markdown and number formats of the tables.
The results themselves are in scripts/docs_results_sts.py and docs_results_spaces.py.

A ``Result`` names its commands exactly as the page shows them (``shown``: text the page must hold; a template with
``$pooling``-style words, run in the page's shell loops, expands into one command per value), the files they read
that another command or a page's Python block writes first (``setup``), a function from the commands' JSON to the
table's Markdown lines (``table``: the page's ``<!-- numbers:NAME -->`` block) and one to the sentences of the prose
that quote them (``quotes``: page, text; each must stand on its page, line breaks aside). Standard library only:
the tests import it without a model.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

Get = Callable[[str], dict]  # a command as the page shows it -> the JSON it printed
Quotes = Callable[[Get], list[tuple[str, str]]]

RESULTS_PAGE = "docs/results.md"
TEST = "../shared/data/stsb/stsb-en-test.csv"
SPLITS = " ".join(f"../shared/data/stsb/stsb-en-{s}.csv" for s in ("train", "dev", "test"))


@dataclass(frozen=True)
class Snippet:
    """The ```python block of ``page`` that holds ``holds``, run as a setup step (it writes a file)."""

    page: str
    holds: str

    def __str__(self) -> str:
        return f"the python block of {self.page} holding {self.holds!r}"


def no_quotes(_: Get) -> list[tuple[str, str]]:
    return []


@dataclass(frozen=True)
class Result:
    name: str  # the marker's NAME
    page: str
    commands: tuple[str, ...]
    table: Callable[[Get], list[str]] | None  # None: prose only
    quotes: Quotes = no_quotes
    shown: tuple[str, ...] = ()
    setup: tuple[str | Snippet, ...] = field(default=())
    # not regenerated yet (too long for the machines at hand): what its page says instead, next to its table, which
    # stays outside markers; its commands run only when it is named (python scripts/docs_numbers.py NAME)
    pending: str = ""


def expand(template: str, **values: Sequence[str]) -> tuple[str, ...]:
    """One command per combination of the template words' values (the first word varies slowest), as the page's
    nested shell loops (``loop``) run them."""
    out = []
    for combo in itertools.product(*values.values()):
        command = template
        for word, value in zip(values, combo, strict=True):
            command = command.replace(word, value)
        out.append(command)
    return tuple(out)


def loop(poolings: Sequence[str], methods: Sequence[str]) -> str:
    """The shell loops a page runs a ``$pooling``/``$method`` template in."""
    return f"for pooling in {' '.join(poolings)}; do for method in {' '.join(methods)}; do"


# ------------------------------------------------------------------ formatting


def markdown(header: Sequence[str], align: str, rows: Iterable[Sequence[str]]) -> list[str]:
    """A Markdown table; ``align`` has one letter per column: ``-`` as written (``---``), ``r`` right (``---:``)."""
    rule = ["---:" if a == "r" else "---" for a in align]
    assert len(rule) == len(header)
    return [f"| {' | '.join(header)} |", f"|{'|'.join(rule)}|", *(f"| {' | '.join(row)} |" for row in rows)]


def f(x: float | None, digits: int) -> str:
    """``x`` to ``digits`` decimals; -0.000 is written 0.000 only where the value is zero, never by rounding."""
    return "" if x is None else f"{x:.{digits}f}"


def small(x: float) -> str:
    """3 decimals, or 2 significant digits in e-notation below 0.001 (partition isotropy reaches 1e-5)."""
    return f"{x:.3f}" if abs(x) >= 0.001 or x == 0 else f"{x:.1e}"


def bold(text: str, on: bool) -> str:
    return f"**{text}**" if on else text


def pct(x: float, digits: int = 1) -> str:
    return f"{100 * x:.{digits}f}%"


def pm(stat: dict, digits: int) -> str:
    """mean +- sd over the seeds (the mean alone for one seed)."""
    return (
        f(stat["mean"], digits) if stat.get("sd") is None else f"{stat['mean']:.{digits}f} +- {stat['sd']:.{digits}f}"
    )
