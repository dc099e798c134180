"""A migration run from vectors: the old model (a), full re-embedding with the new one (b), and each adapter in each
direction (c), on one retrieval task, with and without relevance labels.

result = evaluate_migration((Qa, Da), (Qb, Db), task, config=MigrationConfig(methods=("procrustes", "ridge")))
result.recommendation.words    # "migrate with ridge (old->new): ..." / "stay: ..." / "re-embed: ..."

- The fit pairs: a seeded sample of the corpus's documents (``fit_fraction``), whose rows of Da and Db are the
  pairs (nothing embedded again), and/or generic texts embedded by both (``fit``). The other documents are held
  out: the label-free measures of the map read them.
- new->legacy: g fitted on (Xb -> Xa); the new model's queries mapped, searched in the untouched old index:
  ``search(g(Qb), Da)``. old->new: f fitted on (Xa -> Xb); every stored vector mapped: ``search(Qb, f(Da))``; and
  partly re-embedded (the fit documents keep their true new vectors, the rest mapped).
- Labelled: every metric per query by pytrec_eval (``isoscope.retrieval.metrics.per_query``), b tested against a
  and each c against b (``isoscope.retrieval.stats.paired_test``), c / b and (c - a) / (b - a) with paired bootstrap
  intervals (``isoscope.migrate.measure``; the second only where b - a's interval lies above 0). Label-free:
  recall@10 of each search against the new model's own exact top 10; on held-out texts the cosine of mapped and
  true vectors and the shared top 10.
- The recommendation reads the label-free measure only (so the labelled numbers are an honest test of the
  choice); the verdict reads the labelled ones (``recommend``).

Orchestration only: search is ``isoscope.retrieval.search``, metrics pytrec_eval's, tests and intervals
``isoscope.retrieval.stats``, adapters ``isoscope.migrate.methods.make_adapter``, the curve ``isoscope.migrate.curve``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from isoscope.errors import InputError
from isoscope.migrate.adapters import MIN_PAIRS
from isoscope.migrate.config import MigrationConfig
from isoscope.migrate.measure import kept_shares, row_cosines, shared_top, timed_transform, top_ids
from isoscope.migrate.options import DEFAULT_ADAPTERS, NEW_TO_LEGACY, OLD_TO_NEW
from isoscope.migrate.recommend import disagreement_notes, recommend
from isoscope.migrate.results import AdapterRun, HeldOut, MigrationResult, SideInfo, System
from isoscope.migrate.spaces import Side, SpacePair, check_spaces, fit_adapter, fit_split
from isoscope.retrieval.metrics import per_query
from isoscope.retrieval.search import search
from isoscope.retrieval.stats import paired_test
from isoscope.sampling import sample_indices

if TYPE_CHECKING:
    from isoscope.migrate.adapters import Adapter
    from isoscope.retrieval.task import RetrievalTask

StageProgress = Callable[[str], Callable[..., None] | None]  # "fit" / "curve": (done, total)
LOWRANK_DEFAULT = 64


def plan_methods(config: MigrationConfig, n_pairs: int, dims: tuple[int, int]) -> tuple[list[str], list[str]]:
    """(the methods to fit, notes): the config's, or ``DEFAULT_ADAPTERS`` less those this data cannot fit (each said)."""
    from isoscope.migrate.mlp import MIN_MLP_PAIRS

    if config.methods is not None:
        return list(config.methods), []
    methods, notes = [], []
    for m in DEFAULT_ADAPTERS:
        if m == f"lowrank:{LOWRANK_DEFAULT}" and min(dims) <= LOWRANK_DEFAULT:
            notes.append(
                f"{m} left out: a space has {min(dims)} dimensions (at most {LOWRANK_DEFAULT}, where it is "
                "the ridge map or cannot be fitted)"
            )
        elif m == "mlp" and n_pairs < MIN_MLP_PAIRS:
            notes.append(
                f"mlp left out: it needs at least {MIN_MLP_PAIRS} fit pairs (a part to train, a part to stop "
                f"on); this run has {n_pairs}"
            )
        else:
            methods.append(m)
    return methods, notes


@dataclass
class _Reference:
    """What every adapted system is compared with: a and b scored, b's top k, b tested against a, the held-out
    sample's top k in the new space."""

    old: System
    new: System
    new_top: np.ndarray | None  # (q, k)
    held: np.ndarray  # (h,) held-out rows
    searched: np.ndarray  # (m,) the held-out rows searched as queries
    held_top: np.ndarray  # (m, k) their top k in the new space, themselves left out


def _scores(task: RetrievalTask | None, ranking) -> object:
    return None if task is None else per_query(task, ranking)


