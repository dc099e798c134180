"""Retrieval tasks from a user's files, read with the bounds of every file (``isoscope.data``: ``DecodeLimits``).

- a BEIR folder (``load_beir``): ``corpus.jsonl`` (``_id``, ``title``, ``text``), ``queries.jsonl`` (``_id``,
  ``text``) and ``qrels/<split>.tsv`` (``query-id``, ``corpus-id``, ``score``; TREC's four columns too), or the
  same folder zipped (``load_beir_zip``, what the dashboard uploads);
- a table of (query, relevant document[, grade]) rows (``load_task_table``: CSV, TSV, JSONL or Parquet with
  columns ``query`` and ``document``, or the first two columns without a header); a row with an empty query adds
  a document that no query asks for;
- two vectors files and qrels (``load_vector_task``): ``isoscope.data.load_vector_file`` for each side, ids from
  an ``_id``/``id`` column or the row numbers.

``load_task`` picks the reader from what ``source`` is. A document's text is its title and text joined by a space,
as BEIR's sentence-transformers models read it. Every file passes through the bounded readers of
``isoscope.data`` (rows, bytes, line length, characters per text), so a hostile file is one line, never a
machine's memory.
"""

from __future__ import annotations

import io
import math
import zipfile
from pathlib import Path

from isoscope.data.limits import DecodeLimits, MiB, current_limits
from isoscope.data.source import TABLE_FORMATS, as_source
from isoscope.data.tables import check_rows, clean_texts, read_table, truncate_texts
from isoscope.errors import InputError, printable
from isoscope.retrieval.options import GRADE_RANGE, SPLIT_NAME, check_split
from isoscope.retrieval.task import RetrievalTask, build_task

CORPUS_FILE = "corpus.jsonl"
QUERIES_FILE = "queries.jsonl"
QRELS_FOLDER = "qrels"
DEFAULT_SPLIT = "test"
QRELS_HEADER = ("query-id", "corpus-id", "score")
TABLE_HEADER = ("query", "document", "grade")
GRADE_NAMES = ("grade", "relevance", "score", "label")
ID_COLUMNS = ("_id", "id", "query-id", "corpus-id", "query_id", "doc_id", "docid")


# ---------------------------------------------------------------- JSON Lines and qrels


def _jsonl_items(source: str | Path | bytes, name: str, limits: DecodeLimits, *, title: bool) -> list[tuple[str, str]]:
    """(id, text) of a BEIR ``corpus.jsonl`` (``title`` joined to ``text``) or ``queries.jsonl``."""
    src = as_source(source, name, limits)
    if src.is_blank():
        raise InputError(f"{name}: the file is empty")
    df, _, warnings = read_table(src, name, "jsonl", limits=limits)
    check_rows(len(df), name, limits.max_rows)
    for column in ("_id", "text"):
        if column not in df.columns:
            raise InputError(
                f'{name}: every line needs "_id" and "text"; found {", ".join(map(str, df.columns))[:200]}'
            )
    ids = [_id_text(v, name, i) for i, v in enumerate(df["_id"])]
    texts = clean_texts(df["text"])
    if title and "title" in df.columns:
        titles = clean_texts(df["title"])
        texts = (titles + " " + texts).str.strip()
    (texts,) = truncate_texts([texts], name, warnings, max_chars=limits.max_chars)
    return list(zip(ids, texts.tolist(), strict=True))


def _id_text(value: object, name: str, row: int) -> str:
    """An id as written (a JSON number too), less the spaces around it. A missing or empty id, or one holding a
    control character (it would vanish, or print as the escape another id may spell out: two ids that differ by
    one would collide), is an InputError naming its row."""
    text = "" if value is None else str(value).strip(" \t\r\n")
    if not text or text == "nan":
        raise InputError(f"{name}: row {row + 1} has no id")
    if printable(text) != text:
        raise InputError(
            f"{name}: row {row + 1} has id '{printable(text)[:60]}', which holds a control character; ids are "
            "printable text"
        )
    return text


