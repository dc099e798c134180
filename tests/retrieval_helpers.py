"""Retrieval tasks the tests build: BEIR folders written from rows, and the STS-B-derived task
(``scripts/stsb_retrieval.py``, the task of docs/results.md)."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def stsb_script():
    """``scripts/stsb_retrieval.py`` as a module (the scripts folder is not a package)."""
    spec = importlib.util.spec_from_file_location("stsb_retrieval", ROOT / "scripts" / "stsb_retrieval.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


def write_beir(
    folder: Path,
    queries: Sequence[tuple[str, str]],
    documents: Sequence[tuple[str, str]],
    qrels: Iterable[tuple[str, str, object]],
    split: str = "test",
) -> Path:
    """A BEIR folder of (id, text) queries and documents and (query id, document id, grade) rows."""
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    with open(folder / "corpus.jsonl", "w", encoding="utf-8") as f:
        for i, text in documents:
            f.write(json.dumps({"_id": i, "title": "", "text": text}) + "\n")
    with open(folder / "queries.jsonl", "w", encoding="utf-8") as f:
        for i, text in queries:
            f.write(json.dumps({"_id": i, "text": text}) + "\n")
    rows = "".join(f"{q}\t{d}\t{g}\n" for q, d, g in qrels)
    (folder / "qrels" / f"{split}.tsv").write_text("query-id\tcorpus-id\tscore\n" + rows, encoding="utf-8")
    return folder
