"""The numbers docs/ and README.md take from a command are what the command printed (issue 50, item 6).

Every such table sits between ``<!-- numbers:NAME -->`` and ``<!-- /numbers -->`` and is the one
``scripts/docs_numbers.py`` renders from docs/numbers.json (each command's ``--json`` output, kept under the
command as the page shows it); each command stands on its page; every number the prose quotes from them is the
file's; and every other table of numbers names where its numbers come from. No model runs here: a change that
moves a number fails these tests until ``make docs-numbers`` has rerun its command and rewritten the pages."""

from __future__ import annotations

import copy
import importlib.util
import re
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

# Tables of numbers that no command of ours prints: where each comes from, as its page must say
NOT_GENERATED: dict[tuple[str, str], str] = {
    ("docs/results.md", "| engine | sentences/s |"): "bench/RESULTS.md",  # timings of `make bench-peers`
    ("docs/results.md", "| | pre-trained | scratch |"): "make docs-numbers ARGS=landscape-stsb",  # pending
    ("docs/results.md", "| task | fit | pairs | system |"): "bench/migrate.py --markdown",  # a bench's hour of mpnet
}
NUMBER = re.compile(r"\d\.\d")


def _script():
    if "docs_numbers" not in sys.modules:
        spec = importlib.util.spec_from_file_location("docs_numbers", ROOT / "scripts" / "docs_numbers.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["docs_numbers"] = module
        spec.loader.exec_module(module)
    return sys.modules["docs_numbers"]


script = _script()
tables = sys.modules["docs_tables"]  # scripts/docs_tables.py and docs_results_sts.py, which the script imports
sts_results = sys.modules["docs_results_sts"]
NUMBERS = script.load_numbers()
RESULTS = {r.name: r for r in script.RESULTS}


@pytest.mark.parametrize("name", list(RESULTS))
def test_the_page_shows_what_the_numbers_file_holds(name: str) -> None:
    """Its commands as the page shows them, its table as rendered from their output, its quoted numbers."""
    assert script.check(NUMBERS, results=[RESULTS[name]]) == []


def test_the_numbers_file_holds_the_commands_of_the_pages_and_no_other() -> None:
    commands = [c for r in script.RESULTS if not r.pending for c in r.commands]  # a pending one's are not yet kept
    assert list(NUMBERS["runs"]) == list(dict.fromkeys(commands))
    for command, run in NUMBERS["runs"].items():
        assert {"date", "seconds", "commit", "output"} <= set(run), command


def test_every_marker_belongs_to_a_result() -> None:
    for page in script.PAGES:
        for name in script.ANY_MARKER.findall(script.read_page(page)):
            assert name in RESULTS, (page, name)


def test_a_moved_number_fails_until_the_page_is_regenerated() -> None:
    """The geometry table's cls flow average cosine (issue 50: the page said 0.003 where the command gave 0.0004)
    and the whitened mean pooling's Spearman the README quotes, each moved in the file alone."""
    moved = copy.deepcopy(NUMBERS)
    geometry = moved["runs"][sts_results.GEOMETRY_RUNS[0]]["output"]
    assert (geometry["pooling"], geometry["calibrate"]) == ("cls", "flow")
    geometry["calibrated"]["avg_cosine"] += 0.003
    sts = moved["runs"][sts_results.STS.replace("$pooling", "mean").replace("$method", "whitening")]["output"]
    sts["calibrated"]["spearman"] -= 0.5
    problems = script.check(moved)
    assert any("the table geometry-stsb is not" in p for p in problems), problems
    assert any(p.startswith("README.md: calibration-stsb: the prose does not say") for p in problems), problems
    regenerated = script.replace_marked(
        script.read_page(tables.RESULTS_PAGE),
        "geometry-stsb",
        script.rendered(RESULTS["geometry-stsb"], script.outputs(moved)),
    )
    assert (
        script.marked(regenerated)["geometry-stsb"]
        != script.marked(script.read_page(tables.RESULTS_PAGE))["geometry-stsb"]
    )


def test_a_command_runs_as_written_with_this_checkouts_paths(tmp_path: Path) -> None:
    stsb = tmp_path / "stsb data"
    line = script.runnable(
        "isoscope sts --pairs ../shared/data/stsb/stsb-en-test.csv --fit-on /tmp/all.txt --json", tmp_path, stsb
    )
    bin_dir = Path(sys.executable).parent
    assert line == (f"{bin_dir / 'isoscope'} sts --pairs '{stsb}'/stsb-en-test.csv --fit-on {tmp_path}/all.txt --json")
    line = script.runnable("python scripts/stsb_retrieval.py ~/.cache/isoscope/data/stsb/x.csv /tmp/b", tmp_path, stsb)
    assert line == f"{sys.executable} {ROOT / 'scripts' / 'stsb_retrieval.py'} '{stsb}'/x.csv {tmp_path}/b"
    with pytest.raises(ValueError, match="starts with python or isoscope"):
        script.runnable("bash -c true", tmp_path, stsb)


def _tables(text: str) -> list[tuple[int, list[str]]]:
    """(first line number, lines) of each Markdown table outside fenced blocks."""
    from tests.docs.documents import prose

    found: list[tuple[int, list[str]]] = []
    lines = prose(text).splitlines()
    for i, line in enumerate(lines):
        if line.startswith("|") and (i == 0 or not lines[i - 1].startswith("|")):
            end = i
            while end < len(lines) and lines[end].startswith("|"):
                end += 1
            found.append((i, lines[i:end]))
    return found


def unsourced(page: str, text: str) -> list[str]:
    """The tables of numbers of ``text`` outside markers whose source (``NOT_GENERATED``) the 8 lines above them do
    not name, one line each."""
    inside = set()
    for m in script.MARKER.finditer(text):
        first = text[: m.start(2)].count("\n")
        inside.update(range(first, first + m.group(2).count("\n")))
    found = []
    for start, lines in _tables(text):
        if not NUMBER.search("\n".join(lines[2:])) or start in inside:
            continue
        source = next((s for (p, head), s in NOT_GENERATED.items() if p == page and lines[0].startswith(head)), None)
        before = "\n".join(text.splitlines()[max(0, start - 8) : start])
        if source is None or source not in before:
            found.append(f"{page}:{start + 1}: a table of numbers that no command writes: {lines[0]}")
    return found


@pytest.mark.parametrize("page", script.PAGES)
def test_every_table_of_numbers_is_generated_or_names_its_source(page: str) -> None:
    assert unsourced(page, script.read_page(page)) == []


def test_a_table_of_numbers_outside_markers_is_found() -> None:
    table = "| model | share |\n|---|---:|\n| bert | 22.2% |\n"
    assert unsourced("docs/x.md", f"Text.\n\n{table}") == [
        "docs/x.md:3: a table of numbers that no command writes: | model | share |"
    ]
    assert unsourced("docs/x.md", f"<!-- numbers:x -->\n{table}<!-- /numbers -->\n") == []
    assert unsourced("docs/x.md", "| a | b |\n|---|---|\n| yes | no |\n") == []  # no numbers
    head = "| engine | sentences/s |\n|---|---:|\n| torch | 175 |\n| onnx | 20.9 |\n"
    assert unsourced("docs/results.md", f"Copied from bench/RESULTS.md:\n\n{head}") == []
    assert unsourced("docs/results.md", f"Measured once:\n\n{head}") != []


def test_the_numbers_file_keeps_no_text_of_the_data() -> None:
    """The outputs quote sentences (STS-B's among them): the file keeps their numbers only."""
    body = (ROOT / "docs" / "numbers.json").read_text(encoding="utf-8")
    assert '"text":' not in body
    assert script.without_texts({"a": [{"text": "x", "n": 1}], "text": "y"}) == {"a": [{"n": 1}]}