def _grade(value: object, name: str, row: int) -> int:
    """A relevance grade: a whole number (``2`` or ``2.0``) within ``GRADE_RANGE``; anything else is an
    InputError naming its row (a grade of 1e30 never reaches trec_eval)."""
    text = str(value).strip()
    lo, hi = GRADE_RANGE
    try:
        number = float(text)
    except ValueError:
        number = math.nan
    if not number.is_integer() or not lo <= number <= hi:
        raise InputError(
            f"{name}: row {row + 1} has grade '{text[:20]}'; grades are whole numbers from {lo} to {hi} (0, 1, 2, ...)"
        )
    return int(number)


def read_qrels(source: str | Path | bytes, name: str | None = None, *, limits: DecodeLimits | None = None):
    """(query id, document id, grade) rows of a qrels file: BEIR's TSV with a ``query-id corpus-id score`` header,
    the same three columns without it, or TREC's four (``query 0 document grade``); CSV too."""
    limits = limits or current_limits()
    src = as_source(source, name, limits)
    name = src.name
    if src.is_blank():
        raise InputError(f"{name}: the file is empty")
    fmt = "csv" if Path(name).suffix.lower() == ".csv" else "tsv"  # .tsv, .txt, no suffix: tab-separated
    df, has_header, _ = read_table(src, name, fmt, header_names=QRELS_HEADER, limits=limits)
    check_rows(len(df), name, limits.max_rows)
    if has_header:
        missing = [c for c in QRELS_HEADER if c not in df.columns]
        if missing:
            raise InputError(f"{name}: the header needs {', '.join(QRELS_HEADER)}; missing {', '.join(missing)}")
        cols = list(QRELS_HEADER)
    elif df.shape[1] == 3:
        cols = list(df.columns[:3])
    elif df.shape[1] == 4:  # TREC: query-id, iteration (unused), document-id, grade
        cols = [df.columns[0], df.columns[2], df.columns[3]]
    else:
        raise InputError(
            f"{name}: a qrels row is query-id, corpus-id, score (tab-separated); found {df.shape[1]} columns"
        )
    q, d, g = (df[c].tolist() for c in cols)
    return [(_id_text(q[i], name, i), _id_text(d[i], name, i), _grade(g[i], name, i)) for i in range(len(df))]


# ---------------------------------------------------------------- BEIR folders and zips


def beir_splits(folder: str | Path) -> list[str]:
    """The splits a BEIR folder has qrels for (``qrels/<split>.tsv`` whose stem is a split name), sorted."""
    return sorted(p.stem for p in (Path(folder) / QRELS_FOLDER).glob("*.tsv") if SPLIT_NAME.fullmatch(p.stem))


def load_beir(folder: str | Path, split: str = DEFAULT_SPLIT, *, limits: DecodeLimits | None = None) -> RetrievalTask:
    """A BEIR folder: ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/<split>.tsv`` (InputError naming what is missing)."""
    split = check_split(split)  # a name, never a path: checked before any file is looked for
    limits = limits or current_limits()
    root = Path(folder).expanduser()
    shown = printable(root)
    if not root.is_dir():
        raise InputError(f"{shown} is not a folder; a BEIR task is a folder with {CORPUS_FILE}, {QUERIES_FILE}, qrels/")
    for needed in (CORPUS_FILE, QUERIES_FILE):
        if not (root / needed).exists():
            raise InputError(
                f"{shown}: no {needed}; a BEIR task has {CORPUS_FILE}, {QUERIES_FILE} and qrels/<split>.tsv"
            )
    qrels = root / QRELS_FOLDER / f"{split}.tsv"
    if not qrels.exists():
        have = ", ".join(beir_splits(root)) or "none"
        raise InputError(f"{shown}: no qrels/{split}.tsv; the splits with qrels are: {have}")
    return _beir(
        root.name or shown,
        split,
        corpus=lambda: _jsonl_items(root / CORPUS_FILE, CORPUS_FILE, limits, title=True),
        queries=lambda: _jsonl_items(root / QUERIES_FILE, QUERIES_FILE, limits, title=False),
        qrels=lambda: read_qrels(qrels, f"qrels/{split}.tsv", limits=limits),
    )


