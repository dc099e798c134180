"""The curve of what an adapter keeps against the number of fit pairs: each linear adapter of a run, each
direction, fitted again on seeded samples of the corpus (``MigrationConfig.curve``: shares of its documents, each of
``curve_seeds``) and on the generic fit texts alone, and scored on the whole task.

The x axis is pairs, not a percentage: what a fit needs is pairs (a 1% sample of a large corpus can hold more than
a 25% sample of a small one). Each point's c / b and recovered fraction have paired bootstrap intervals
(``curve_resamples``), its label-free share (of the new model's own top k) none: it is a mean over the same
queries as every other point's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from isoscope.migrate.adapters import MIN_PAIRS
from isoscope.migrate.measure import kept_shares, shared_top, top_ids
from isoscope.migrate.options import NEW_TO_LEGACY
from isoscope.migrate.results import CurvePoint
from isoscope.migrate.spaces import fit_adapter
from isoscope.retrieval.metrics import per_query
from isoscope.retrieval.search import search
from isoscope.sampling import sample_indices

if TYPE_CHECKING:
    from isoscope.migrate.results import MigrationResult
    from isoscope.migrate.spaces import SpacePair


def linear_methods(result: MigrationResult) -> list[str]:
    """The run's affine adapters, in its order (the MLP and the local adapter are left off the curve)."""
    return list(dict.fromkeys(a.method for a in result.adapters if type(a.adapter).affine))


def curve_sizes(n: int, result: MigrationResult, n_generic: int) -> tuple[list[tuple], list[str]]:
    """([(source, share, seed, corpus rows)], notes): every corpus share of the config at each seed with at least
    ``MIN_PAIRS`` pairs, then the generic texts alone."""
    config, sizes, notes = result.config, [], []
    for share in config.curve:
        k = round(share * n)
        if k < MIN_PAIRS:
            notes.append(f"curve: {share:g} of {n:,} documents is {k} pair(s), fewer than {MIN_PAIRS}: left out")
            continue
        sizes += [("corpus", share, seed, sample_indices(n, k, seed)) for seed in config.curve_seeds]
    if n_generic >= MIN_PAIRS:
        sizes.append(("generic", None, config.seed, np.zeros(0, np.int64)))
    return sizes, notes


def _index(spaces: SpacePair, adapter, direction: str, queries_b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(queries, documents) of the adapted search: new->legacy g(queries) in the old index; old->new the queries
    as the new model gives them in the mapped index."""
    if direction == NEW_TO_LEGACY:
        return adapter.transform(queries_b), spaces.Da
    return queries_b, adapter.transform(spaces.Da)


def _held_reference(spaces: SpacePair, rows: np.ndarray, result: MigrationResult) -> tuple[np.ndarray, np.ndarray]:
    """(searched held-out rows (m,), their top k in the new space (m, k)) for a point fitted on ``rows``."""
    config = result.config
    held = np.setdiff1d(np.arange(len(spaces.Db)), rows)
    searched = held[sample_indices(len(held), config.heldout_queries, config.seed)]
    k = min(config.k, len(spaces.Db) - 1)
    return searched, top_ids(spaces.Db[searched], spaces.Db, k, exclude=searched)


def _point(spaces: SpacePair, result: MigrationResult, fitted: tuple, ref_top: np.ndarray | None) -> CurvePoint:
    """One adapter at one fit size, scored: the label-free share, and with labels c / b and the recovered fraction."""
    (source, share, seed, rows), method, direction = fitted
    config, task = result.config, result.task
    pairs = spaces.fit_pairs(rows) if source == "corpus" else (spaces.Xa, spaces.Xb)
    adapter, _ = fit_adapter(method, direction, pairs, seed)
    ratio = recovered = None
    if task is None:
        searched, held_top = _held_reference(spaces, rows, result)
        Q, D = _index(spaces, adapter, direction, spaces.Db[searched])
        agreement = float(shared_top(top_ids(Q, D, held_top.shape[1], exclude=searched), held_top).mean())
    else:
        Q, D = _index(spaces, adapter, direction, spaces.Qb)
        ranking = search(Q, D, min(config.depth, len(D)))
        agreement = float(shared_top(ranking.ids[:, : ref_top.shape[1]], ref_top).mean())
        h = config.headline
        c = per_query(task, ranking)[h]
        a, b = (result.system(name).scores[h] for name in ("old", "new"))
        kept = kept_shares(
            a,
            b,
            c,
            new_vs_old=result.system("new").tests[h],
            resamples=min(config.curve_resamples, config.resamples),
            seed=config.seed,
        )
        ratio, recovered = kept.ratio, kept.recovered
    return CurvePoint(method, direction, source, share, seed, len(pairs[0]), agreement, ratio, recovered)


def draw_curve(
    spaces: SpacePair,
    result: MigrationResult,
    *,
    ref_top: np.ndarray | None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[list[CurvePoint], list[str]]:
    """Every curve point of ``result``'s config (module docs): (points, notes). ``ref_top``: the new model's top k
    (q, k) of the task's queries (None without a task)."""
    sizes, notes = curve_sizes(len(spaces.Da), result, spaces.n_generic)
    methods = linear_methods(result)
    if not methods:
        return [], [*notes, "curve: no linear adapter in this run (the curve draws procrustes, ridge and lowrank)"]
    jobs = [(size, m, d) for size in sizes for m in methods for d in result.config.directions]
    points = []
    for i, job in enumerate(jobs):
        points.append(_point(spaces, result, job, ref_top))
        if progress is not None:
            progress(i + 1, len(jobs))
    return points, notes
