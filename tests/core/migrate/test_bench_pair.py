"""The migration bench's pieces (bench/migrate.py, issue 53.7): the STS-B-derived task as its docs say it is built,
and (heavy) all-mpnet-base-v2 from its pinned PyPI pieces embedded by Isoscope exactly as sentence-transformers
embeds it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[3] / "bench"


@pytest.fixture(scope="module")
def bench_modules():
    sys.path.insert(0, str(BENCH))
    try:
        import _mpnet
        import _stsb_task

        yield _stsb_task, _mpnet
    finally:
        sys.path.remove(str(BENCH))


def _write(folder: Path, split: str, rows: list[tuple[str, str, float]]) -> None:
    (folder / f"stsb-en-{split}.csv").write_text("".join(f'"{a}","{b}",{s}\n' for a, b, s in rows))


def test_the_stsb_task_is_built_as_its_docs_say(tmp_path, bench_modules):
    stsb, _ = bench_modules
    _write(
        tmp_path,
        "test",
        [
            ("q one", "d one", 4.5),  # a query, relevant to d one
            ("q one", "d two", 4.0),  # the same query: d two relevant too (score exactly 4)
            ("q low", "d three", 3.9),  # below 4: q low is no query, d three a distractor
            ("d one", "d four", 5.0),  # sentence1 is a corpus text: no query (it would find itself)
        ],
    )
    _write(tmp_path, "train", [("g one", "q one", 1.0), ("g two", "g one", 2.0)])
    _write(tmp_path, "dev", [("g three", "d three", 1.0)])
    task, generic = stsb.stsb_task(tmp_path)
    assert task.documents == ["d one", "d two", "d three", "d four"]
    assert task.queries == ["q one"]
    assert task.qrels == {"q0": {"d0": 1, "d1": 1}}
    assert generic == ["g one", "g two", "g three"]  # train then dev, each once, none a text of the task


@pytest.mark.slow
def test_mpnet_from_its_pinned_pieces_embeds_as_sentence_transformers(bench_modules):
    """Downloads the five pieces (about 400 MB) on the first run; 50 STS-B test sentences."""
    stsb, mpnet = bench_modules
    folder = mpnet.fetch_mpnet()
    task, _ = stsb.stsb_task()
    check = mpnet.verify_mpnet(folder, list(task.documents)[:50])
    assert check["dims"] == 768
    assert check["max_abs_diff"] <= mpnet.TOLERANCE, check
