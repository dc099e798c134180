"""The names and defaults of a migration run, light to import (the command line's help reads them).

Directions: ``new->legacy`` maps the new model's query vectors into the old space (the index is untouched; every
query pays the map); ``old->new`` maps the stored old vectors into the new space once (no text re-embedded; queries
are embedded by the new model as they are).
"""

from __future__ import annotations

from typing import Literal, get_args

Direction = Literal["new->legacy", "old->new"]
DIRECTIONS: tuple[Direction, ...] = get_args(Direction)
NEW_TO_LEGACY: Direction = "new->legacy"
OLD_TO_NEW: Direction = "old->new"
DIRECTION_WORDS: dict[str, str] = {
    NEW_TO_LEGACY: "the new model's queries mapped into the old space; the index is untouched",
    OLD_TO_NEW: "the stored old vectors mapped into the new space once; no text re-embedded",
}

# the adapters a run fits by default (each one map, in the grammar of isoscope.migrate.methods); mlp trains a small
# network per direction (seconds to minutes: its cost is said before a long run)
DEFAULT_ADAPTERS: tuple[str, ...] = ("procrustes", "ridge", "ridge:procrustes", "lowrank:64", "mlp")
DEFAULT_FIT_FRACTION = 0.05  # of the corpus's documents, when no fit texts are given
DEFAULT_CURVE: tuple[float, ...] = (0.01, 0.02, 0.05, 0.10, 0.25)  # shares of the corpus on the fit-size curve
DEFAULT_THRESHOLD = 0.9  # a kept share below this (its 95% lower bound) says re-embed
HOLDOUT = 0.2  # the share of the fit pairs a ridge penalty or an MLP's early stop is chosen on
TOP_K = 10  # the label-free measures compare top-10 lists (the papers' recall@10)
HELDOUT_QUERIES = 2_000  # held-out texts searched for the shared top-10 (a seeded sample beyond)
CURVE_RESAMPLES = 2_000  # the curve's intervals: each point is one more fit, search and bootstrap

Verdict = Literal["stay", "re-embed", "migrate"]
VERDICTS: tuple[Verdict, ...] = get_args(Verdict)


def parse_direction(text: str) -> Direction:
    """A direction as a user types it (``new->legacy``, ``old->new``; case and spaces ignored, ``new-legacy`` and
    ``old-new`` too); InputError naming the two."""
    from isoscope.errors import InputError

    key = "".join(str(text).split()).lower().replace("->", "-").replace("_", "-")
    for direction in DIRECTIONS:
        if key == direction.replace("->", "-"):
            return direction
    raise InputError(f"unknown direction '{str(text)[:40]}'; choose {' or '.join(DIRECTIONS)}")


def directions_help() -> str:
    return "; ".join(f"{d}: {w}" for d, w in DIRECTION_WORDS.items())
