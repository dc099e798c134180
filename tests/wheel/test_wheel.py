"""The wheel gate (issue 50): Isoscope installed as a user installs it, then used from a folder of one's own.

``make wheel-gate`` (part of ``make test``, so of CI) builds a new venv holding the CPU torch and then the wheel
built from this checkout and nothing else (``scripts/wheel_venv.sh``: pip resolves pyproject.toml's ranges anew,
never requirements*.txt), and runs this module with ``ISOSCOPE_WHEEL_VENV`` naming it (tests/conftest.py leaves
the folder out otherwise). From an empty folder outside the checkout, with an empty ``ISOSCOPE_CACHE`` of its own:
the README's quickstart commands once on small inputs (its blocks as written on the whole demo: ``make
wheel-gate-readme``), every other command once on the demo files in the smallest
settings that run each one's code, the export in each format, every page of the installed app once, and the
extras the venv lacks (ray, the map widget) refused in one line that names them. Each command exits 0 and prints
no traceback. The inputs are the demo's 300-document retrieval corpus and its first 100 pairs, so the gate costs a
few of ``make test``'s 20 minutes (its time is printed by scripts/wheel_gate.sh)."""

from __future__ import annotations

import os
import resource
import subprocess
import time
from pathlib import Path

import pytest

from tests.docs.documents import README
from tests.docs.shell import reader_path, run_page

VENV = Path(os.environ.get("ISOSCOPE_WHEEL_VENV", "/nonexistent"))
ROOT = Path(__file__).resolve().parents[2]
CORPUS = "demo_retrieval/corpus.jsonl"  # 300 demo texts, shipped (isoscope data demo writes it)
PAIRS = "pairs100.csv"  # the demo's first 100 pairs
RAN: set[str] = set()  # the commands run so far, for the last test


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The gate's folder outside the checkout: ``work`` (empty but for what ``isoscope data demo`` writes, and the
    demo's first 100 pairs: where every command runs), ``cache`` (the ISOSCOPE_CACHE), ``home`` (HOME: nothing of
    the user's)."""
    root = tmp_path_factory.mktemp("wheel-gate")
    for name in ("work", "cache", "home"):
        (root / name).mkdir()
    assert ROOT not in root.parents
    return root


@pytest.fixture(scope="module")
def demo(folder: Path, env: dict[str, str]) -> Path:
    """The demo's files written into the work folder by the installed package, and the first 100 pairs."""
    isoscope(folder, env, "data", "demo")
    rows = (folder / "work" / "demo_pairs.csv").read_text(encoding="utf-8").splitlines(keepends=True)
    (folder / "work" / PAIRS).write_text("".join(rows[:101]), encoding="utf-8")
    return folder / "work"


@pytest.fixture(scope="module")
def env(folder: Path) -> dict[str, str]:
    """A user's environment: no ISOSCOPE_* variable but the gate's cache, offline, the venv first on PATH, and
    Python writing the bytecode of what it imports (pip installed without compiling; a user's Python writes it)."""
    keep = {k: v for k, v in os.environ.items() if not k.startswith("ISOSCOPE_") and k != "PYTHONDONTWRITEBYTECODE"}
    base = {**keep, "ISOSCOPE_CACHE": str(folder / "cache"), "HOME": str(folder / "home"), "HF_HUB_OFFLINE": "1"}
    return reader_path(VENV / "bin", base)


