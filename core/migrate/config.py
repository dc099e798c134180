"""What a migration run fits and measures: ``MigrationConfig``, one frozen value checked once where it is made.

config = MigrationConfig(methods=("procrustes", "ridge"), fit_fraction=0.05, curve=(0.01, 0.05, 0.25))

Every field is a plain value (the dashboard's cache key, the command's options, ``to_dict`` in the JSON);
``__post_init__`` refuses what cannot run, in one line naming the field, before anything is embedded.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from isoscope.data.limits import check_count
from isoscope.errors import InputError
from isoscope.migrate.options import (
    CURVE_RESAMPLES,
    DEFAULT_CURVE,
    DEFAULT_FIT_FRACTION,
    DEFAULT_THRESHOLD,
    DIRECTIONS,
    HELDOUT_QUERIES,
    TOP_K,
    Direction,
    parse_direction,
)
from isoscope.retrieval.options import COVERAGE, DEPTH, HEADLINE, METRICS
from isoscope.retrieval.stats import RESAMPLES


def _share(value: object, name: str, *, zero: bool) -> float:
    """``value`` as a share of the corpus in (0, 1) (``zero``: [0, 1)); InputError naming ``name`` otherwise."""
    low = "0" if zero else "more than 0"
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InputError(f"{name} must be a number between {low} and less than 1; got {value!r:.40}")
    if not (0 <= value < 1 if zero else 0 < value < 1):
        raise InputError(f"{name} must be between {low} and less than 1 (a share of the corpus); got {value}")
    return float(value)


@dataclass(frozen=True)
class MigrationConfig:
    """What ``evaluate_migration`` fits and measures.

    - ``methods``: adapter method strings (``isoscope.migrate.methods``); None: ``DEFAULT_ADAPTERS``, each where the
      data allows it (lowrank:64 needs more than 64 dimensions, mlp 20 pairs: left out otherwise, and said so).
    - ``directions``: ``new->legacy`` and/or ``old->new`` (``isoscope.migrate.options``).
    - ``fit_fraction``: the share of the corpus's documents whose old and new vectors are the fit pairs (a seeded
      sample; no text embedded again); None: 0.05 without fit texts, 0 with them (both may be combined).
    - ``curve``: shares of the corpus for the curve of kept share against fit pairs (each linear adapter, each
      direction, each of ``curve_seeds``); () for none.
    - ``resamples``: of every paired test and interval; the curve's intervals use ``curve_resamples`` (at most
      ``resamples``): each point is one more fit, search and bootstrap.
    - ``threshold``: a kept share whose 95% lower bound is below it says re-embed (and fails the command's gate).
    - ``tested``: the metrics tested and shown as kept shares (the first is the headline the verdict reads).
    """

    methods: tuple[str, ...] | None = None
    directions: tuple[Direction, ...] = DIRECTIONS
    fit_fraction: float | None = None
    curve: tuple[float, ...] = DEFAULT_CURVE
    curve_seeds: tuple[int, ...] = (0,)
    seed: int = 0
    resamples: int = RESAMPLES
    curve_resamples: int = CURVE_RESAMPLES
    threshold: float = DEFAULT_THRESHOLD
    tested: tuple[str, ...] = (HEADLINE, COVERAGE)
    depth: int = DEPTH
    k: int = TOP_K
    heldout_queries: int = HELDOUT_QUERIES

    def __post_init__(self) -> None:
        set_ = lambda name, value: object.__setattr__(self, name, value)  # noqa: E731 (frozen: normalised once)
        if self.methods is not None:
            set_("methods", self._methods(self.methods))
        directions = tuple(dict.fromkeys(parse_direction(d) for d in self.directions))
        if not directions:
            raise InputError(f"give at least one direction: {' or '.join(DIRECTIONS)}")
        set_("directions", directions)
        if self.fit_fraction is not None:
            set_("fit_fraction", _share(self.fit_fraction, "the fit fraction", zero=True))
        set_("curve", tuple(sorted({_share(f, "a curve share", zero=False) for f in self.curve})))
        set_("curve_seeds", tuple(dict.fromkeys(int(s) for s in self.curve_seeds)) or (0,))
        check_count("resamples", self.resamples, "resamples")
        check_count("resamples", self.curve_resamples, "curve resamples")
        if isinstance(self.threshold, bool) or not isinstance(self.threshold, int | float):
            raise InputError(f"the threshold must be a number between 0 and 1; got {self.threshold!r:.40}")
        if not 0 <= self.threshold <= 1:
            raise InputError(f"the threshold must be between 0 and 1 (a kept share); got {self.threshold}")
        unknown = [m for m in self.tested if m not in METRICS]
        if unknown or not self.tested:
            raise InputError(f"unknown metric '{(unknown or [''])[0]}'; choose from {', '.join(METRICS)}")
        if self.depth < 10:
            raise InputError(f"the search depth must be at least 10 (nDCG@10 reads ten documents); got {self.depth}")
        if not 1 <= self.k <= self.depth:
            raise InputError(f"k must be between 1 and the depth {self.depth}; got {self.k}")
        if self.heldout_queries < 1:
            raise InputError(f"heldout_queries must be at least 1; got {self.heldout_queries}")

    @staticmethod
    def _methods(methods: tuple[str, ...]) -> tuple[str, ...]:
        """Each method string parsed (InputError listing the adapters for a bad one), in its canonical spelling,
        each once."""
        from isoscope.migrate.methods import make_adapter

        if isinstance(methods, str):
            methods = (methods,)
        canonical = tuple(dict.fromkeys(make_adapter(m).method for m in methods))
        if not canonical:
            raise InputError("give at least one adapter method (procrustes, ridge, ...)")
        return canonical

    def fraction_for(self, has_fit_texts: bool) -> float:
        """The share of the corpus sampled as fit pairs: as given, else 0.05 without fit texts and 0 with them."""
        if self.fit_fraction is not None:
            return self.fit_fraction
        return 0.0 if has_fit_texts else DEFAULT_FIT_FRACTION

    @property
    def headline(self) -> str:
        return self.tested[0]

    def to_dict(self) -> dict:
        return asdict(self)
