"""The STS-B-derived retrieval task of the migration bench, built at run time from the STS-B CSVs (never committed).

Read from ``isoscope.paths.stsb_dir()`` (``$ISOSCOPE_STSB_DIR``, else ``../shared/data/stsb`` beside the checkout,
else where ``isoscope data stsb`` puts it): ``stsb-en-{train,dev,test}.csv``, rows ``sentence1,sentence2,score``
(0-5).

- The task uses the test pairs (1,379; ``SPLITS``):
  - corpus: every distinct sentence2 of them (the pairs scored below 4 make the distractors);
  - queries: every distinct sentence1 of a pair scored >= 4 that is not itself a corpus text;
  - qrels: each query -> every sentence2 it is paired with at score >= 4, grade 1.
- The generic fit texts: every distinct sentence of the train and dev pairs (both columns) that is not a text of
  the task, in file order (train first): texts from the same kind of source as the corpus that no query or
  document is. A run takes a prefix of them (the bench embeds them in chunks).

The test split alone keeps the corpus small enough to embed with mpnet on a shared 2-core machine; with dev and
test together it would be 2,776 documents and 541 queries (``stsb_task(splits=("dev", "test"))``).
"""

from __future__ import annotations

import csv
from pathlib import Path

from isoscope.paths import stsb_dir
from isoscope.retrieval.task import RetrievalTask, build_task

RELEVANT_SCORE = 4.0
SPLITS = ("test",)
DESCRIPTION = (
    "STS-B test: corpus = every distinct sentence2; queries = each distinct sentence1 of a pair scored >= 4 "
    "that is not a corpus text; qrels = query -> its sentence2s scored >= 4 (grade 1). Generic fit texts = every "
    "distinct STS-B train and dev sentence that is no text of the task (a prefix of them, train first)."
)


def _pairs(split: str, folder: Path) -> list[tuple[str, str, float]]:
    with open(folder / f"stsb-en-{split}.csv", newline="", encoding="utf-8") as f:
        return [(row[0], row[1], float(row[2])) for row in csv.reader(f) if len(row) == 3]


def stsb_task(folder: Path | None = None, *, splits: tuple[str, ...] = SPLITS) -> tuple[RetrievalTask, list[str]]:
    """(the task, the generic fit texts), as the module docs say."""
    folder = folder or stsb_dir()
    pairs = [p for split in splits for p in _pairs(split, folder)]
    docs = list(dict.fromkeys(s2 for _, s2, _ in pairs))
    doc_id = {t: f"d{i}" for i, t in enumerate(docs)}
    in_corpus = set(docs)
    queries = list(dict.fromkeys(s1 for s1, _, score in pairs if score >= RELEVANT_SCORE and s1 not in in_corpus))
    query_id = {t: f"q{i}" for i, t in enumerate(queries)}
    judgements = [
        (query_id[s1], doc_id[s2], 1) for s1, s2, score in pairs if score >= RELEVANT_SCORE and s1 in query_id
    ]
    task = build_task(
        "stsb-derived",
        [(query_id[t], t) for t in queries],
        [(doc_id[t], t) for t in docs],
        judgements,
    )
    used = in_corpus | {s1 for s1, _, _ in pairs}
    rest = [p for split in ("train", "dev", "test") if split not in splits for p in _pairs(split, folder)]
    generic = list(dict.fromkeys(t for s1, s2, _ in rest for t in (s1, s2) if t not in used))
    return task, generic