def isoscope(folder: Path, env: dict[str, str], *argv: str, status: int = 0) -> subprocess.CompletedProcess:
    """``isoscope ARGV`` of the venv, run in the work folder: the exit ``status`` expected and no traceback. Prints
    its wall and CPU seconds (the gate's cost, command by command, on a machine shared with others)."""
    before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    proc = subprocess.run(
        [str(VENV / "bin" / "isoscope"), *argv], cwd=folder / "work", env=env, capture_output=True, text=True
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    print(f"\n  isoscope {' '.join(argv)}: {time.perf_counter() - start:.0f} s, CPU {cpu:.0f} s", end="")
    said = f"isoscope {' '.join(argv)}: exit status {proc.returncode}\n{proc.stdout[-1500:]}\n{proc.stderr[-3000:]}"
    assert proc.returncode == status and "Traceback (most recent call last)" not in proc.stderr, said
    RAN.add(argv[0])
    return proc


def test_the_venv_holds_the_wheel_and_what_it_declares() -> None:
    """Installed from a wheel (not this checkout, not editable), without the extras or the dev tools."""
    names = {line.split("==")[0].split(" @ ")[0].lower() for line in (VENV / "freeze.txt").read_text().splitlines()}
    assert "isoscope" in names and "torch" in names and "psutil" in names
    assert not names & {"ray", "jupyter-scatter", "pytest", "ruff", "playwright"}, names
    where = subprocess.run(
        [str(VENV / "bin" / "python"), "-c", "import isoscope; print(isoscope.__file__)"],
        cwd=VENV.parent,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert Path(where.strip()).is_relative_to(VENV) and "site-packages" in where, where


def test_the_quickstarts_commands_on_small_inputs(folder: Path, env: dict[str, str], demo: Path) -> None:
    """The README's quickstart commands, each once, on the demo's first 100 pairs and 300-text corpus (the README
    as written, on the whole demo, is `make wheel-gate-readme`: two minutes more than make test can spend; there the
    atlas is laid out by UMAP, here by PCA, a minute less of numba's compiling)."""
    isoscope(folder, env, "app", "--dry-run")
    isoscope(
        folder, env, "atlas", "--input", CORPUS, "--out", "my-atlas/", "--layout", "pca", "--quiet"
    )  # UMAP: README
    isoscope(folder, env, "app", "my-atlas/", "--dry-run")
    cls = ["--pooling", "cls"]
    isoscope(folder, env, "sts", "--pairs", PAIRS, *cls, "--calibrate", "whitening:64", "--quiet")
    isoscope(folder, env, "geometry", "--input", PAIRS, *cls, "--calibrate", "whitening", "--quiet")
    isoscope(folder, env, "compare", "--input", PAIRS, "--a", "pooling=cls", "--b", "pooling=mean", "--quiet")
    report = ["--pairs", PAIRS, *cls, "--vs", "whitening", "--out", "report.html", "--map", "pca", "--quiet"]
    isoscope(folder, env, "report", *report)
    migrate = ["--old", "pooling=cls", "--new", "pooling=model", "--methods", "procrustes", "ridge", "--curve", "none"]
    isoscope(folder, env, "migrate", *migrate, "--quiet")
    assert (folder / "work" / "report.html").stat().st_size > 10_000


@pytest.mark.skipif(not os.environ.get("ISOSCOPE_WHEEL_README"), reason="make wheel-gate-readme (the whole demo)")
def test_the_readme_runs_as_written(folder: Path, env: dict[str, str]) -> None:
    """Its quickstarts from the empty folder: `isoscope data demo` first, then the commands on the demo's files."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    ran = run_page(README, folder / "work", env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f"\n  README: CPU {after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime:.0f} s", end="")
    assert ran == ["README-bash-2", "README-bash-3"], ran
    assert (folder / "work" / "report.html").stat().st_size > 10_000


def test_data_help(folder: Path, env: dict[str, str], demo: Path) -> None:
    assert "demo" in isoscope(folder, env, "data", "--help").stdout


def test_embed_calibrate_and_export_in_each_format(folder: Path, env: dict[str, str], demo: Path) -> None:
    isoscope(folder, env, "embed", "--input", CORPUS, "--out", "vectors.npy", "--quiet")
    isoscope(folder, env, "calibrate", "--input", CORPUS, "--method", "whitening:64", "--out", "white/", "--quiet")
    fix = ["export", "--calibrate", "whitening:64", "--quiet"]
    isoscope(folder, env, *fix, "--fit-on", CORPUS, "--out", "fixed-st/")  # a sentence-transformers folder
    isoscope(folder, env, *fix, "--fit-on", CORPUS, "--format", "onnx", "--out", "fixed-onnx/")
    isoscope(folder, env, *fix, "--vectors", "vectors.npy", "--out", "fixed.npy")
    isoscope(folder, env, *fix, "--vectors", "vectors.npy", "--faiss", "--out", "fixed.faiss")
    work = folder / "work"
    assert (work / "fixed-st" / "modules.json").is_file() and list((work / "fixed-onnx").glob("*.onnx"))
    assert (work / "fixed.npy").is_file() and (work / "fixed.faiss").is_file()


def test_pooling_params_sweep_retrieval(folder: Path, env: dict[str, str], demo: Path) -> None:
    isoscope(folder, env, "pooling", "--pairs", PAIRS, "--quiet")
    isoscope(folder, env, "params", "--preset", "rembert")
    isoscope(folder, env, "sweep", "--input", CORPUS, "--pairs", PAIRS, "--dims", "64", "--quiet")
    isoscope(folder, env, "retrieval", "--quiet")  # the packaged demo task


def test_landscape_in_its_smallest_settings(folder: Path, env: dict[str, str], demo: Path) -> None:
    smallest = ["--n-train", "8", "--epochs", "1", "--train-batch-size", "8", "--eval-size", "8", "--grid", "3"]
    smallest += ["--points-1d", "3", "--directions", "task", "--hessian-iters", "0", "--learning-heldout", "0"]
    smallest += ["--init", "pretrained", "--max-length", "16", "--out", "landscape/", "--quiet"]
    isoscope(folder, env, "landscape", "--task", "demo-topic", *smallest)


def test_the_missing_extras_are_one_line_that_names_them(folder: Path, env: dict[str, str], demo: Path) -> None:
    """The venv has neither Ray nor the map widget: each is refused in one line naming the extra to install."""
    ray = ["--input", CORPUS, "--engine", "ray", "--quiet"]
    for argv in (["embed", *ray, "--shard-dir", "ray-shards"], ["atlas", *ray, "--out", "ray-atlas"]):
        err = isoscope(folder, env, *argv, status=2).stderr
        assert err.count("\n") == 1 and 'pip install "isoscope[ray]"' in err, err
    assert not (folder / "work" / "ray-shards").exists() and not (folder / "work" / "ray-atlas").exists()
    code = "import numpy as np, isoscope; isoscope.Space(np.eye(4, dtype=np.float32), list('abcd')).map()"
    proc = subprocess.run(
        [str(VENV / "bin" / "python"), "-c", code], cwd=folder / "work", env=env, capture_output=True, text=True
    )
    assert proc.returncode == 1 and proc.stderr.strip().endswith('pip install "isoscope[notebook]"'), proc.stderr


def test_every_page_of_the_app_opens(folder: Path, env: dict[str, str], demo: Path) -> None:
    """Every page once, on the demo's first 100 pairs as the launched file (`isoscope app pairs100.csv`): the pairs
    of the pairs pages, their 200 sentences the corpus of the others."""
    script = (Path(__file__).parent / "app_pages.py").read_text(encoding="utf-8")
    proc = subprocess.run(
        [str(VENV / "bin" / "python"), "-c", script],
        cwd=folder / "work",
        env={**env, "ISOSCOPE_DATA_FILE": str(folder / "work" / PAIRS)},
        capture_output=True,
        text=True,
    )
    print(proc.stdout)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, f"{proc.stdout}\n{proc.stderr[-4000:]}"


def test_every_command_ran() -> None:
    from isoscope.cli import COMMANDS

    assert set(COMMANDS) <= RAN, set(COMMANDS) - RAN
