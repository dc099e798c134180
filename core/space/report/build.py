"""Assemble a report: the space's measures (and those of its ``vs`` calibration), in sections (``content``)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import numpy as np

from isoscope.retrieval.options import HEADLINE, metric_label
from isoscope.retrieval.variants import parse_variant
from isoscope.space.report import content as c

if TYPE_CHECKING:
    from isoscope.space.comparison import Comparison
    from isoscope.space.space import Space

METRIC_COLUMNS = (
    "avg_cosine",
    "isoscore",
    "partition_isotropy",
    "effective_rank",
    "explained_variance_top1",
    "explained_variance_top10",
    "uniformity",
)


def _anisotropy(spaces: dict[str, Space]) -> tuple[c.Section, dict]:
    from isoscope.geometry.metrics import cosine_histogram_sample
    from isoscope.geometry.options import METRIC_HELP
    from isoscope.space.figures import cosine_histograms, spectra

    rows = {label: sp._metrics() for label, sp in spaces.items()}
    first = next(iter(rows.values()))
    section = c.Section("anisotropy", "Anisotropy", [c.anisotropy_words(first)])
    section.tables.append(("Isotropy metrics (isoscope.geometry.metrics.all_metrics)", c.metrics_table(rows)))
    section.paragraphs.append(
        "What the metrics mean: " + "; ".join(f"{k.replace('_', ' ')}: {v}" for k, v in METRIC_HELP.items()) + "."
    )
    recipe = _recipe_rows(next(iter(spaces.values())), first)
    if recipe is not None:
        section.tables.append(("The model's recipe against the mean of its raw last layer", c.metrics_table(recipe)))
    cosines = {label: cosine_histogram_sample(sp.vectors, c.HISTOGRAM_PAIRS) for label, sp in spaces.items()}
    section.figures.append(cosine_histograms(cosines).update_layout(title={"text": "Cosines of random pairs"}))
    section.figures.append(
        spectra({label: sp.singular_values() for label, sp in spaces.items()}).update_layout(
            title={"text": "Singular-value spectrum (centred vectors)"}
        )
    )
    return section, rows


def _recipe_rows(space: Space, metrics: dict) -> dict | None:
    """When the space is a model's own recipe (the pooling ``model``): its metrics and those of the mean of the
    raw last layer of the same texts, so the report shows what the head and the normalisation do."""
    from isoscope.encode.pooling import PoolingSpec
    from isoscope.geometry.metrics import all_metrics
    from isoscope.space import sources

    emb = space.embedding
    if emb is None or space.texts is None or emb.pooling.kind != "model" or emb.encoder.recipe is None:
        return None
    mean = sources.embed_with(emb, space.texts, [PoolingSpec("mean")], cache=space._cache, progress=False)["mean"]
    return {f"the model's recipe: {emb.encoder.recipe.describe()}": metrics, "raw last layer (mean)": all_metrics(mean)}


def _layers(space: Space, progress: bool = True) -> c.Section | None:
    import pandas as pd

    from isoscope.geometry.metrics import per_layer_metrics
    from isoscope.space.figures import layer_heatmap

    root = space.lineage()[0]
    if root.embedding is None or root.texts is None:
        return None
    per_layer = pd.DataFrame(per_layer_metrics(root.layer_vectors(progress))).rename_axis("layer")
    section = c.Section(
        "layers",
        "Every layer",
        [
            f"Mean pooling of each hidden state of {root.embedding.encoder.name} (layer 0 = the input embeddings), "
            "before any calibration. Intermediate layers of pre-trained encoders are usually the most anisotropic."
        ],
    )
    section.figures.append(layer_heatmap(per_layer).update_layout(title={"text": "Metrics per layer"}))
    section.tables.append(("Metrics per layer", per_layer[list(METRIC_COLUMNS)].reset_index()))
    return section


def _hubness(cmp: Comparison) -> c.Section:
    ha, hb = cmp.measured.hubness_a, cmp.measured.hubness_b
    n, k = cmp.n_texts, cmp.k
    top = int(ha.top(1)[0])
    texts = cmp.a.texts
    section = c.Section(
        "hubness",
        "Hubness",
        [
            c.hubness_words(ha.skewness, ha.max_occurrence, k=k, n=n, top_text=texts[top] if texts else None),
            f"N_k counts how often a text is among the others' {k} nearest neighbours (its mean is exactly {k}); "
            "a large positive skewness means hubs, and anti-hubs are nobody's neighbour (Radovanovic et al. 2010). "
            f"After {cmp.b.label}: skewness {hb.skewness:.2f}, largest N_k {hb.max_occurrence}.",
        ],
    )
    import pandas as pd

    summary = pd.DataFrame(
        [
            {"space": sp.label, "skewness": h.skewness, "anti-hub share": h.antihub_share, "max N_k": h.max_occurrence}
            for sp, h in ((cmp.a, ha), (cmp.b, hb))
        ]
    )
    section.tables.append(("Hubness of each space", summary))
    section.tables.append((f"Top hubs in {cmp.a.label}", c.hubs_table(cmp.a, ha.k_occurrence)))
    section.tables.append((f"Top hubs in {cmp.b.label}", c.hubs_table(cmp.a, hb.k_occurrence)))
    return section


def _change(cmp: Comparison, metrics: dict, sts: tuple | None) -> c.Section:
    from isoscope.space.figures import overlap_histogram

    raw, cal = metrics[cmp.a.label], metrics[cmp.b.label]
    scores = None if sts is None else (sts[0].spearman, sts[1].spearman)
    section = c.Section(
        "calibration",
        f"What {cmp.b.label} would change",
        [
            c.calibration_words(cmp.b.label, raw, cal, overlap=cmp.overlap_at_k, k=cmp.k, sts=scores),
            f"CKA between the two spaces: linear {cmp.cka_linear:.3f}, debiased {cmp.cka_debiased:.3f} "
            "(1 = the same up to rotation and scale). CKA follows the few large directions, neighbours the many "
            "small ones: use both.",
        ],
    )
    section.figures.append(overlap_histogram(cmp.measured).update_layout(title={"text": "Neighbours kept per text"}))
    section.tables.append(("Texts whose neighbours changed most", c.changed_table(cmp)))
    if sts is not None:
        import pandas as pd

        frame = pd.DataFrame(
            [
                {"space": r.space, "pairs": r.n_pairs, "Spearman x100": r.spearman, "Pearson x100": r.pearson}
                for r in sts
            ]
        )
        section.tables.append((f"STS on {sts[0].pairs or 'the pairs'} (cosine against gold scores)", frame))
    return section


def _retrieval(space: Space, task: Any, vs: str, progress: bool) -> tuple[c.Section, Any]:
    """Raw, centring, the report's ``vs`` and CSLS on a retrieval task (``Space.retrieval``), each against raw."""
    report = space.retrieval(task, list(dict.fromkeys(["centre", vs, "csls"])), progress=progress)
    result = report.result
    task_, label = result.task, metric_label(HEADLINE)
    words = [
        f"{task_.name}: {task_.n_queries:,} queries, {task_.n_documents:,} documents. Exact cosine search to depth "
        f"{result.raw.ranking.depth}, scored by pytrec_eval; each fix fitted on the documents without labels. Raw "
        f"{label} {result.raw.means()[HEADLINE]:.3f}."
    ]
    for row in result.rows[1:]:
        t = row.tests[HEADLINE]
        words.append(
            f"{row.variant}: {label} {row.means()[HEADLINE]:.3f}, change {t.mean_difference:+.3f} (95% CI "
            f"{t.ci_low:+.3f} to {t.ci_high:+.3f}, paired randomisation test p = {t.p_value:.3f}): {t.verdict}."
        )
    section = c.Section("retrieval", "Retrieval: would a fix help search?", words)
    section.tables.append((f"Every fix against raw ({label}'s change, interval, test; geometry of the documents)",
                           report.table.round(4)))  # fmt: skip
    return section, result


