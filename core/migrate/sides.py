"""Where each side of a migration gets its vectors, and the run from texts.

A ``SideSource`` turns texts into one side's vectors:

- ``model_side``: a model this process runs, each side of a retrieval task with the model's own prompt
  (``isoscope.retrieval.embedding``: its ``query`` / ``document`` prompt when its card names them), cached;
- ``endpoint_side``: an embeddings endpoint (``openai:NAME``), cached;
- ``table_side``: vectors computed elsewhere, looked up by text (a vectors file with its text column: for the old
  side, typically the existing index's vectors); ``task_side`` for a retrieval task read from vectors files;
- ``spec_side``: any of them from a ``SpaceSpec`` (``isoscope.sources``), as the command line and the notebook API
  name a side.

``run_migration(old, new, task=..., fit_texts=...)`` embeds the task's queries and documents (and the generic fit
texts) on both sides and evaluates the migration (``isoscope.migrate.run.evaluate_migration``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from isoscope.errors import InputError

if TYPE_CHECKING:
    from isoscope.cache import ArrayCache
    from isoscope.costs import Cost
    from isoscope.data.vectors import VectorTable
    from isoscope.encode.embed import EmbedConfig
    from isoscope.encode.encoder import Encoder
    from isoscope.encode.endpoints import Endpoint
    from isoscope.encode.pooling import Pooling
    from isoscope.encode.remote import EndpointCache
    from isoscope.migrate.config import MigrationConfig
    from isoscope.migrate.results import MigrationResult
    from isoscope.migrate.run import StageProgress
    from isoscope.retrieval.embedding import Side
    from isoscope.retrieval.task import RetrievalTask
    from isoscope.sources import SourceReaders, SpaceSpec

ProgressFn = Callable[[int, int], None]
Embed = Callable[[Sequence[str], "Side", ProgressFn | None], np.ndarray]


@dataclass
class SideSource:
    """One side: its name, kind (model, endpoint, vectors), ``embed(texts, side, progress) -> (n, d)``, its
    dimensions when known before embedding, and ``cost(texts)`` (an ``isoscope.costs.Cost``; None: not estimated)."""

    name: str
    kind: str
    embed: Embed = field(repr=False)
    dims: int | None = None
    cost: Callable[[Sequence[str]], Cost] | None = field(default=None, repr=False)
    provenance: dict[str, Any] = field(default_factory=dict)


def model_side(
    encoder: Encoder,
    pooling: Pooling = None,
    *,
    config: EmbedConfig | None = None,
    cache: ArrayCache | None = None,
) -> SideSource:
    """A model this process runs, with ``pooling`` (None: its own, ``resolve_pooling``); each side of a task with
    the model's prompt for it (``side_prompt``)."""
    from isoscope.encode.pooling import resolve_pooling
    from isoscope.retrieval.embedding import embed_side, side_prompt

    spec = resolve_pooling(pooling, encoder)
    prompts = {side: side_prompt(encoder, side) for side in ("query", "document")}

    def embed(texts: Sequence[str], side: Side, progress: ProgressFn | None) -> np.ndarray:
        return embed_side(
            encoder, texts, pooling=spec, prompt=prompts[side], config=config, cache=cache, progress=progress
        )

    def cost(texts: Sequence[str]) -> Cost:
        from isoscope.encode.costs import embed_texts_cost, measure_throughput

        max_length = config.max_length if config is not None else 256
        return embed_texts_cost(
            encoder,
            texts,
            [spec],
            max_length=max_length,
            cache=cache,
            rate=lambda _hidden: measure_throughput(encoder, [spec], max_length),
        )

    provenance = {"model": encoder.name, "fingerprint": encoder.fingerprint, "pooling": str(spec), "prompts": prompts}
    return SideSource(encoder.name, "model", embed, encoder.output_dim(spec), cost, provenance)


def endpoint_side(endpoint: Endpoint, *, cache: EndpointCache | None = None) -> SideSource:
    """An embeddings endpoint: every text sent as it is (an endpoint names no prompts)."""
    from isoscope.retrieval.embedding import embed_side_endpoint

    def embed(texts: Sequence[str], side: Side, progress: ProgressFn | None) -> np.ndarray:
        return embed_side_endpoint(endpoint, texts, cache=cache, progress=progress)

    return SideSource(endpoint.name, "endpoint", embed, provenance={"endpoint": endpoint.name})


