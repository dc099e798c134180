"""A retrieval task: queries, documents and graded relevance judgements (qrels), checked once.

``build_task`` is where every loader ends (``isoscope.retrieval.load``): ids must be unique, qrels must name known
ids with grades that are whole numbers in ``GRADE_RANGE`` (-1000 to 1000), and only queries with at least one relevant document are evaluated (as trec_eval does: a query without a
relevant document has no nDCG or recall to speak of). What is left out is said in one warning each, never
silently; what cannot be evaluated at all is an ``InputError`` of one line.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from isoscope.errors import InputError
from isoscope.retrieval.options import GRADE_RANGE

if TYPE_CHECKING:
    import numpy as np

MIN_DOCUMENTS = 2  # a search needs something to rank


@dataclass
class RetrievalTask:
    """Queries, documents and qrels (query id -> document id -> grade; grade >= 1 is relevant).

    ``query_ids`` / ``queries`` are the evaluated queries only (each has a relevant document). A task read from
    vectors files carries their rows in ``query_vectors`` / ``doc_vectors`` (its texts may be placeholders:
    ``has_texts`` False)."""

    name: str
    query_ids: list[str]
    queries: list[str]  # (q,) texts, one per query id
    doc_ids: list[str]
    documents: list[str]  # (n,) texts, one per document id
    qrels: dict[str, dict[str, int]]
    warnings: list[str] = field(default_factory=list)
    n_unjudged: int = 0  # queries of the file that no qrels row of this split names (not evaluated, not an error)
    query_vectors: np.ndarray | None = field(default=None, repr=False)  # (q, d) for a task read from vectors
    doc_vectors: np.ndarray | None = field(default=None, repr=False)  # (n, d)
    has_texts: bool = True

    @property
    def n_queries(self) -> int:
        return len(self.query_ids)

    @property
    def n_documents(self) -> int:
        return len(self.doc_ids)

    @property
    def n_judgements(self) -> int:
        return sum(len(docs) for docs in self.qrels.values())

    def relevant(self, query_id: str) -> dict[str, int]:
        """The documents judged relevant (grade >= 1) to a query, with their grades."""
        return {d: g for d, g in self.qrels.get(query_id, {}).items() if g >= 1}

    @property
    def fingerprint(self) -> str:
        """SHA-256 of everything a run reads: ids, texts, qrels and, for a task of vectors, their bytes."""
        import hashlib
        import json

        h = hashlib.sha256(
            json.dumps([self.query_ids, self.queries, self.doc_ids, self.documents, self.qrels]).encode()
        )
        for array in (self.query_vectors, self.doc_vectors):
            if array is not None:
                h.update(repr(array.shape).encode() + array.tobytes())
        return h.hexdigest()

    def summary(self) -> dict:
        return {
            "name": self.name,
            "queries": self.n_queries,
            "documents": self.n_documents,
            "judgements": self.n_judgements,
            "unjudged_queries": self.n_unjudged,
        }


def _unique(ids: Sequence[str], what: str, where: str) -> None:
    """InputError naming the first id that appears twice."""
    seen: dict[str, int] = {}
    for i, item in enumerate(ids):
        if item in seen:
            raise InputError(
                f"{where}: {what} id '{item[:60]}' appears twice (rows {seen[item] + 1} and {i + 1}); ids must be unique"
            )
        seen[item] = i


def _grade(grade: object, where: str, qid: str, did: str) -> int:
    """A judgement's grade as an int: a whole number within ``GRADE_RANGE`` (the loaders say which row; this holds
    for a task built in Python too), else an InputError."""
    lo, hi = GRADE_RANGE
    try:
        number = float(grade)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        number = math.nan
    if not number.is_integer() or not lo <= number <= hi:
        raise InputError(
            f"{where}: query '{qid[:40]}', document '{did[:40]}' has grade {str(grade)[:20]}; grades are whole "
            f"numbers from {lo} to {hi}"
        )
    return int(number)


def _read_qrels(
    judgements: Iterable[tuple[str, str, int]], query_text: dict, doc_known: set, r_src: str, notes: list[str]
) -> dict[str, dict[str, int]]:
    """query id -> {document id: grade} of the rows that name a known query and document (the first of repeated
    rows); one note in ``notes`` for the unknown rows and one for the repeated."""
    qrels: dict[str, dict[str, int]] = {}
    unknown, repeated, first_unknown = 0, 0, ""
    for qid, did, grade in judgements:
        if qid not in query_text or did not in doc_known:
            unknown += 1
            if not first_unknown:
                first_unknown = f"query '{qid[:40]}', document '{did[:40]}'"
            continue
        row = qrels.setdefault(qid, {})
        if did in row:
            repeated += 1
            continue
        row[did] = _grade(grade, r_src, qid, did)
    if unknown:
        notes.append(
            f"{r_src}: {unknown:,} row(s) name an id that is not among the queries or the documents "
            f"(first: {first_unknown}); left out"
        )
    if repeated:
        notes.append(f"{r_src}: {repeated:,} row(s) repeat a (query, document) pair; the first grade is kept")
    return qrels


def build_task(
    name: str,
    queries: Sequence[tuple[str, str]],
    documents: Sequence[tuple[str, str]],
    judgements: Iterable[tuple[str, str, int]],
    *,
    sources: tuple[str, str, str] = ("queries", "corpus", "qrels"),
    warnings: Sequence[str] = (),
) -> RetrievalTask:
    """A checked task from (id, text) queries and documents and (query id, document id, grade) rows.

    ``sources`` names the three inputs in messages (file names). Duplicate ids are an InputError; qrels rows
    naming unknown ids, repeated rows (the first is kept) and queries with no relevant document are left out
    with one warning each; a task with no query left to evaluate, or fewer than two documents, is an InputError.
    """
    q_src, d_src, r_src = sources
    _unique([q for q, _ in queries], "query", q_src)
    _unique([d for d, _ in documents], "document", d_src)
    if len(documents) < MIN_DOCUMENTS:
        raise InputError(f"{d_src}: {len(documents)} document(s); a search needs at least {MIN_DOCUMENTS}")
    query_text = dict(queries)
    doc_known = {d for d, _ in documents}
    notes = list(warnings)
    qrels = _read_qrels(judgements, query_text, doc_known, r_src, notes)
    if not qrels:
        raise InputError(f"{r_src}: no row names both a query and a document of this task; check the ids")
    hopeless = [q for q, docs in qrels.items() if not any(g >= 1 for g in docs.values())]
    if hopeless:
        notes.append(
            f"{r_src}: {len(hopeless):,} query(ies) (first: '{hopeless[0][:40]}') have no relevant document "
            "(every grade below 1) and are not evaluated, as trec_eval does"
        )
        for q in hopeless:
            del qrels[q]
    if not qrels:
        raise InputError(f"{r_src}: no query has a relevant document (a grade of 1 or more); nothing to evaluate")
    order = [q for q, _ in queries if q in qrels]  # the file's order
    return RetrievalTask(
        name=name,
        query_ids=order,
        queries=[query_text[q] for q in order],
        doc_ids=[d for d, _ in documents],
        documents=[t for _, t in documents],
        qrels={q: qrels[q] for q in order},
        warnings=notes,
        n_unjudged=len(queries) - len(order) - len(hopeless),
    )
