"""Public benchmarks fetched on request (never shipped): STS-B, as the three CSV files every STS-B example of
Isoscope reads (``stsb-en-{train,dev,test}.csv``: no header, sentence1, sentence2, score 0-5; the English files of
the STSb Multi MT dataset, github.com/PhilipMay/stsb-multi-mt).

``fetch_stsb(dest)`` downloads the dataset's English configuration from the Hugging Face Hub
(``huggingface_hub.snapshot_download``, dataset ``PhilipMay/stsb_multi_mt``) and writes the three files into
``dest``; offline (``HF_HUB_OFFLINE=1``, or no network) it is an InputError of one line that says what to do
instead. ``stsb_from_snapshot`` is the conversion alone, from the downloaded Parquet files.
"""

from __future__ import annotations

import csv
import logging
import os
from collections.abc import Callable
from pathlib import Path

from isoscope.errors import InputError
from isoscope.paths import ENV_STSB_DIR, STSB_FILES

log = logging.getLogger(__name__)

STSB_REPO = "PhilipMay/stsb_multi_mt"  # a dataset repository on the Hugging Face Hub
STSB_SPLITS = {"train": 5749, "dev": 1500, "test": 1379}  # pairs per split (the STS Benchmark's)
OFFLINE_VALUES = ("1", "on", "yes", "true")


def stsb_present(folder: Path) -> bool:
    return all((folder / name).is_file() for name in STSB_FILES)


HINT = f"or set {ENV_STSB_DIR} to a folder holding stsb-en-{{train,dev,test}}.csv"


def fetch_stsb(dest: Path, *, progress: Callable[[int, int], None] | None = None) -> Path:
    """STS-B's three CSV files in ``dest``, downloaded from the Hugging Face Hub (once; a complete folder is kept
    as it is). InputError of one line when offline or the download fails. ``progress(done, 3)``: the splits
    written (0 while the download runs)."""
    if stsb_present(dest):
        return dest
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in OFFLINE_VALUES:
        raise InputError(f"cannot download STS-B offline (HF_HUB_OFFLINE is set): rerun with a network, {HINT}")
    from huggingface_hub import snapshot_download

    from isoscope.data.hub import ENV_HUB_TIMEOUT, bound_hub_requests, hub_timeout_message

    bound_hub_requests()  # a server that accepts and never answers: one line after a timeout, not a hang
    if progress is not None:
        progress(0, len(STSB_SPLITS))
    log.info("downloading STS-B (%s) from the Hugging Face Hub", STSB_REPO)
    try:
        snapshot = snapshot_download(STSB_REPO, repo_type="dataset", allow_patterns=["en/*", "*/en/*", "*en*"])
    except Exception as exc:  # no network, a proxy, the Hub down: the message of any of them in one line
        waited = hub_timeout_message(exc)
        if waited is not None:
            raise InputError(
                f"cannot download STS-B: {waited}; check the network or HF_ENDPOINT ({ENV_HUB_TIMEOUT} sets the "
                f"wait), {HINT}"
            ) from None
        reason = " ".join(str(exc).split())[:80] or type(exc).__name__
        raise InputError(f"cannot download STS-B (no network? {reason}): rerun with a network, {HINT}") from None
    return stsb_from_snapshot(Path(snapshot), dest, progress=progress)


def _split_files(snapshot: Path) -> dict[str, Path]:
    """The English Parquet file of each split in a snapshot of the dataset (``en/`` or ``data/en/``, named by
    its split: ``test-00000-of-00001.parquet``, ``en/dev.parquet``...)."""
    found: dict[str, Path] = {}
    for path in sorted(snapshot.rglob("*.parquet")):
        parts = [p.lower() for p in path.relative_to(snapshot).parts]
        if "en" not in parts[:-1] and not parts[-1].startswith("en"):
            continue
        for split in STSB_SPLITS:
            if parts[-1].split(".")[0].split("-")[0] == split or (split in parts[:-1]):
                found.setdefault(split, path)
    missing = [s for s in STSB_SPLITS if s not in found]
    if missing:
        raise InputError(f"the STS-B download has no English {', '.join(missing)} split in {snapshot}")
    return found


def stsb_from_snapshot(snapshot: Path, dest: Path, *, progress: Callable[[int, int], None] | None = None) -> Path:
    """Write ``dest/stsb-en-{split}.csv`` (sentence1, sentence2, score; no header) from the English Parquet files
    of a snapshot of ``STSB_REPO``; each split must hold its STS Benchmark number of pairs (``progress(done, 3)``
    after each)."""
    import pyarrow.parquet as pq

    from isoscope.data.outputs import STSB_FOLDER_FILE, atomic_file

    dest.mkdir(parents=True, exist_ok=True)
    for done, (split, path) in enumerate(_split_files(snapshot).items(), 1):
        table = pq.read_table(path).to_pydict()
        score = "similarity_score" if "similarity_score" in table else "score"
        rows = list(zip(table["sentence1"], table["sentence2"], table[score], strict=True))
        if len(rows) != STSB_SPLITS[split]:
            raise InputError(f"the STS-B {split} split has {len(rows):,} pairs, not {STSB_SPLITS[split]:,}")
        # written beside its name and renamed in; the folder was checked as an STS-B folder, whose files are these
        with atomic_file(dest / f"stsb-en-{split}.csv", kind=STSB_FOLDER_FILE, force=True) as tmp:
            with open(tmp, "w", newline="", encoding="utf-8") as f:
                csv.writer(f).writerows((a, b, f"{float(c):g}") for a, b, c in rows)
        log.info("STS-B %s: %d pairs", split, len(rows))
        if progress is not None:
            progress(done, len(STSB_SPLITS))
    return dest