def _reference(spaces: SpacePair, task: RetrievalTask | None, held: np.ndarray, config: MigrationConfig) -> _Reference:
    k = min(config.k, len(spaces.Db) - 1)
    searched = held[sample_indices(len(held), config.heldout_queries, config.seed)] if len(held) else held
    held_top = (
        top_ids(spaces.Db[searched], spaces.Db, k, exclude=searched) if len(searched) else np.zeros((0, k), np.int64)
    )
    if task is None:
        return _Reference(System("old", "old"), System("new", "new"), None, held, searched, held_top)
    depth = min(config.depth, len(spaces.Da))
    rank_a, rank_b = search(spaces.Qa, spaces.Da, depth), search(spaces.Qb, spaces.Db, depth)
    top = min(config.k, depth)
    new_top = rank_b.ids[:, :top]
    old = System("old", "old", scores=_scores(task, rank_a), agreement=shared_top(rank_a.ids[:, :top], new_top))
    new = System("new", "new", scores=_scores(task, rank_b), agreement=np.ones(task.n_queries), against="old")
    new.tests = {
        m: paired_test(new.scores[m], old.scores[m], metric=m, resamples=config.resamples, seed=config.seed)
        for m in config.tested
    }
    return _Reference(old, new, new_top, held, searched, held_top)


def _compare(system: System, ref: _Reference, task: RetrievalTask, config: MigrationConfig) -> System:
    """``system`` tested against the new model and its kept shares, on every tested metric."""
    a, b = ref.old.scores, ref.new.scores
    for m in config.tested:
        c = system.scores[m]
        system.tests[m] = paired_test(c, b[m], metric=m, resamples=config.resamples, seed=config.seed)
        system.kept[m] = kept_shares(
            a[m], b[m], c, new_vs_old=ref.new.tests[m], resamples=config.resamples, seed=config.seed
        )
    system.against = "new"
    return system


def _searched(spaces: SpacePair, adapter: Adapter, direction: str, ref: _Reference):
    """The adapted search's inputs and the held-out measures: (queries, documents, timing, held-out)."""
    if direction == NEW_TO_LEGACY:
        Q, timing = timed_transform(adapter, spaces.Qb) if spaces.Qb is not None else (None, None)
        D = spaces.Da  # the old index, untouched
        mapped_held = adapter.transform(spaces.Db[ref.held]) if len(ref.held) else np.zeros((0, spaces.Da.shape[1]))
        true_held = spaces.Da[ref.held]
        held_queries = adapter.transform(spaces.Db[ref.searched]) if len(ref.searched) else None
    else:
        D, timing = timed_transform(adapter, spaces.Da)  # every stored vector mapped
        Q = spaces.Qb
        mapped_held, true_held = D[ref.held], spaces.Db[ref.held]
        held_queries = spaces.Db[ref.searched] if len(ref.searched) else None
    shared = np.zeros(0)
    if held_queries is not None:
        shared = shared_top(top_ids(held_queries, D, ref.held_top.shape[1], exclude=ref.searched), ref.held_top)
    cosine = row_cosines(mapped_held, true_held) if len(ref.held) else np.zeros(0)
    held = HeldOut(ref.held, cosine, ref.searched, shared) if len(ref.held) else None
    return Q, D, timing, held


def _adapted(spaces, task, ref: _Reference, fit: tuple, run: tuple[str, str, int], config: MigrationConfig):
    """One adapter in one direction: fitted, its searches scored, its held-out measures. Returns (AdapterRun,
    the systems it makes: fully mapped, and partly re-embedded for old->new with corpus fit rows)."""
    method, direction, n_pairs = run
    pairs, fit_rows = fit
    adapter, seconds = fit_adapter(method, direction, pairs, config.seed)
    Q, D, timing, held = _searched(spaces, adapter, direction, ref)
    if timing is None:  # no queries (a corpus alone): time the map on the held-out texts it mapped
        _, timing = timed_transform(adapter, (spaces.Db if direction == NEW_TO_LEGACY else spaces.Da)[:1000])
    name = f"{method} ({direction})"
    systems = []
    if task is not None:
        depth = min(config.depth, len(D))
        ranking = search(Q, D, depth)
        system = System(
            name,
            "adapted",
            method,
            direction,
            per_query(task, ranking),
            shared_top(ranking.ids[:, : ref.new_top.shape[1]], ref.new_top),
        )
        systems.append(_compare(system, ref, task, config))
        if direction == OLD_TO_NEW and len(fit_rows):
            systems.append(_partial(spaces, task, ref, (system, D, fit_rows), config))
    else:
        systems.append(System(name, "adapted", method, direction))
    notes = [f"{name}: {n}" for n in getattr(adapter, "notes_", [])]
    return AdapterRun(method, direction, adapter, seconds, n_pairs, timing, held, notes), systems


def _partial(spaces: SpacePair, task, ref: _Reference, full: tuple, config: MigrationConfig) -> System:
    """old->new with the fit documents keeping their true new vectors, the rest mapped."""
    system, mapped, fit_rows = full
    D = mapped.copy()  # (n, d_b)
    D[fit_rows] = spaces.Db[fit_rows]
    ranking = search(spaces.Qb, D, min(config.depth, len(D)))
    partial = System(
        f"{system.method} ({OLD_TO_NEW}, partly re-embedded)",
        "partial",
        system.method,
        OLD_TO_NEW,
        per_query(task, ranking),
        shared_top(ranking.ids[:, : ref.new_top.shape[1]], ref.new_top),
    )
    _compare(partial, ref, task, config)
    partial.vs_full = {
        m: paired_test(partial.scores[m], system.scores[m], metric=m, resamples=config.resamples, seed=config.seed)
        for m in config.tested
    }
    return partial