def _migration(result: Any) -> c.Section:
    """A migration run (``isoscope.migrate``'s result, read through its own methods: this package never imports
    ``isoscope.migrate``): the verdict, the curve, every system, what each adapter costs, the losing queries."""
    rec, config = result.recommendation, result.config
    words = [
        f"Old: {result.old.name} ({result.old.dims} dimensions); new: {result.new.name} ({result.new.dims}). Fit on "
        f"{result.n_pairs:,} pairs ({len(result.fit_rows):,} corpus documents, a seeded sample, and "
        f"{result.n_generic:,} generic texts). new->legacy maps the new model's queries into the old index (left "
        "untouched); old->new maps every stored old vector into the new space (no text re-embedded).",
        f"Verdict: {rec.words}.",
        f"Chosen by {rec.chosen_by}.",
        f"Two measures side by side: agreement@{config.k} is the label-free ratio the papers report (the share of "
        f"the new model's own top {config.k} the adapted search returns); c/b and the recovered fraction "
        "(c - a) / (b - a) read the relevance labels, the second only where the new model's gain is real. They can "
        "disagree.",
        *result.notes,
    ]
    section = c.Section("migration", "Migration: switch models without re-embedding?", words)
    if result.curve_points:
        section.figures.append(result.plot())
    table = result.table().drop(columns=["role", "method", "direction"])
    section.tables.append(("Every system: old (a), new (b), each adapter (c), tested against new", table.round(4)))
    import pandas as pd

    costs = pd.DataFrame([a.to_dict() for a in result.adapters]).drop(columns=["notes"])
    section.tables.append(("What each adapter costs, and its label-free measures on held-out texts", costs.round(4)))
    if result.labelled:
        section.tables.append((f"The queries {rec.method} ({rec.direction}) loses most on", result.losers(10).round(4)))
    if result.curve_points:
        section.tables.append(("The curve: kept against fit pairs", result.curve().round(4)))
    return section


