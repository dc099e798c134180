"""The numbers of docs/ and README.md that come from a command: run the commands, keep their JSON, write the tables.

    python scripts/docs_numbers.py                  # run what docs/numbers.json lacks, then write every table
    python scripts/docs_numbers.py geometry-stsb    # only the results named (--list names them)
    python scripts/docs_numbers.py --rerun NAME     # run NAME's commands again (after a change that may move them)
    python scripts/docs_numbers.py --tables         # write the tables from docs/numbers.json alone (no model)
    python scripts/docs_numbers.py --check          # the pages against docs/numbers.json; exit 1 on a difference
    python scripts/docs_numbers.py --list           # every command, whether it is kept, its last wall time

``make docs-numbers`` runs the first. A table sits on its page between ``<!-- numbers:NAME -->`` and
``<!-- /numbers -->`` and is rendered (``scripts/docs_results_*.py``, ``scripts/docs_tables.py``) from the JSON its commands printed with
``--json``, kept in docs/numbers.json under each command as the page shows it, with when, on which commit and in
how many seconds it ran. A command already kept is not run again (a command whose text changed is a new one), so
a long regeneration resumes where it stopped: run it with nohup. A command runs as written from a scratch folder
(``--work``), except that STS-B's folder (``../shared/data/stsb/``, ``~/.cache/isoscope/data/stsb/``) is
``isoscope.paths.stsb_dir()``, ``/tmp/`` is the scratch folder, ``python`` is this interpreter and ``isoscope``
its venv's. The numbers the prose quotes are rendered from the same file, and ``--check`` finds each on its page;
``tests/docs/test_numbers.py`` runs those checks (no model), so a change that moves a number fails until the
pages are regenerated and their prose agrees.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from docs_results_spaces import COMPARE, LANDSCAPE, RETRIEVAL, SWEEP, VECTORS  # noqa: E402
from docs_results_sts import CALIBRATION, FREQUENCY, GEOMETRY, PARAMS, POOLING, SHRINK  # noqa: E402
from docs_tables import Result, Snippet  # noqa: E402

# the order they run in: the cheap first, the loss surfaces (about an hour on 2 cores alone) last
RESULTS: tuple[Result, ...] = (
    PARAMS,
    GEOMETRY,
    FREQUENCY,
    POOLING,
    CALIBRATION,
    COMPARE,
    SWEEP,
    RETRIEVAL,
    VECTORS,
    SHRINK,
    LANDSCAPE,
)

NUMBERS = ROOT / "docs" / "numbers.json"
PAGES = ("README.md", *sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")))
MARKER = re.compile(r"^<!-- numbers:([\w.-]+) -->\n(.*?)^<!-- /numbers -->$", re.S | re.M)
ANY_MARKER = re.compile(r"^<!-- numbers:([\w.-]+) -->$", re.M)  # a marker stands alone on its line
STSB_PREFIXES = ("../shared/data/stsb/", "~/.cache/isoscope/data/stsb/")


# ------------------------------------------------------------------ the numbers file


def load_numbers(path: Path = NUMBERS) -> dict:
    if not path.is_file():
        return {"runs": {}}
    return json.loads(path.read_text(encoding="utf-8"))


def without_texts(value: object) -> object:
    """``value`` with every ``text`` field dropped: the outputs quote the data's sentences (STS-B's among them, which
    the repository must not hold); the tables read numbers only."""
    if isinstance(value, dict):
        return {k: without_texts(v) for k, v in value.items() if k != "text"}
    if isinstance(value, list):
        return [without_texts(v) for v in value]
    return value


def save_numbers(numbers: dict, path: Path = NUMBERS) -> None:
    """Written whole to a temporary file, then renamed: an interrupted run leaves the last complete file. No text
    of the data is kept (``without_texts``)."""
    known = [c for r in RESULTS for c in r.commands]
    runs = {c: without_texts(numbers["runs"][c]) for c in dict.fromkeys(known) if c in numbers["runs"]}
    body = {
        "about": "written by scripts/docs_numbers.py (make docs-numbers): each command's --json output as the "
        "pages show the command; the tables between <!-- numbers:NAME --> markers are rendered from it",
        "runs": runs,
    }
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(body, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)


def record(numbers: dict, command: str, run: dict) -> None:
    """Keep one command's run, in ``numbers`` and in the file as it is now on disk (under a lock: two
    regenerations of different results may run side by side)."""
    import fcntl

    numbers["runs"][command] = run
    with open(Path(tempfile.gettempdir()) / "isoscope-docs-numbers.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        on_disk = load_numbers()
        on_disk["runs"][command] = run
        save_numbers(on_disk)


def outputs(numbers: dict) -> Callable[[str], dict]:
    """command -> the JSON it printed (KeyError naming the command when the file lacks it)."""

    def get(command: str) -> dict:
        try:
            return numbers["runs"][command]["output"]
        except KeyError:
            raise KeyError(f"docs/numbers.json lacks {command!r}") from None

    return get


# ------------------------------------------------------------------ pages


def flat(text: str) -> str:
    """``text`` with line continuations joined and every run of white space one space: a quote or a command
    found whatever the page's line breaks."""
    return re.sub(r"\s+", " ", text.replace("\\\n", " ")).strip()