def evaluate_migration(
    old: Side,
    new: Side,
    task: RetrievalTask | None = None,
    *,
    fit: tuple[np.ndarray, np.ndarray] | None = None,
    config: MigrationConfig | None = None,
    documents: Sequence[str] | None = None,
    names: tuple[str, str] = ("old", "new"),
    progress: StageProgress | None = None,
) -> MigrationResult:
    """The migration run (module docs) from vectors: ``old`` = (Qa (q, d_a), Da (n, d_a)), ``new`` = (Qb, Db), the
    rows in the task's order; ``fit`` = the generic fit texts' (Xa (m, d_a), Xb (m, d_b)). Without a ``task`` (a
    corpus alone: queries None) only the label-free measures, on held-out documents; ``documents`` are then their
    texts. ``names``: the two sides as the result shows them."""
    config = config or MigrationConfig()
    stage = progress or (lambda _s: None)
    spaces = check_spaces(old, new, task, fit)
    n = len(spaces.Da)
    fraction = config.fraction_for(spaces.n_generic > 0)
    fit_rows, held = fit_split(n, fraction, config.seed)
    n_pairs = len(fit_rows) + spaces.n_generic
    if n_pairs < MIN_PAIRS:
        raise InputError(
            f"{n_pairs} fit pair(s) ({len(fit_rows)} of {n:,} documents at fit fraction {fraction:g}, "
            f"{spaces.n_generic} generic); an adapter needs at least {MIN_PAIRS}: raise the fit fraction or give fit texts"
        )
    dims = (spaces.Da.shape[1], spaces.Db.shape[1])
    methods, notes = plan_methods(config, n_pairs, dims)
    ref = _reference(spaces, task, held, config)
    pairs = spaces.fit_pairs(fit_rows)
    runs, systems = [], [ref.old, ref.new] if task is not None else []
    step, total, done = stage("fit"), len(methods) * len(config.directions), 0
    for method in methods:
        for direction in config.directions:
            run, made = _adapted(spaces, task, ref, (pairs, fit_rows), (method, direction, n_pairs), config)
            runs.append(run)
            systems += made
            notes += run.notes
            done += 1
            if step is not None:
                step(done, total)
    texts = list(task.documents) if task is not None else list(documents or [f"document {i}" for i in range(n)])
    if len(texts) != n:
        raise InputError(f"{len(texts):,} document texts for {n:,} document vectors")
    result = MigrationResult(
        config=config,
        old=SideInfo(names[0], dims[0]),
        new=SideInfo(names[1], dims[1]),
        task=task,
        documents=texts,
        fit_rows=fit_rows,
        n_generic=spaces.n_generic,
        systems=systems,
        adapters=runs,
        recommendation=None,  # set below: it reads the systems
        label_free_on="the task's queries" if task is not None else "held-out documents",
        notes=notes,
        warnings=list(task.warnings) if task is not None else [],
    )
    result.recommendation = recommend(result)
    result.notes += _partial_notes(result) + disagreement_notes(result)
    if config.curve or spaces.n_generic:
        from isoscope.migrate.curve import draw_curve

        result.curve_points, curve_notes = draw_curve(spaces, result, ref_top=ref.new_top, progress=stage("curve"))
        result.notes += curve_notes
    return result


def _partial_notes(result: MigrationResult) -> list[str]:
    """Whether partly re-embedding scored lower or higher than fully mapping, for the old->new adapter the user
    would most likely run (the recommended one, else the best old->new one by the label-free measure)."""
    partials = [s for s in result.systems if s.role == "partial"]
    if not partials:
        return []
    rec = result.recommendation
    chosen = next((s for s in partials if s.method == rec.method), None) if rec.direction == OLD_TO_NEW else None
    if chosen is None:
        full = max(
            (s for s in result.systems if s.role == "adapted" and s.direction == OLD_TO_NEW),
            key=lambda s: s.mean_agreement,
        )
        chosen = next(s for s in partials if s.method == full.method)
    h = result.config.headline
    t = chosen.vs_full[h]
    full_mean = chosen.mean(h) - t.mean_difference
    how = {"worse": "scored lower than", "better": "scored higher than"}.get(t.verdict, "was no different from")
    return [
        f"partly re-embedded ({len(result.fit_rows):,} fit documents keep their true new vectors, the other "
        f"{len(result.documents) - len(result.fit_rows):,} are mapped by {chosen.method}) {how} fully mapped: {h} "
        f"{chosen.mean(h):.4f} vs {full_mean:.4f} (difference {t.mean_difference:+.4f}, 95% CI [{t.ci_low:+.4f}, "
        f"{t.ci_high:+.4f}], p = {t.p_value:.3f})"
        + ("; do not mix true and mapped vectors in one index" if t.verdict == "worse" else "")
    ]