def build_migration_report(result: Any, *, command: str | None = None, title: str | None = None) -> c.Report:
    """A report of one migration run alone (``Migration.report``, ``isoscope migrate --report``)."""
    rec, h = result.recommendation, result.config.headline
    tiles = [
        ("verdict", rec.verdict, f"{rec.method} ({rec.direction})"),
        (rec.measure, f"{rec.kept.value:.3f}", f"95% CI {rec.kept.low:.3f} to {rec.kept.high:.3f}"),
        ("fit pairs", f"{result.n_pairs:,}", f"{len(result.fit_rows):,} corpus, {result.n_generic:,} generic"),
    ]
    if result.labelled:
        adapted = result.adapted()
        tiles += [(f"{h} {s.name}", f"{s.mean(h):.3f}", "") for s in (result.system("old"), result.system("new"))]
        tiles.append((f"{h} adapted", f"{adapted.mean(h):.3f}", adapted.name))
    provenance = {"old": result.old.name, "old dims": result.old.dims, "new": result.new.name,
                  "new dims": result.new.dims}  # fmt: skip
    return c.Report(
        title=title or f"Isoscope migration: {result.old.name} -> {result.new.name}",
        subtitle=(f"{result.task.name}: {result.task.n_queries:,} queries, " if result.labelled else "corpus: ")
        + f"{len(result.documents):,} documents",
        verdict=[rec.words],
        tiles=tiles,
        sections=[_migration(result)],
        made=c.made_by(command, result.config.to_dict(), provenance, 0.0),
        data={"migration": result.to_dict()},
        warnings=list(result.warnings),
    )