def read_page(page: str, root: Path = ROOT) -> str:
    return (root / page).read_text(encoding="utf-8")


def marked(text: str) -> dict[str, str]:
    """NAME -> the text between ``<!-- numbers:NAME -->`` and ``<!-- /numbers -->``."""
    return {m.group(1): m.group(2) for m in MARKER.finditer(text)}


def replace_marked(text: str, name: str, body: str) -> str:
    return MARKER.sub(lambda m: m.group(0) if m.group(1) != name else _block(name, body), text)


def _block(name: str, body: str) -> str:
    return f"<!-- numbers:{name} -->\n{body}<!-- /numbers -->"


def rendered(result: Result, get: Callable[[str], dict]) -> str:
    assert result.table is not None
    return "\n".join(result.table(get)) + "\n"


def check(numbers: dict, root: Path = ROOT, results: Iterable[Result] = RESULTS) -> list[str]:
    """What differs between the pages and the numbers file, one line each (empty: the pages are the file's)."""
    problems: list[str] = []
    get = outputs(numbers)
    texts = {page: read_page(page, root) for page in PAGES}
    names = {r.name for r in RESULTS}
    for result in results:
        text = texts[result.page]
        for shown in result.shown:
            if flat(shown) not in flat(text):
                problems.append(f"{result.page}: {result.name}: the page does not show {shown!r}")
        missing = [c for c in result.commands if c not in numbers["runs"]]
        if result.pending:
            if flat(result.pending) not in flat(text):
                problems.append(
                    f"{result.page}: {result.name} is pending, and the page does not say {result.pending!r}"
                )
            if len(missing) < len(result.commands):
                problems.append(f"{result.name}: its commands are kept now: give it markers, drop pending, --tables")
            continue
        if missing:
            problems += [f"{result.name}: docs/numbers.json lacks {c!r}" for c in missing]
            continue
        if result.table is not None:
            blocks = marked(text)
            if ANY_MARKER.findall(text).count(result.name) != 1 or result.name not in blocks:
                problems.append(
                    f"{result.page}: <!-- numbers:{result.name} --> must stand once, closed by <!-- /numbers -->"
                )
            elif blocks.get(result.name) != rendered(result, get):
                problems.append(
                    f"{result.page}: the table {result.name} is not the one docs/numbers.json gives: "
                    "run python scripts/docs_numbers.py --tables"
                )
        try:
            quotes = result.quotes(get)
        except KeyError as exc:  # a quote of another result's command
            problems.append(f"{result.name}: {exc.args[0]}")
            quotes = []
        for page, quote in quotes:
            if flat(quote) not in flat(texts[page]):
                problems.append(f"{page}: {result.name}: the prose does not say {quote!r}")
    for page, text in texts.items():
        problems += [f"{page}: no result is called {n!r}" for n in ANY_MARKER.findall(text) if n not in names]
    return problems


