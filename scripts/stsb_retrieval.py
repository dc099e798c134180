"""A retrieval task in BEIR's layout derived from an STS-B file (the tests' and docs/results.md's task).

    python scripts/stsb_retrieval.py ../shared/data/stsb/stsb-en-test.csv /tmp/stsb-beir
    isoscope retrieval --beir /tmp/stsb-beir --json

Queries are the first sentences of the pairs graded 4 or more (mostly equivalent to equivalent), each relevant
to its pair's second sentence (grade 1; a sentence that is the first of several such pairs is one query with
several relevant documents); the corpus is every other distinct sentence of the file. A query's own text is
left out of the corpus, or it would rank itself first; a second sentence that is itself a query is left out of
the corpus with it, and a query left with no relevant document is dropped. Standard library only.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

MIN_SCORE = 4.0


def stsb_task(csv_path: str | Path, min_score: float = MIN_SCORE) -> tuple[list[str], dict[str, list[str]], list[str]]:
    """(queries in file order, query -> its relevant sentences, corpus sentences) of an STS-B pairs file."""
    with open(csv_path, newline="", encoding="utf-8") as f:
        pairs = [(row[0].strip(), row[1].strip(), float(row[2])) for row in csv.reader(f) if len(row) >= 3]
    relevant: dict[str, list[str]] = {}
    for first, second, score in pairs:
        if score >= min_score and first != second:
            relevant.setdefault(first, [])
            if second not in relevant[first]:
                relevant[first].append(second)
    sentences = list(dict.fromkeys(s for first, second, _ in pairs for s in (first, second)))
    corpus = [s for s in sentences if s not in relevant]
    kept = set(corpus)
    relevant = {q: [d for d in docs if d in kept] for q, docs in relevant.items()}
    queries = [q for q in relevant if relevant[q]]
    return queries, {q: relevant[q] for q in queries}, corpus


def write_stsb_beir(csv_path: str | Path, out: str | Path, min_score: float = MIN_SCORE) -> dict[str, int]:
    """The task of ``stsb_task`` written as a BEIR folder (corpus.jsonl, queries.jsonl, qrels/test.tsv)."""
    queries, relevant, corpus = stsb_task(csv_path, min_score)
    root = Path(out)
    (root / "qrels").mkdir(parents=True, exist_ok=True)
    doc_id = {s: f"d{i}" for i, s in enumerate(corpus)}
    with open(root / "corpus.jsonl", "w", encoding="utf-8") as f:
        for s in corpus:
            f.write(json.dumps({"_id": doc_id[s], "title": "", "text": s}, ensure_ascii=False) + "\n")
    with open(root / "queries.jsonl", "w", encoding="utf-8") as f:
        for i, q in enumerate(queries):
            f.write(json.dumps({"_id": f"q{i}", "text": q}, ensure_ascii=False) + "\n")
    with open(root / "qrels" / "test.tsv", "w", encoding="utf-8") as f:
        f.write("query-id\tcorpus-id\tscore\n")
        for i, q in enumerate(queries):
            for d in relevant[q]:
                f.write(f"q{i}\t{doc_id[d]}\t1\n")
    return {"queries": len(queries), "documents": len(corpus), "judgements": sum(map(len, relevant.values()))}


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python scripts/stsb_retrieval.py STSB_CSV OUT_FOLDER")
    print(json.dumps(write_stsb_beir(sys.argv[1], sys.argv[2])))