def build_space_report(
    space: Space,
    *,
    vs: str = "whitening",
    pairs: Any = None,
    retrieval: Any = None,
    k: int = 10,
    layers: bool = True,
    map: str = "auto",
    map_points: int = c.MAP_POINTS,
    seed: int = 0,
    command: str | None = None,
    title: str | None = None,
    progress: bool = True,
    migration: Any = None,
) -> c.Report:
    """Measure ``space`` and its ``vs`` calibration (fitted on the space, no labels) for a report (module docs);
    ``retrieval``: a task (a BEIR folder or zip, a table, a ``RetrievalTask``) for a retrieval section;
    ``migration``: a migration run (``isoscope.migrate(...)``) for a migration section;
    ``progress=False``: no progress bars (the command line's ``--quiet``)."""
    start, clock = time.perf_counter(), {}
    other = space.calibrate(vs, progress=progress)
    spaces = {space.label: space, other.label: other}
    t = time.perf_counter()
    anisotropy, metrics = _anisotropy(spaces)
    c.timed(clock, "metrics", t)
    t = time.perf_counter()
    cmp = space.compare(other, k=k, map="none", progress=progress)
    c.timed(clock, "neighbours", t)
    sts = c.sts_pair(space, other, pairs, progress=progress) if pairs is not None else None
    sections = [anisotropy]
    layer_section = _layers(space, progress) if layers else None
    if layer_section is not None:
        sections.append(layer_section)
    sections += [_hubness(cmp), _change(cmp, metrics, sts)]
    ranked = None
    if retrieval is not None:
        t = time.perf_counter()
        section, ranked = _retrieval(space, retrieval, vs, progress)
        sections.append(section)
        c.timed(clock, "retrieval", t)
    if migration is not None:
        sections.append(_migration(migration))
    t = time.perf_counter()
    method = c.map_method(map, min(len(space), map_points))
    colour_of = lambda rows: c.map_colour(space, rows, cmp.overlap[rows], k)  # noqa: E731
    fig, colour = c.space_map_figure(space, method, map_points=map_points, seed=seed, colour_of=colour_of)
    sections.append(c.Section("map", "Map", [f"Hover a point for its text; colour: {colour}."], figures=[fig]))
    c.timed(clock, "map", t)
    raw = metrics[space.label]
    tiles = [
        ("texts", f"{len(space):,}", f"{space.shape[1]} dimensions"),
        ("average cosine", f"{raw['avg_cosine']:.3f}", f"{other.label}: {metrics[other.label]['avg_cosine']:.3f}"),
        ("IsoScore", f"{raw['isoscore']:.3f}", f"{other.label}: {metrics[other.label]['isoscore']:.3f}"),
        (f"overlap@{k} with {other.label}", f"{cmp.overlap_at_k:.3f}", "share of neighbours kept"),
        (
            "hubness skew",
            f"{cmp.measured.hubness_a.skewness:.2f}",
            f"{other.label}: {cmp.measured.hubness_b.skewness:.2f}",
        ),
    ]
    if sts is not None:
        tiles.append(("STS Spearman", f"{sts[0].spearman:.2f}", f"{other.label}: {sts[1].spearman:.2f}"))
    if ranked is not None:
        fixed = ranked.row(str(parse_variant(vs)))
        tiles.append((metric_label(HEADLINE), f"{ranked.raw.means()[HEADLINE]:.3f}",
                      f"{fixed.variant}: {fixed.means()[HEADLINE]:.3f} ({fixed.tests[HEADLINE].verdict})"))  # fmt: skip
    verdict = [
        c.anisotropy_words(raw),
        c.calibration_words(
            other.label,
            raw,
            metrics[other.label],
            overlap=cmp.overlap_at_k,
            k=k,
            sts=None if sts is None else (sts[0].spearman, sts[1].spearman),
        ),
    ]
    settings = {"vs": other.label, "k": k, "map": method, "map_points": map_points, "seed": seed, "layers": layers}
    if pairs is not None:
        settings["pairs"] = sts[0].pairs or "given in Python"
    made = c.made_by(command, settings, space.provenance, time.perf_counter() - start)
    made["timings"] = clock
    data = {"metrics": metrics, "comparison": cmp.to_dict(), "sts": None if sts is None else [r.to_dict() for r in sts]}
    if ranked is not None:
        data["retrieval"] = ranked.to_dict()
    if migration is not None:
        data["migration"] = migration.to_dict()
    data["comparison"].pop("most_changed", None)
    return c.Report(
        title=title or f"Isoscope report: {space.name}",
        subtitle=c.describe_source(space),
        verdict=verdict,
        tiles=tiles,
        sections=sections,
        made=made,
        data=data,
        warnings=[*space.warnings, *other.warnings],
    )