def write_tables(numbers: dict, results: Iterable[Result]) -> list[str]:
    """Write each result's table onto its page; the names of those whose commands are not all kept."""
    get, skipped = outputs(numbers), []
    for result in results:
        if result.table is None or result.pending:
            continue
        if any(c not in numbers["runs"] for c in result.commands):
            skipped.append(result.name)
            continue
        path = ROOT / result.page
        text = path.read_text(encoding="utf-8")
        if result.name not in marked(text):
            raise SystemExit(f"{result.page}: no <!-- numbers:{result.name} --> ... <!-- /numbers --> block")
        path.write_text(replace_marked(text, result.name, rendered(result, get)), encoding="utf-8")
    return skipped


# ------------------------------------------------------------------ running the commands


def runnable(command: str, work: Path, stsb: Path) -> str:
    """The shell line that runs ``command`` here: STS-B's folder, the scratch folder, this Python (module doc)."""
    folders = {**dict.fromkeys(STSB_PREFIXES, shlex.quote(str(stsb)) + "/"), "/tmp/": shlex.quote(str(work)) + "/"}
    pattern = "|".join(re.escape(prefix) for prefix in folders)  # one pass: a folder put in is not read again
    line = re.sub(pattern, lambda m: folders[m.group(0)], command.replace("\\\n", " "))
    program, _, rest = line.partition(" ")
    bin_dir = Path(sys.executable).parent
    if program == "python":
        script = rest.split(" ", 1)[0]
        if script.startswith("scripts/"):
            rest = shlex.quote(str(ROOT / script)) + rest[len(script) :]
        return f"{shlex.quote(sys.executable)} {rest}"
    if program == "isoscope":
        return f"{shlex.quote(str(bin_dir / 'isoscope'))} {rest}"
    raise ValueError(f"a command starts with python or isoscope: {command!r}")


def snippet_code(snippet: Snippet) -> str:
    """The page's ```python block that holds ``snippet.holds``."""
    found = [
        body
        for lang, body in re.findall(r"^```(\w*)\n(.*?)^```", read_page(snippet.page), re.S | re.M)
        if lang == "python" and snippet.holds in body
    ]
    if len(found) != 1:
        raise SystemExit(f"{snippet.page}: {len(found)} python blocks hold {snippet.holds!r}, not 1")
    return found[0]


