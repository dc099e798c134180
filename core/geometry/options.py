"""The geometry analyses' option tuples, importable without numpy (``isoscope geometry --help`` builds its parser
from them): token spaces and contextual modes of the frequency table, edit-distance levels, frequency choices."""

from __future__ import annotations

from typing import Literal, get_args

Space = Literal["static", "contextual"]
SPACES: tuple[Space, ...] = get_args(Space)  # token vectors: the input embedding matrix, or one layer's outputs
ContextualMode = Literal["occurrence", "mean"]
CONTEXTUAL_MODES: tuple[ContextualMode, ...] = get_args(ContextualMode)  # sampled occurrences, or a mean per id
EditLevel = Literal["word", "char"]
EDIT_LEVELS: tuple[EditLevel, ...] = get_args(EditLevel)
FrequencyChoice = Literal["both", "static", "contextual", "none"]
FREQUENCY_CHOICES: tuple[FrequencyChoice, ...] = get_args(FrequencyChoice)  # spaces of the frequency table