def build_comparison_report(
    cmp: Comparison, *, pairs: Any = None, command: str | None = None, title: str | None = None
) -> c.Report:
    """A report of two spaces of the same texts: both spaces' metrics, CKA, overlap, hubness, maps, layers."""
    from isoscope.encode.pooling import layer_names
    from isoscope.space.figures import aligned_map, heatmap, panel_ranges
    from isoscope.space.html import plot_text

    start = time.perf_counter()
    a, b = cmp.a, cmp.b
    label = lambda sp, side: f"{side}: {sp.name} ({sp.label})"  # noqa: E731
    spaces = {label(a, "A"): a, label(b, "B"): b}
    anisotropy, metrics = _anisotropy(spaces)
    metrics_by_label = {a.label: metrics[label(a, "A")], b.label: metrics[label(b, "B")]}
    sts = c.sts_pair(a, b, pairs) if pairs is not None else None
    sections = [anisotropy, _hubness(cmp), _change(cmp, metrics_by_label, sts)]
    if cmp.measured.maps is not None:
        maps = cmp.measured.maps
        ranges_a, ranges_b, own = panel_ranges(maps.a, maps.b)
        texts = a.texts or [f"row {i}" for i in range(len(a))]
        hover = [plot_text(texts[i]) for i in maps.rows]
        colour = cmp.overlap[maps.rows]
        figs = [
            aligned_map(
                maps.a, hover, f"A ({maps.method.upper()})", colour=colour, categorical=False, k=cmp.k, ranges=ranges_a
            ),
            aligned_map(
                maps.b,
                hover,
                f"B aligned onto A ({maps.method.upper()}{', own axes' if own else ''})",
                colour=colour,
                categorical=False,
                k=cmp.k,
                ranges=ranges_b,
            ),
        ]
        note = f"Procrustes disparity {maps.disparity:.3f}; colour: each text's overlap@{cmp.k}."
        sections.append(c.Section("maps", "Aligned maps", [note], figures=figs))
    if cmp.layers is not None:
        rows = layer_names(cmp.layers.linear.shape[0] - 1)
        cols = layer_names(cmp.layers.linear.shape[1] - 1)
        fig = heatmap(cmp.layers.linear, rows, cols, "linear CKA: layers of A x layers of B")
        sections.append(c.Section("layers", "Layer by layer", ["Mean-pooled layers, raw."], figures=[fig]))
    ha, hb = cmp.measured.hubness_a, cmp.measured.hubness_b
    tiles = [
        ("texts", f"{cmp.n_texts:,}", ""),
        ("CKA linear", f"{cmp.cka_linear:.3f}", f"debiased {cmp.cka_debiased:.3f}"),
        (f"overlap@{cmp.k}", f"{cmp.overlap_at_k:.3f}", "share of neighbours kept"),
        ("hubness skew", f"{ha.skewness:.2f} -> {hb.skewness:.2f}", "A -> B"),
    ]
    verdict = [
        f"B keeps {cmp.overlap_at_k:.0%} of each text's {cmp.k} nearest neighbours of A, with a linear CKA of "
        f"{cmp.cka_linear:.2f}.",
        "A: " + c.anisotropy_words(metrics_by_label[a.label]),
        "B: " + c.anisotropy_words(metrics_by_label[b.label]),
    ]
    settings = {"k": cmp.k, "map": cmp.measured.maps.method if cmp.measured.maps is not None else "none"}
    made = c.made_by(command, settings, {"a": a.provenance, "b": b.provenance}, time.perf_counter() - start)
    data = {"metrics": metrics, "comparison": cmp.to_dict()}
    data["comparison"].pop("most_changed", None)
    return c.Report(
        title=title or f"Isoscope comparison: {a.name} vs {b.name}",
        subtitle=f"A: {c.describe_source(a)} ({a.label}); B: {c.describe_source(b)} ({b.label})",
        verdict=verdict,
        tiles=tiles,
        sections=sections,
        made=made,
        data=data,
        warnings=[*a.warnings, *b.warnings],
    )


def finite(x: Any) -> Any:
    return None if isinstance(x, float) and not np.isfinite(x) else x