def environment(stsb: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ISOSCOPE_") or k == "ISOSCOPE_CACHE"}
    flags = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    return {**env, **flags, "ISOSCOPE_STSB_DIR": str(stsb)}


def execute(line: str, work: Path, env: dict[str, str], log: Path) -> tuple[str, float]:
    """Run one shell line in ``work``; its stdout and wall seconds (stderr, the progress bars, into ``log``)."""
    start = time.perf_counter()
    with log.open("w", encoding="utf-8") as err:
        proc = subprocess.run(["bash", "-c", line], cwd=work, env=env, stdout=subprocess.PIPE, stderr=err, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        tail = log.read_text(encoding="utf-8", errors="replace").replace("\r", "\n").strip().splitlines()[-5:]
        raise RuntimeError(f"exit status {proc.returncode} after {seconds:.0f} s: " + " | ".join(tail))
    return proc.stdout, seconds


def _digest(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()[:12]


def provenance() -> dict[str, object]:
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout.strip()

    dirty = "-dirty" if git("status", "--porcelain", "--untracked-files=no") else ""
    return {
        "commit": git("rev-parse", "--short=10", "HEAD") + dirty,
        "cpus": os.cpu_count(),
        "machine": platform.machine(),
    }


def run_results(numbers: dict, results: list[Result], *, work: Path, rerun: bool) -> list[str]:
    """Run every command of ``results`` that the file lacks (all of them with ``rerun``), saving the file after
    each; the failures, one line each (the others still run)."""
    from isoscope.paths import stsb_dir

    stsb = stsb_dir().resolve()
    if not (stsb / "stsb-en-test.csv").is_file():  # every result reads it: say so once, not once a command
        raise SystemExit(f"STS-B is not in {stsb}: set ISOSCOPE_STSB_DIR to its folder (or run isoscope data stsb)")
    work.mkdir(parents=True, exist_ok=True)
    env, failures, done_setup = environment(stsb), [], set()
    todo = [(r, c) for r in results for c in r.commands if rerun or c not in numbers["runs"]]
    todo = list({c: (r, c) for r, c in todo}.values())  # a command two results share runs once
    for i, (result, command) in enumerate(todo, 1):
        print(f"[{i}/{len(todo)}] {result.name}: {flat(command)}", flush=True)
        try:
            for step in result.setup:
                if step in done_setup:
                    continue
                if isinstance(step, Snippet):
                    (work / "snippet.py").write_text(snippet_code(step), encoding="utf-8")
                    line = f"{shlex.quote(sys.executable)} snippet.py"
                else:
                    line = runnable(step, work, stsb)
                execute(line, work, env, work / f"setup-{_digest(str(step))}.log")
                done_setup.add(step)
            stdout, seconds = execute(runnable(command, work, stsb), work, env, work / f"{_digest(command)}.log")
            output = json.loads(stdout)
        except (RuntimeError, ValueError) as exc:
            failures.append(f"{result.name}: {flat(command)}: {exc}")
            print(f"    failed: {exc}", flush=True)
            continue
        today = datetime.date.today().isoformat()
        record(numbers, command, {"date": today, "seconds": round(seconds, 1), **provenance(), "output": output})
        print(f"    {seconds:.0f} s", flush=True)
    return failures


# ------------------------------------------------------------------ command line


def chosen(names: list[str]) -> list[Result]:
    """The results named, or every one."""
    by_name = {r.name: r for r in RESULTS}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise SystemExit(f"unknown result(s) {', '.join(unknown)}; known: {', '.join(by_name)}")
    return [by_name[n] for n in names] if names else list(RESULTS)


def list_results(numbers: dict, results: list[Result]) -> None:
    total = 0.0
    for result in results:
        print(f"{result.name} ({result.page})")
        for command in result.commands:
            run = numbers["runs"].get(command)
            total += run["seconds"] if run else 0.0
            state = f"{run['seconds']:7.0f} s  {run['date']}" if run else "    not kept"
            print(f"  {state}  {flat(command)}")
    print(f"{total / 60:.0f} minutes of wall time kept in {NUMBERS.relative_to(ROOT)}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "names", nargs="*", help="results to run and write (default: all but the pending; --list names them)"
    )
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="compare the pages with docs/numbers.json, run nothing")
    mode.add_argument("--tables", action="store_true", help="write the tables from docs/numbers.json, run nothing")
    mode.add_argument("--list", action="store_true", help="list the commands, kept or not, and their wall times")
    p.add_argument("--rerun", action="store_true", help="run the chosen results' commands even where kept")
    p.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "isoscope-docs-numbers")
    args = p.parse_args(argv)
    numbers, results = load_numbers(), chosen(args.names)
    if args.list:
        list_results(numbers, results)
        return 0
    if args.check:
        problems = check(numbers, results=results)
        print("\n".join(problems) or "the pages are docs/numbers.json's")
        return 1 if problems else 0
    if not args.tables:  # a pending result's commands run only when it is named
        todo = results if args.names else [r for r in results if not r.pending]
        failures = run_results(numbers, todo, work=args.work, rerun=args.rerun)
    else:
        failures = []
    skipped = write_tables(numbers, results)
    problems = check(numbers, results=results)
    for line in [*failures, *(f"{n}: not written, commands missing" for n in skipped), *problems]:
        print(line)
    return 1 if failures or skipped or problems else 0


if __name__ == "__main__":
    sys.exit(main())
