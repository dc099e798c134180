"""A space on downstream tasks: retrieval (``Space.retrieval``) and clustering (``Space.clustering``), by
``isoscope.retrieval``. The façade's methods call these; nothing here imports the façade back.

A task's queries and documents are embedded by the model the space came from (its pooling, its settings, each
side with its prompt: ``isoscope.retrieval.embedding``), or looked up by text among a space of vectors; a task
read from vectors files brings its own. The space's own calibrations are not applied: each fix is fitted on
the task's documents, as ``isoscope retrieval`` does.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from isoscope.errors import InputError

if TYPE_CHECKING:
    from isoscope.retrieval.task import RetrievalTask
    from isoscope.space.results import ClusteringReport, RetrievalReport
    from isoscope.space.space import Space


def as_task(task: Any, split: str = "test") -> RetrievalTask:
    """A ``RetrievalTask``, or a path to one (a BEIR folder or zip, a table: ``isoscope.retrieval.load.load_task``)."""
    from isoscope.retrieval.load import load_task
    from isoscope.retrieval.task import RetrievalTask

    if isinstance(task, RetrievalTask):
        return task
    if isinstance(task, str | Path):
        return load_task(task, split)
    raise InputError(
        f"a retrieval task is a BEIR folder, a .zip, a table or a RetrievalTask; got {type(task).__name__}"
    )


def retrieval(
    space: Space,
    task: Any,
    fixes: Sequence[str] | None = None,
    *,
    prompts: dict[str, str | None] | None = None,
    split: str = "test",
    depth: int = 100,
    seed: int = 0,
    progress: bool = True,
) -> RetrievalReport:
    """``Space.retrieval``: every fix of ``fixes`` (default: ``isoscope.retrieval.variants.default_variants``) on
    ``task``, tested against raw. ``prompts``: ``{"query": text, "document": text}`` or, by the model's prompt
    names, ``{"query_name": ..., "document_name": ...}``."""
    from isoscope.retrieval.run import RetrievalConfig, evaluate_retrieval, retrieval_report
    from isoscope.space.progress import progress_callback
    from isoscope.space.results import RetrievalReport

    task = as_task(task, split)
    config = RetrievalConfig(variants=tuple(fixes) if fixes else None, depth=depth, seed=seed)
    given = prompts or {}
    bars = {stage: progress_callback(stage, "variant" if stage == "variants" else "text", enabled=progress)
            for stage in ("embed queries", "embed documents", "variants")}  # fmt: skip
    stage = lambda name: bars.get(name)  # noqa: E731
    root = space.lineage()[0]
    if task.query_vectors is not None:
        result = evaluate_retrieval(task.query_vectors, task.doc_vectors, task, config=config, progress=stage)
    elif root.embedding is not None:
        from isoscope.retrieval.embedding import side_prompt

        emb = root.embedding
        sides = tuple(
            side_prompt(emb.encoder, side, name=given.get(f"{side}_name"), text=given.get(side))
            for side in ("query", "document")
        )
        result = retrieval_report(
            emb.encoder, task, pooling=emb.pooling, prompts=sides, config=config, embed_config=emb.config,
            cache=space._cache, progress=stage,
        )  # fmt: skip
    else:
        if any(given.values()):
            raise InputError(
                f"space '{space.name}' holds vectors: its texts were embedded already, prompts cannot apply"
            )
        Q = root._rows_or_texts(task.queries, progress)  # (q, d)
        D = root._rows_or_texts(task.documents, progress)  # (n, d)
        result = evaluate_retrieval(np.asarray(Q), np.asarray(D), task, config=config, progress=stage)
        result.model = root.name
    return RetrievalReport(result, space.name)


def clustering(
    space: Space,
    labels: str | Sequence[object] = "topic",
    fixes: Sequence[str] | None = None,
    *,
    seeds: Sequence[int] | None = None,
    progress: bool = True,
) -> ClusteringReport:
    """``Space.clustering``: V-measure of k-means (k = the number of labels) on this space's vectors, raw and with
    each fix fitted on them; ``labels`` is a metadata column's name or one label per row."""
    from isoscope.retrieval.clustering import CLUSTER_VARIANTS, SEEDS, cluster_scores
    from isoscope.space.progress import progress_callback
    from isoscope.space.results import ClusteringReport

    name = ""
    if isinstance(labels, str):
        if labels not in space.metadata.columns:
            have = ", ".join(map(str, space.metadata.columns)) or "none"
            raise InputError(f"space '{space.name}' has no metadata column '{labels}'; its columns: {have}")
        name, labels = labels, space.metadata[labels].tolist()
    result = cluster_scores(
        space.vectors,
        labels,
        variants=tuple(fixes) if fixes else CLUSTER_VARIANTS,
        seeds=tuple(seeds) if seeds else SEEDS,
        progress=progress_callback("clustering", "run", enabled=progress),
    )
    result.label, result.space = name, space.name
    return ClusteringReport(result)
