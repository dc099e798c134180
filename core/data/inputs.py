"""Texts from a corpus or from a pairs file, the kind auto-detected: what ``geometry`` and ``compare`` read.

A pairs file gives its sentences, first column then second (``Pairs.texts``), and keeps its pairs (for the
lexical-overlap and STS columns); a corpus gives its texts. ``auto`` reads a file as pairs when it loads as
pairs and has scores or a header naming sentence1 and sentence2, and as a corpus otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

from isoscope.errors import InputError

if TYPE_CHECKING:  # the loaders import pandas: imported where used, so INPUT_KINDS is cheap to import
    from isoscope.data.pairs import Pairs

InputKind = Literal["auto", "pairs", "corpus"]
INPUT_KINDS: tuple[InputKind, ...] = get_args(InputKind)
_HEADER_BYTES = 4096  # the pairs header must be on the first line within this many bytes


@dataclass
class TextInput:
    """The texts of a corpus or of a pairs file, with the pairs when it was a pairs file."""

    texts: list[str]
    pairs: Pairs | None = None  # the pairs whose sentences ``texts`` are (first column, then second)
    warnings: list[str] = field(default_factory=list)
    name: str = ""
    meta: Any = None  # a corpus's per-text metadata (pandas.DataFrame, one row per text), None for pairs

    def __len__(self) -> int:
        return len(self.texts)

    @property
    def kind(self) -> Literal["pairs", "corpus"]:
        return "pairs" if self.pairs is not None else "corpus"

    def distinct_texts(self) -> list[str]:
        """Each text once, in the order of first appearance."""
        return list(dict.fromkeys(self.texts))


def looks_like_pairs_header(source: str | Path) -> bool:
    """True when the first line of the file names both sentence1 and sentence2 (CSV/TSV header or JSONL keys)."""
    from isoscope.data.source import as_source

    with as_source(source, None).open() as f:
        head = f.read(_HEADER_BYTES)
    lines = head.decode("utf-8", errors="ignore").lower().splitlines()
    first = lines[0] if lines else ""
    return "sentence1" in first and "sentence2" in first


def load_input(source: str | Path, kind: InputKind = "auto", text_column: str | None = None) -> TextInput:
    """A corpus or a pairs file: ``kind`` says which, or ``auto`` detects it (see the module docstring).

    ``text_column`` names a corpus's text column (and makes ``auto`` read a corpus).
    """
    from isoscope.data.pairs import load_pairs

    if kind not in INPUT_KINDS:
        raise InputError(f"unknown input kind '{kind}'; choose one of {', '.join(INPUT_KINDS)}")
    if kind == "corpus" or (kind == "auto" and text_column):
        return _corpus(source, text_column)
    if kind == "pairs":
        return _pairs(load_pairs(source))
    try:
        pairs = load_pairs(source)
    except InputError:
        return _corpus(source, text_column)
    if pairs.scores is not None or looks_like_pairs_header(source):
        return _pairs(pairs)
    return _corpus(source, text_column)


def load_texts(sources: Sequence[str | Path], kind: InputKind = "auto", text_column: str | None = None) -> TextInput:
    """The texts of several corpora or pairs files (each read as ``load_input`` reads it), one after another,
    with all their warnings; ``pairs`` is set only for a single pairs file."""
    if len(sources) == 1:
        return load_input(sources[0], kind, text_column)
    parts = [load_input(source, kind, text_column) for source in sources]
    return TextInput(
        texts=[t for part in parts for t in part.texts],
        warnings=[w for part in parts for w in part.warnings],
        name=", ".join(part.name for part in parts),
    )


def _corpus(source: str | Path, text_column: str | None) -> TextInput:
    from isoscope.data.corpus import load_corpus

    corpus = load_corpus(source, text_column=text_column)
    return TextInput(corpus.texts, None, list(corpus.warnings), corpus.name, corpus.meta)


def _pairs(pairs: Pairs) -> TextInput:
    return TextInput(pairs.texts, pairs, list(pairs.warnings), pairs.name)
