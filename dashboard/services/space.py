"""The session's space when it is a vectors file: the keyed ``SessionSpace`` value, and the cached loaders behind it.

A ``SessionSpace`` is the sidebar's model (``table`` None: the model computes every vector) or a table of vectors
computed elsewhere (``isoscope.data.load_vector_file``: uploaded in the sidebar or given to ``isoscope app``).
Its ``key`` is the file's provenance (``VectorOrigin.fingerprint``: file, column, digest of the decoded vectors)
and the texts it carries, so every cache of every page that uses it is keyed by what the vectors are.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd
import streamlit as st

from isoscope.cache import make_key, text_digest
from isoscope.dashboard.services.keyed import HASH_FUNCS, Texts, Vectors
from isoscope.data import Corpus, VectorTable, load_vector_file

_parsing = threading.BoundedSemaphore(2)  # as services.data: a class uploading at once decodes two at a time


@dataclass(frozen=True, eq=False)
class SessionSpace:
    """The sidebar's model (``table`` None) or a vectors file; ``source``: "model", "upload" or "launch"."""

    table: VectorTable | None = None
    source: str = "model"

    @property
    def is_model(self) -> bool:
        return self.table is None

    @cached_property
    def key(self) -> str:
        """The file's provenance and its texts ("" for the model: its vectors carry the model's key)."""
        if self.table is None:
            return ""
        return make_key("space", self.table.origin.fingerprint, self.table.origin.text_column or "", self.texts_key)

    @property
    def label(self) -> str:
        return "" if self.table is None else self.table.name

    @property
    def dims(self) -> int:
        return 0 if self.table is None else self.table.dims

    @property
    def has_texts(self) -> bool:
        return self.table is not None and self.table.texts is not None

    @cached_property
    def texts(self) -> list[str]:
        """One text per row: the file's text column, or ``row 0``, ``row 1``, ... when it has none."""
        if self.table is None:
            return []
        return list(self.table.texts) if self.table.texts is not None else [f"row {i}" for i in range(len(self.table))]

    @cached_property
    def texts_key(self) -> str:
        return text_digest(self.texts)

    def corpus(self) -> Corpus:
        """The file's rows as a corpus: its texts and its metadata columns."""
        assert self.table is not None
        meta = self.table.meta if self.table.meta is not None else pd.DataFrame(index=range(len(self.table)))
        return Corpus(self.texts, meta.reset_index(drop=True), list(self.table.warnings), self.table.name)

    def vectors(self) -> Vectors:
        """Every row's vector (n, d), named by the space's key."""
        assert self.table is not None
        return Vectors(self.key, self.table.vectors)


HASH_FUNCS_SPACE = {**HASH_FUNCS, SessionSpace: lambda sp: sp.key}


@st.cache_data(show_spinner=False, max_entries=8)
def parse_upload(
    data: bytes,
    name: str,
    column: str | None,
    *,
    text_column: str | None,
    texts: bytes | None = None,
    texts_name: str | None = None,
) -> VectorTable:
    """An uploaded vectors file (and, for .npy/.safetensors, a texts file), through the bounded loader."""
    with _parsing:
        return load_vector_file(data, column, text_column=text_column, texts=texts, name=name, texts_name=texts_name)


@st.cache_resource(show_spinner="Reading the vectors file given to isoscope app…", max_entries=2)
def _launched(path: str, column: str | None, text_column: str | None, mtime: float) -> VectorTable:
    return load_vector_file(path, column, text_column=text_column)


def launched_table(path: str, column: str | None, text_column: str | None) -> VectorTable:
    """The vectors file ``isoscope app`` was started on, read once (again when the file changes)."""
    return _launched(path, column, text_column, os.stat(path).st_mtime)


@st.cache_data(show_spinner=False, max_entries=32, hash_funcs=HASH_FUNCS_SPACE)
def _lookup(space: SessionSpace, items: Texts) -> np.ndarray:
    assert space.table is not None
    return space.table.vectors_for(list(items.items))  # by text; a file without texts only by position


def vectors_for(space: SessionSpace, items: Sequence[str] | Texts) -> Vectors:
    """The space's vectors of ``items`` (len(items), d), looked up by text (InputError naming a missing text);
    the file's own rows are the whole array."""
    items = items if isinstance(items, Texts) else Texts(text_digest(list(items)), tuple(items))
    if items.key == space.texts_key:
        return space.vectors()
    return Vectors(make_key("space-rows", space.key, items.key), _lookup(space, items))
