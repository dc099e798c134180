"""``isoscope.migrate(old, new, ...)`` in a notebook: can I switch from model A to model B without re-embedding, what
would I keep, where would I lose it, and give me the adapter.

import isoscope
m = isoscope.migrate(new="model=sentence-transformers/all-mpnet-base-v2")  # old: the embedded model; demo task
m                                # a card: the verdict, the chosen adapter, what each system scores
m.table(); m.plot(); m.losers(10); m.per_text()
m.adapter().save("adapter/")     # or m.export("adapter/", format=...) (isoscope.migrate.export)
m.report("migration.html")       # the one-file report

A side (``old``, ``new``) is an ``isoscope.Space`` (its model embeds the task, or its texts and vectors are looked up),
a SPEC string as ``isoscope compare`` takes it (``model=...,pooling=...``, ``vectors=FILE:COLUMN``,
``model=openai:NAME``; a bare name is a model), a ``SpaceSpec``, an ``Encoder``, or None for the embedded
all-MiniLM-L6-v2 (``old`` only). The one module of ``isoscope.migrate`` that imports ``isoscope.space`` (its model
loading, progress bars, cards and report); ``isoscope.space`` never imports ``isoscope.migrate``: the report calls
the result's own methods.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from isoscope.errors import InputError
from isoscope.migrate.results import MigrationResult

if TYPE_CHECKING:
    from isoscope.migrate.config import MigrationConfig
    from isoscope.migrate.sides import SideSource
    from isoscope.retrieval.task import RetrievalTask

STAGES = (
    "embed old queries",
    "embed old documents",
    "embed old fit texts",
    "embed new queries",
    "embed new documents",
    "embed new fit texts",
    "fit",
    "curve",
)


class Migration(MigrationResult):
    """A ``MigrationResult`` in a notebook: a card, and ``report(path)`` (the one-file HTML report)."""

    @classmethod
    def of(cls, result: MigrationResult) -> Migration:
        from dataclasses import fields

        return cls(**{f.name: getattr(result, f.name) for f in fields(result)})

    def report(self, path: str | Path | None = None, **options: Any) -> Path | str:
        """The one-file HTML report of this run (``isoscope.space.report.migration_report``), written to ``path``
        (returns it) or returned as a string."""
        from isoscope.space.report import migration_report

        return migration_report(self, path, **options)

    def _repr_html_(self) -> str:
        from isoscope.space.cards import Card, CardStat
        from isoscope.space.html import fmt, line_svg

        rec, h = self.recommendation, self.config.headline
        stats = [
            CardStat("verdict", rec.verdict, rec.words),
            CardStat("chosen", f"{rec.method} ({rec.direction})", rec.chosen_by),
            CardStat(
                rec.measure,
                f"{fmt(rec.kept.value)} [{fmt(rec.kept.low)}, {fmt(rec.kept.high)}]",
                "95% paired bootstrap interval over queries",
            ),
        ]
        if self.labelled:
            stats += [CardStat(f"{h} {name}", fmt(self.system(name).mean(h))) for name in ("old", "new")]
        header = ["system", h, f"agree@{self.config.k}", "c/b", "recovered"] if self.labelled else ["system", "agree"]
        rows = []
        for s in self.systems:
            kept = s.kept.get(h)
            rows.append(
                [
                    s.name,
                    s.mean(h),
                    s.mean_agreement,
                    None if kept is None else kept.ratio.value,
                    None if kept is None or kept.recovered is None else kept.recovered.value,
                ][: len(header)]
            )
        if not self.labelled:
            rows = [
                [a.method + f" ({a.direction})", a.heldout.means()["heldout_shared"] if a.heldout else None]
                for a in self.adapters
            ]
        curve = self.curve()
        measure = self._curve_measure() if len(curve) else "agreement"
        series = {
            f"{m} ({d})": part.groupby("pairs")[measure].mean().to_numpy()
            for (m, d), part in curve[curve["source"] == "corpus"].groupby(["method", "direction"], sort=False)
        }
        return Card(
            title=f"Migration · {self.old.name} → {self.new.name}",
            subtitle=(f"{self.task.name}: {self.task.n_queries:,} queries, " if self.labelled else "corpus: ")
            + f"{len(self.documents):,} documents · fit on {self.n_pairs:,} pairs",
            stats=stats,
            figure=line_svg(series, label="kept against fit pairs") if series else "",
            caption=f"{measure} against fit pairs (left: fewest)",
            series=list(series),
            table=(header, rows),
            notes=[rec.words, *self.notes, *self.warnings],
            kind="migration",
        ).html()


def _space_side(space: Any) -> SideSource:
    """An ``isoscope.Space`` as a side: its model (its pooling and settings, each task side with the model's prompt)
    or, for a space of vectors, its vectors looked up by its texts."""
    from isoscope.data.vectors import VectorOrigin, VectorTable
    from isoscope.migrate.sides import model_side, table_side

    if space.transforms:
        raise InputError(
            f"space '{space.name}' is calibrated ({space.label}); give the raw space: a migration maps "
            "the models' own vectors"
        )
    if space.embedding is not None:
        emb = space.embedding
        return model_side(emb.encoder, emb.pooling, config=emb.config, cache=space._cache)
    if space.texts is None:
        raise InputError(f"space '{space.name}' has neither a model nor texts: a migration looks vectors up by text")
    return table_side(VectorTable(space.vectors, VectorOrigin(space.name, digest=space.digest), list(space.texts)))


def side_of(value: Any, which: str) -> SideSource:
    """A side from what a notebook gives (module docs)."""
    from isoscope.encode.encoder import Encoder
    from isoscope.migrate.sides import model_side, spec_side
    from isoscope.sources import SpaceSpec, parse_space
    from isoscope.space.sources import as_cache, load_model

    if value is None:
        if which == "new":
            raise InputError("give the new model: isoscope.migrate(new='model=NAME') (or a Space, a SpaceSpec)")
        value = ""
    if isinstance(value, Encoder):
        return model_side(value, cache=as_cache(True))
    if hasattr(value, "vectors") and hasattr(value, "embedding"):  # an isoscope.Space
        return _space_side(value)
    if isinstance(value, str):
        value = parse_space(value if "=" in value or not value.strip() else f"model={value.strip()}")
    if not isinstance(value, SpaceSpec):
        raise InputError(
            f"the {which} side is a Space, a SPEC string, a SpaceSpec or an Encoder; got {type(value).__name__}"
        )
    return spec_side(value, loader=lambda name: load_model(name), cache=as_cache(True))


def _task(task: Any, split: str) -> RetrievalTask:
    from isoscope.paths import DEMO_RETRIEVAL
    from isoscope.retrieval.load import load_task
    from isoscope.retrieval.task import RetrievalTask

    if task is None:
        return load_task(DEMO_RETRIEVAL, split)
    if isinstance(task, RetrievalTask):
        return task
    if isinstance(task, str | Path):
        return load_task(task, split)
    raise InputError(f"a task is a BEIR folder, a .zip, a table or a RetrievalTask; got {type(task).__name__}")


def _fit_texts(fit: Any) -> list[str] | None:
    if fit is None:
        return None
    if isinstance(fit, str | Path):
        from isoscope.data import load_input

        return load_input(fit).distinct_texts()
    return [str(t) for t in fit]


def migrate(
    old: Any = None,
    new: Any = None,
    *,
    fit: str | Path | Sequence[str] | None = None,
    task: Any = None,
    corpus: Sequence[str] | None = None,
    config: MigrationConfig | None = None,
    split: str = "test",
    progress: bool = True,
) -> Migration:
    """Fit adapters from ``old`` to ``new`` both ways and measure what each keeps (module docs): on ``task`` (a BEIR
    folder or zip, a table, a ``RetrievalTask``; default the demo task) or, label-free only, on a ``corpus`` of
    texts. ``fit``: generic fit texts (a file or a list) embedded by both, besides the corpus sample of
    ``config.fit_fraction``. Returns a ``Migration`` (a ``MigrationResult`` with a card and ``report``)."""
    from isoscope.migrate.sides import run_migration
    from isoscope.space.progress import progress_callback

    old_side, new_side = side_of(old, "old"), side_of(new, "new")
    the_task = None if corpus is not None and task is None else _task(task, split)
    bars = {s: progress_callback(s, "text" if s.startswith("embed") else "step", enabled=progress) for s in STAGES}
    result = run_migration(
        old_side, new_side, task=the_task, corpus=corpus, fit_texts=_fit_texts(fit), config=config, progress=bars.get
    )
    return Migration.of(result)