def _beir(name: str, split: str, *, corpus, queries, qrels) -> RetrievalTask:
    docs, qs, rows = corpus(), queries(), qrels()
    sources = (QUERIES_FILE, CORPUS_FILE, f"qrels/{split}.tsv")
    return build_task(f"{name} ({split})", qs, docs, rows, sources=sources)


def _zip_member(archive: zipfile.ZipFile, suffix: str, name: str, limit: int) -> bytes:
    """The bytes of the member whose path ends with ``suffix`` (the shortest such path), read to at most ``limit``
    bytes whatever its header claims."""
    found = [i for i in archive.infolist() if not i.is_dir() and ("/" + i.filename).endswith("/" + suffix)]
    if not found:
        raise InputError(f"{name}: no {suffix} in the zip; zip a BEIR folder ({CORPUS_FILE}, {QUERIES_FILE}, qrels/)")
    info = min(found, key=lambda i: len(i.filename))
    if info.file_size > limit:
        raise InputError(f"{name}: {suffix} is larger than {limit / MiB:,.0f} MiB; split it or sample it")
    with archive.open(info) as f:
        data = f.read(limit + 1)  # the header's size may lie: read no more than the limit allows
    if len(data) > limit:
        raise InputError(f"{name}: {suffix} is larger than {limit / MiB:,.0f} MiB; split it or sample it")
    return data


def load_beir_zip(
    data: bytes, name: str = "upload.zip", split: str = DEFAULT_SPLIT, *, limits: DecodeLimits | None = None
) -> RetrievalTask:
    """A zipped BEIR folder (the dashboard's upload): its three files read from the archive, each bounded."""
    split = check_split(split)
    limits = limits or current_limits()
    name = printable(name)
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError):
        raise InputError(f"{name}: not a zip file; zip a BEIR folder ({CORPUS_FILE}, {QUERIES_FILE}, qrels/)") from None
    with archive:
        try:
            corpus = _zip_member(archive, CORPUS_FILE, name, limits.max_bytes)
            queries = _zip_member(archive, QUERIES_FILE, name, limits.max_bytes)
            qrels = _zip_member(archive, f"{QRELS_FOLDER}/{split}.tsv", name, limits.max_bytes)
        except (zipfile.BadZipFile, NotImplementedError, RuntimeError, EOFError) as exc:  # damaged, encrypted
            raise InputError(f"{name}: the zip cannot be read ({type(exc).__name__}); zip the folder again") from None
    return _beir(
        Path(name).stem,
        split,
        corpus=lambda: _jsonl_items(corpus, CORPUS_FILE, limits, title=True),
        queries=lambda: _jsonl_items(queries, QUERIES_FILE, limits, title=False),
        qrels=lambda: read_qrels(qrels, f"qrels/{split}.tsv", limits=limits),
    )


# ---------------------------------------------------------------- a table of (query, document[, grade])


def _column(df, names: tuple[str, ...]) -> str | None:
    lower = {str(c).strip().lower(): c for c in df.columns}
    return next((lower[n] for n in names if n in lower), None)


def _numbered(texts: list[str], prefix: str) -> dict[str, str]:
    """Each distinct non-empty text once, in order of first appearance -> its id ``prefix0``, ``prefix1``, ..."""
    return {t: f"{prefix}{i}" for i, t in enumerate(dict.fromkeys(t for t in texts if t))}