def table_side(table: VectorTable) -> SideSource:
    """Vectors computed elsewhere, looked up by text in ``table``'s text column (InputError for a text it lacks,
    or a table without texts: a migration needs the same texts on both sides)."""
    if table.texts is None:
        raise InputError(
            f"{table.name} has no text column: a migration looks each text's vectors up by text (give the file a "
            "text column, or its texts with text=COLUMN)"
        )

    def embed(texts: Sequence[str], side: Side, progress: ProgressFn | None) -> np.ndarray:
        return table.vectors_for(texts)

    return SideSource(table.name, "vectors", embed, table.dims, provenance={"vectors": table.origin.to_dict()})


def task_side(task: RetrievalTask) -> SideSource:
    """The vectors a retrieval task was read with (``load_vector_task``: two vectors files and qrels), by text."""
    from isoscope.data.vectors import VectorOrigin, VectorTable

    if task.query_vectors is None or not task.has_texts:
        raise InputError(
            f"{task.name}: a migration needs the texts of the task's vectors (a text column in both vectors files), "
            "so the new model can embed them"
        )
    vectors = np.vstack([task.query_vectors, task.doc_vectors])  # (q + n, d)
    table = VectorTable(vectors, VectorOrigin(task.name), [*task.queries, *task.documents])
    return table_side(table)


def spec_side(
    spec: SpaceSpec,
    *,
    loader: Callable[[str], Encoder] | None = None,
    readers: SourceReaders | None = None,
    config: EmbedConfig | None = None,
    cache: ArrayCache | None = None,
) -> SideSource:
    """The side a ``SpaceSpec`` names: a model (``loader``, default ``load_encoder``; its pooling), an endpoint
    (``readers.endpoint``), or a vectors file (``readers.table``). A calibration is refused: a migration maps the
    spaces as the models give them."""
    from isoscope.sources import SourceReaders, load_space_encoder

    if spec.calibrate != "none":
        raise InputError(f"space {spec.label()}: a migration maps the models' own vectors; drop calibrate=")
    readers = readers or SourceReaders()
    if spec.kind == "vectors":
        return table_side(readers.table(spec))
    if spec.kind == "endpoint":
        from isoscope.encode.remote import EndpointCache

        store = readers.endpoint_cache
        if store is None and cache is not None:
            store = EndpointCache(cache.root.parent / "endpoints.sqlite")
        return endpoint_side(readers.endpoint(spec), cache=store)
    return model_side(load_space_encoder(spec, loader), spec.pooling, config=config, cache=cache)


def texts_of(task: RetrievalTask | None, corpus: Sequence[str] | None) -> tuple[list[str], list[str]]:
    """(queries, documents) a run embeds: the task's, or a corpus alone (no queries)."""
    if task is not None:
        if corpus is not None:
            raise InputError("give a retrieval task or a corpus, not both (the task's documents are the corpus)")
        return list(task.queries), list(task.documents)
    if corpus is None:
        raise InputError("give a retrieval task (queries, documents, qrels) or a corpus (texts)")
    documents = list(dict.fromkeys(corpus))
    if len(documents) < 2:
        raise InputError(f"a corpus needs at least 2 distinct texts; got {len(documents)}")
    return [], documents


def run_migration(
    old: SideSource,
    new: SideSource,
    *,
    task: RetrievalTask | None = None,
    corpus: Sequence[str] | None = None,
    fit_texts: Sequence[str] | None = None,
    config: MigrationConfig | None = None,
    progress: StageProgress | None = None,
) -> MigrationResult:
    """Embed a task's queries and documents (or a corpus alone) and the generic ``fit_texts`` on both sides, then
    ``evaluate_migration``. ``progress(stage)``: "embed old queries", ..., "fit", "curve"."""
    from isoscope.migrate.results import SideInfo
    from isoscope.migrate.run import evaluate_migration

    stage = progress or (lambda _s: None)
    queries, documents = texts_of(task, corpus)
    fit = list(dict.fromkeys(fit_texts)) if fit_texts is not None else None
    if fit is not None and not fit:
        raise InputError("the fit texts are empty; give texts, or leave them out to fit on a sample of the corpus")
    vectors = {}
    for label, side in (("old", old), ("new", new)):
        Q = side.embed(queries, "query", stage(f"embed {label} queries")) if queries else None
        D = side.embed(documents, "document", stage(f"embed {label} documents"))
        X = side.embed(fit, "document", stage(f"embed {label} fit texts")) if fit else None
        vectors[label] = (Q, D, X)
    (Qa, Da, Xa), (Qb, Db, Xb) = vectors["old"], vectors["new"]
    result = evaluate_migration(
        (Qa, Da),
        (Qb, Db),
        task,
        fit=None if fit is None else (Xa, Xb),
        config=config,
        documents=documents,
        progress=progress,
    )
    result.old = SideInfo(old.name, result.old.dims, old.kind, dict(old.provenance))
    result.new = SideInfo(new.name, result.new.dims, new.kind, dict(new.provenance))
    return result
