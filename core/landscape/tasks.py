"""Labelled classification tasks for fine-tuning: single texts or sentence pairs, with a held-out split.

Built in: ``stsb`` (STS-B pairs, label 1 when the score is >= 3; train file for training, dev file held
out), ``demo-topic`` (topic of each text of assets/demo_corpus.csv, one class per topic) and ``demo-pairs``
(assets/demo_pairs.csv, similar when score >= 3). Anything else is a user file with a header row
``text,label`` or ``sentence1,sentence2,label`` (CSV, TSV, JSONL or Parquet).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from isoscope.cache import make_key, text_digest
from isoscope.data import (
    MAX_ROWS,
    TABLE_FORMATS,
    TEXT_COLUMN_NAMES,
    as_source,
    clean_texts,
    load_corpus,
    load_pairs,
    read_table,
    truncate_texts,
)
from isoscope.errors import InputError
from isoscope.landscape.options import BUILTIN_TASKS, default_task2  # noqa: F401  (default_task2 re-exported)
from isoscope.paths import DEMO_CORPUS, DEMO_PAIRS, stsb_dir

log = logging.getLogger(__name__)

SIMILAR_THRESHOLD = 3.0  # pair label 1 ("similar") when score >= 3 on the 0-5 STS scale
HELDOUT_FRACTION = 0.25  # share held out for tasks without a separate held-out file
MIN_PER_CLASS = 2
MAX_CLASSES = 100
STSB_FILES = ("stsb-en-train.csv", "stsb-en-dev.csv")  # training and held-out split of the built-in stsb task


@dataclass
class Task:
    """Texts (or text pairs) with integer labels 0..n_classes-1."""

    texts_a: list[str]
    texts_b: list[str] | None  # None for single-text tasks
    labels: np.ndarray  # (n,) int64
    n_classes: int
    name: str
    label_names: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.labels = np.asarray(self.labels, np.int64)
        if len(self.labels) != len(self.texts_a) or (
            self.texts_b is not None and len(self.texts_b) != len(self.texts_a)
        ):
            raise ValueError("texts_a, texts_b and labels must have the same length")
        if len(self.labels) and (self.labels.min() < 0 or self.labels.max() >= self.n_classes):
            raise ValueError(f"labels must lie in 0..{self.n_classes - 1}")

    def __len__(self) -> int:
        return len(self.texts_a)

    @property
    def is_pair(self) -> bool:
        return self.texts_b is not None

    def subset(self, idx: np.ndarray) -> Task:
        idx = np.asarray(idx, np.int64)
        return Task(
            [self.texts_a[i] for i in idx],
            [self.texts_b[i] for i in idx] if self.texts_b is not None else None,
            self.labels[idx],
            self.n_classes,
            self.name,
            list(self.label_names),
        )

    def digest(self) -> str:
        """Content key: texts, labels and classes."""
        texts = self.texts_a + (self.texts_b or [])
        return make_key("task", text_digest(texts), self.labels.tobytes().hex(), self.n_classes, self.is_pair)

    def class_counts(self) -> list[int]:
        return np.bincount(self.labels, minlength=self.n_classes).tolist()


@dataclass
class TaskSplit:
    """A training pool and a held-out pool of the same task."""

    train: Task
    heldout: Task
    warnings: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.train.name


def load_task(spec: str, seed: int = 0, data_dir: str | Path | None = None) -> TaskSplit:
    """A built-in task by name or a user file by path; InputError with what to fix otherwise."""
    spec = str(spec).strip()
    if spec == "stsb":
        return _stsb(Path(data_dir) if data_dir else stsb_dir())
    if spec == "demo-topic":
        corpus = load_corpus(DEMO_CORPUS)
        if "topic" not in corpus.meta.columns:
            raise InputError("assets/demo_corpus.csv has no topic column")
        task = _labelled(corpus.texts, None, corpus.meta["topic"].tolist(), "demo-topic")
        return split_task(task, seed, warnings=corpus.warnings)
    if spec == "demo-pairs":
        pairs = load_pairs(DEMO_PAIRS)
        return split_task(_binary_pairs(pairs, "demo-pairs"), seed, warnings=pairs.warnings)
    path = Path(spec).expanduser()
    if spec != "-" and not path.exists():  # - is standard input
        raise InputError(f"unknown task '{spec}': use one of {', '.join(BUILTIN_TASKS)} or a path to a labelled file")
    task, warnings = load_task_file(path)
    return split_task(task, seed, warnings=warnings)


def available_tasks(data_dir: str | Path | None = None) -> tuple[str, ...]:
    """The built-in tasks that can run here: the demo tasks, and ``stsb`` when its files are present."""
    folder = Path(data_dir) if data_dir else stsb_dir()
    has_stsb = all((folder / name).exists() for name in STSB_FILES)
    return ("demo-topic", "demo-pairs") + (("stsb",) if has_stsb else ())


def _stsb(folder: Path) -> TaskSplit:
    train_path, dev_path = (folder / name for name in STSB_FILES)
    if not train_path.exists() or not dev_path.exists():
        raise InputError(f"STS-B not found in {folder} (need {' and '.join(STSB_FILES)}); set ISOSCOPE_STSB_DIR")
    train, dev = load_pairs(train_path), load_pairs(dev_path)
    return TaskSplit(_binary_pairs(train, "stsb"), _binary_pairs(dev, "stsb"), train.warnings + dev.warnings)


def _binary_pairs(pairs, name: str) -> Task:
    if pairs.scores is None:
        raise InputError(f"{pairs.name}: no score column; a pair task needs scores (similar when >= 3)")
    labels = (pairs.scores >= SIMILAR_THRESHOLD).astype(np.int64)
    return Task(pairs.sentence1, pairs.sentence2, labels, 2, name, ["not similar", "similar"])


def _labelled(texts_a: list[str], texts_b: list[str] | None, raw_labels: list, name: str) -> Task:
    """Map label values to 0..k-1 (numeric order when all are integers, else sorted strings)."""
    values = [str(v).strip() for v in raw_labels]
    uniq = sorted(set(values))
    if all(_is_int(v) for v in uniq):
        uniq = sorted(uniq, key=int)
    index = {v: k for k, v in enumerate(uniq)}
    return Task(texts_a, texts_b, np.array([index[v] for v in values], np.int64), len(uniq), name, uniq)


def _is_int(v: str) -> bool:
    try:
        int(v)
    except ValueError:
        return False
    return True


def load_task_file(source: str | Path | bytes, name: str | None = None) -> tuple[Task, list[str]]:
    """A labelled file with a header: ``text,label`` or ``sentence1,sentence2,label``.

    Returns (task, warnings), ready for ``split_task``. Rows with an empty text or label are
    dropped with a warning; every class needs at least two rows.
    """
    src = as_source(source, name)
    raw, name = src.read_all(), src.name
    if not raw.strip():
        raise InputError(f"{name}: the file is empty")
    fmt = src.format(TABLE_FORMATS)
    df, has_header, warnings = read_table(raw, name, fmt)
    cols = {str(c).strip().lower(): c for c in df.columns}
    if not has_header and len(df) and "label" in {str(v).strip().lower() for v in df.iloc[0]}:
        raise InputError(f"{name}: next to 'label', name the text column 'text' (or give 'sentence1' and 'sentence2')")
    if "label" not in cols:
        raise InputError(
            f"{name}: needs a header row with a 'label' column: text,label or sentence1,sentence2,label "
            f"(found {', '.join(map(str, df.columns))[:120]})"
        )
    if "sentence1" in cols and "sentence2" in cols:
        texts = {"a": clean_texts(df[cols["sentence1"]]), "b": clean_texts(df[cols["sentence2"]])}
    elif any(c in cols for c in TEXT_COLUMN_NAMES):
        texts = {"a": clean_texts(df[cols[next(c for c in TEXT_COLUMN_NAMES if c in cols)]])}
    else:
        raise InputError(f"{name}: needs a 'text' column, or 'sentence1' and 'sentence2' columns, next to 'label'")
    labels = clean_texts(df[cols["label"]])
    keep = labels != ""
    for t in texts.values():
        keep &= t != ""
    if not keep.any():
        raise InputError(f"{name}: no row has both a text and a label")
    if (~keep).sum():
        warnings.append(f"{name}: dropped {int((~keep).sum())} row(s) with an empty text or label")
    if int(keep.sum()) > MAX_ROWS:
        raise InputError(f"{name}: {int(keep.sum()):,} rows is over the limit of {MAX_ROWS:,}; sample the file")
    kept = truncate_texts([t[keep] for t in texts.values()], name, warnings)
    task = _labelled(
        kept[0].tolist(),
        kept[1].tolist() if len(kept) == 2 else None,
        labels[keep].tolist(),
        Path(name).stem,
    )
    counts = pd.Series(task.class_counts(), index=task.label_names)
    if task.n_classes < 2:
        raise InputError(f"{name}: only one label value ({task.label_names[0]!r}); a classifier needs at least two")
    if task.n_classes > MAX_CLASSES:
        raise InputError(
            f"{name}: {task.n_classes} label values; at most {MAX_CLASSES} classes (is 'label' a text column?)"
        )
    rare = counts[counts < MIN_PER_CLASS]
    if len(rare):
        raise InputError(
            f"{name}: label(s) {', '.join(map(repr, rare.index[:5]))} have fewer than {MIN_PER_CLASS} rows; "
            "add examples or remove them"
        )
    return task, warnings


def split_task(
    task: Task, seed: int = 0, *, warnings: list[str] | None = None, fraction: float = HELDOUT_FRACTION
) -> TaskSplit:
    """Seeded stratified split: about ``fraction`` of each class held out (at least one row per class)."""
    rng = np.random.default_rng(seed)
    held: list[int] = []
    for c in range(task.n_classes):
        idx = np.flatnonzero(task.labels == c)
        if len(idx) < MIN_PER_CLASS:
            continue
        k = max(1, round(fraction * len(idx)))
        held.extend(rng.permutation(idx)[:k].tolist())
    held_mask = np.zeros(len(task), bool)
    held_mask[held] = True
    return TaskSplit(
        task.subset(np.flatnonzero(~held_mask)), task.subset(np.flatnonzero(held_mask)), list(warnings or [])
    )


def sample(task: Task, n: int, seed: int) -> Task:
    """Seeded random subset of ``n`` rows (all rows when n >= len)."""
    if n >= len(task):
        return task
    idx = np.sort(np.random.default_rng(seed).permutation(len(task))[:n])
    return task.subset(idx)