def load_task_table(
    source: str | Path | bytes, name: str | None = None, *, limits: DecodeLimits | None = None
) -> RetrievalTask:
    """A table of (query, relevant document[, grade]) rows: the documents are every distinct document of the table
    (a row with an empty query adds one that no query asks for), the grade 1 when a row gives none."""
    limits = limits or current_limits()
    src = as_source(source, name, limits)
    name = src.name
    if src.is_blank():
        raise InputError(f"{name}: the file is empty")
    df, has_header, warnings = read_table(
        src, name, src.format(TABLE_FORMATS), header_names=(*TABLE_HEADER, *GRADE_NAMES), limits=limits
    )
    check_rows(len(df), name, limits.max_rows)
    q_col, d_col = _column(df, ("query", "question")), _column(df, ("document", "doc", "passage", "answer"))
    g_col = _column(df, GRADE_NAMES)
    if q_col is None or d_col is None:
        if has_header or df.shape[1] < 2:
            raise InputError(
                f"{name}: need columns query and document (and optionally grade); found "
                + ", ".join(map(str, df.columns))[:200]
            )
        q_col, d_col = df.columns[0], df.columns[1]
        g_col = df.columns[2] if df.shape[1] > 2 else None
    queries, docs = clean_texts(df[q_col]), clean_texts(df[d_col])
    queries, docs = truncate_texts([queries, docs], name, warnings, max_chars=limits.max_chars)
    cells = [""] * len(df) if g_col is None else clean_texts(df[g_col]).tolist()
    grades = [_grade(v, name, i) if v else 1 for i, v in enumerate(cells)]  # no grade: 1, relevant
    empty_docs = int((docs == "").sum())
    if empty_docs:
        warnings.append(f"{name}: {empty_docs:,} row(s) with an empty document left out")
    q_ids, d_ids = _numbered(queries.tolist(), "q"), _numbered(docs.tolist(), "d")
    rows = [(q_ids[q], d_ids[d], g) for q, d, g in zip(queries, docs, grades, strict=True) if q and d]
    return build_task(
        name,
        [(i, t) for t, i in q_ids.items()],
        [(i, t) for t, i in d_ids.items()],
        rows,
        sources=(name, name, name),
        warnings=warnings,
    )


# ---------------------------------------------------------------- two vectors files and qrels


def _table_ids(table, name: str) -> list[str]:
    """A vectors file's row ids: its ``_id``/``id`` column, else the row numbers ``0``, ``1``, ..."""
    meta = table.meta
    col = None if meta is None else _column(meta, ID_COLUMNS)
    if col is None:
        return [str(i) for i in range(len(table))]
    return [_id_text(v, name, i) for i, v in enumerate(meta[col])]


def load_vector_task(
    queries: str, documents: str, qrels: str | Path, *, limits: DecodeLimits | None = None
) -> RetrievalTask:
    """Queries' and documents' vectors computed elsewhere (``FILE[:COLUMN]`` each, ``isoscope.data.load_vector_file``)
    and qrels naming their rows (an ``_id``/``id`` column of each file, else row numbers)."""
    import numpy as np

    from isoscope.data.vectors import load_vector_file

    q_table, d_table = load_vector_file(str(queries)), load_vector_file(str(documents))
    if q_table.dims != d_table.dims:
        raise InputError(
            f"{q_table.name} has {q_table.dims} dimensions and {d_table.name} {d_table.dims}; queries and documents "
            "must come from one space"
        )
    q_ids, d_ids = _table_ids(q_table, q_table.name), _table_ids(d_table, d_table.name)
    has_texts = q_table.texts is not None and d_table.texts is not None
    q_texts = q_table.texts if q_table.texts is not None else [f"query {i}" for i in q_ids]
    d_texts = d_table.texts if d_table.texts is not None else [f"document {i}" for i in d_ids]
    task = build_task(
        f"{q_table.name} | {d_table.name}",
        list(zip(q_ids, q_texts, strict=True)),
        list(zip(d_ids, d_texts, strict=True)),
        read_qrels(qrels, limits=limits),
        sources=(q_table.name, d_table.name, printable(Path(qrels).name)),
        warnings=[*q_table.warnings, *d_table.warnings],
    )
    row = {q: i for i, q in enumerate(q_ids)}
    task.query_vectors = np.ascontiguousarray(q_table.vectors[[row[q] for q in task.query_ids]])  # (q, d)
    task.doc_vectors = q_table.vectors if q_table is d_table else d_table.vectors  # (n, d), rows = doc_ids
    task.has_texts = has_texts
    return task


# ---------------------------------------------------------------- any of them


def load_task(source: str | Path, split: str = DEFAULT_SPLIT) -> RetrievalTask:
    """A BEIR folder, a zipped one (``.zip``) or a table of (query, document[, grade]) rows."""
    path = Path(source).expanduser()
    if path.is_dir():
        return load_beir(path, split)
    if path.suffix.lower() == ".zip":
        src = as_source(path, None)
        return load_beir_zip(src.read_all(), src.name, split)
    return load_task_table(path)
