"""Which adapter, which direction, and whether to migrate at all: read from a run's systems.

- The choice reads NO relevance label: the adapter and direction whose search returns the largest share of the new
  model's own top k (on the task's queries; without queries, on held-out documents). The labelled numbers of the
  chosen system are therefore an honest test of the choice, not the best of many tries.
- The verdict reads the labels (the headline metric):
  ``stay`` when the new model is not better here (the 95% interval of b - a does not lie above 0): no adapter can gain
  what the new model does not have; ``re-embed`` when the chosen adapter's kept share (the recovered fraction
  (c - a) / (b - a); c / b where that is undefined) has a 95% lower bound below the threshold; else ``migrate``.
  Without labels, the kept share is the label-free one (the shared top k on held-out documents), and the words say
  that whether the new model is better was not measured.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from isoscope.migrate.measure import gain_is_real, mean_share
from isoscope.migrate.options import DIRECTIONS
from isoscope.migrate.results import Recommendation

if TYPE_CHECKING:
    from isoscope.migrate.results import MigrationResult


def _label_free(result: MigrationResult) -> tuple[str, str, float]:
    """(method, direction, score): the largest label-free share, ties to the earlier method of the config, then
    new->legacy (the index untouched)."""
    order = {m: i for i, m in enumerate(dict.fromkeys(a.method for a in result.adapters))}
    best = None
    for run in sorted(result.adapters, key=lambda a: (order[a.method], DIRECTIONS.index(a.direction))):
        if result.labelled:
            score = result.adapted(run.method, run.direction).mean_agreement
        else:
            score = run.heldout.means()["heldout_shared"] if run.heldout is not None else float("nan")
        if best is None or score > best[2]:
            best = (run.method, run.direction, score)
    return best


def _chosen_by(result: MigrationResult, score: float) -> str:
    k = result.config.k
    if result.labelled:
        where = f"the task's {result.task.n_queries:,} queries"
    else:
        where = (
            f"{sum(len(a.heldout.searched) for a in result.adapters[:1] if a.heldout is not None):,} held-out documents"
        )
    return (
        f"the label-free measure alone: the largest share of the new model's own top {k} returned ({score:.3f}, on "
        f"{where}); no relevance label was read, so the labelled numbers test the choice"
    )


def recommend(result: MigrationResult) -> Recommendation:
    """The recommendation of a run whose systems and adapters are measured (module docs)."""
    method, direction, score = _label_free(result)
    config = result.config
    name = f"{method} ({direction})"
    chosen_by = _chosen_by(result, score)
    if not result.labelled:
        run = result.run_of(method, direction)
        kept = mean_share(run.heldout.shared, resamples=config.resamples, seed=config.seed)
        verdict, words = _label_free_verdict(name, kept, config.threshold, config.k)
        return Recommendation(
            method, direction, chosen_by, verdict, words, f"shared top {config.k}", kept, config.threshold
        )
    h = config.headline
    new, old = result.system("new"), result.system("old")
    t = new.tests[h]
    kept_h = result.adapted(method, direction).kept[h]
    if not gain_is_real(t):
        measure, kept = "c/b", kept_h.ratio
        why = "the old model is better" if t.ci_high < 0 else "its 95% interval holds 0"
        words = (
            f"stay: the new model is not better here ({h} {new.mean(h):.4f} vs {old.mean(h):.4f}, difference "
            f"{t.mean_difference:+.4f}, 95% CI [{t.ci_low:+.4f}, {t.ci_high:+.4f}]: {why}); no adapter can gain what "
            f"the new model does not have. If you switch anyway, {name} keeps c/b = {_share(kept)} of its {h}"
        )
        return Recommendation(method, direction, chosen_by, "stay", words, measure, kept, config.threshold)
    measure, kept = kept_h.headline
    if not (kept.low >= config.threshold):  # nan (undefined) is below any threshold
        words = (
            f"re-embed: {name}, the best adapter by the label-free measure, keeps a {measure} of {_share(kept)} of "
            f"the new model's {h} gain ({old.mean(h):.4f} -> {new.mean(h):.4f}); its 95% lower bound is below the "
            f"threshold {config.threshold:g}"
        )
        return Recommendation(method, direction, chosen_by, "re-embed", words, measure, kept, config.threshold)
    words = (
        f"migrate with {name}: it keeps a {measure} of {_share(kept)} of the new model's {h} gain "
        f"({old.mean(h):.4f} -> {new.mean(h):.4f}, adapted {result.adapted(method, direction).mean(h):.4f}); the 95% "
        f"lower bound is at least the threshold {config.threshold:g}"
    )
    return Recommendation(method, direction, chosen_by, "migrate", words, measure, kept, config.threshold)


def _label_free_verdict(name: str, kept, threshold: float, k: int) -> tuple[str, str]:
    what = (
        f"returns {_share(kept)} of the new model's own top {k} for held-out documents (label-free: no relevance "
        "labels, so whether the new model is better here was not measured)"
    )
    if not (kept.low >= threshold):
        return "re-embed", f"re-embed: {name} {what}; the 95% lower bound is below the threshold {threshold:g}"
    return "migrate", f"migrate with {name}: it {what}; the 95% lower bound is at least the threshold {threshold:g}"


def _share(share) -> str:
    return f"{share.value:.3f} (95% CI {share.low:.3f} to {share.high:.3f})"


def disagreement_notes(result: MigrationResult) -> list[str]:
    """A note when another adapter scores significantly higher on the headline metric than the one the label-free
    measure chose (the paired test over queries says better): the two measures disagree here."""
    from isoscope.retrieval.stats import paired_test

    adapted = [s for s in result.systems if s.role == "adapted"]
    if not result.labelled or not adapted:
        return []
    config, rec = result.config, result.recommendation
    h = config.headline
    best = max(adapted, key=lambda s: s.mean(h))
    chosen = result.adapted(rec.method, rec.direction)
    if best is chosen:
        return []
    t = paired_test(best.scores[h], chosen.scores[h], metric=h, resamples=config.resamples, seed=config.seed)
    if t.verdict != "better":
        return []
    return [
        f"the measures disagree: by {h} {best.name} scores higher ({best.mean(h):.4f} vs {chosen.mean(h):.4f}, "
        f"p = {t.p_value:.3f}) than the label-free choice {chosen.name} (label-free {best.mean_agreement:.3f} vs "
        f"{chosen.mean_agreement:.3f}); the choice stays label-free, so its labelled numbers remain an honest test"
    ]
