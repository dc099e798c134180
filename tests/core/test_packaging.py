"""The installable package: metadata, console script, package data found from any folder, optional extras, and
every third-party module the package imports declared (a plain ``pip install`` of the wheel installs nothing else;
``make wheel-gate`` runs every command from that install)."""

from __future__ import annotations

import ast
import csv
import re
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

from isoscope.paths import DEMO_CORPUS, DEMO_PAIRS

ROOT = Path(__file__).resolve().parents[2]


def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_project_metadata_and_console_script() -> None:
    project = pyproject()["project"]
    assert project["name"] == "isoscope"
    assert project["scripts"] == {"isoscope": "isoscope.cli:main"}
    deps = " ".join(project["dependencies"])
    assert "ray" not in deps  # `pip install isoscope` never installs Ray
    assert any(d.startswith("ray[data]") for d in project["optional-dependencies"]["ray"])
    assert {"pytest", "ruff", "playwright"} <= {
        d.split(">")[0].split("=")[0].split("<")[0] for d in project["optional-dependencies"]["dev"]
    }
    # ranges, not pins: transformers 4.4x and 5.x, any torch 2.x
    assert "transformers>=4.40,<6" in project["dependencies"] and "torch>=2.1,<3" in project["dependencies"]


def test_installed_distribution_matches_pyproject() -> None:
    """The venv's isoscope (``pip install -e .``) has the console script and keeps ray an extra."""
    try:
        dist = metadata.distribution("isoscope")
    except metadata.PackageNotFoundError:
        pytest.skip("isoscope is not installed in this environment (run `make test`)")
    scripts = {e.name: e.value for e in dist.entry_points if e.group == "console_scripts"}
    assert scripts == {"isoscope": "isoscope.cli:main"}
    ray = [r for r in dist.requires or [] if r.startswith("ray")]
    assert ray and all('extra == "ray"' in r for r in ray)


def test_locks_pin_transformers_5_and_the_cpu_torch_on_disk() -> None:
    for name in ("requirements.txt", "requirements-dev.txt"):
        pins = dict(
            line.split("==", 1) for line in (ROOT / name).read_text().splitlines() if "==" in line and line[0] != "#"
        )
        assert pins["torch"] == "2.13.0"
        assert pins["transformers"].split(".")[0] == "5", pins["transformers"]
        assert ("ray" in pins) == (name == "requirements-dev.txt")


def test_demo_data_is_package_data_found_from_any_folder(tmp_path: Path) -> None:
    assert DEMO_CORPUS.is_file() and DEMO_PAIRS.is_file()
    assert DEMO_CORPUS.parent == ROOT / "assets"  # the top-level assets/ folder, isoscope.assets in the wheel
    code = "from isoscope.paths import DEMO_CORPUS; from isoscope.data import load_corpus; print(len(load_corpus(DEMO_CORPUS)))"
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    with open(DEMO_CORPUS, newline="", encoding="utf-8") as f:
        rows = sum(1 for _ in csv.DictReader(f))  # the file's own count, read without isoscope
    assert int(proc.stdout) == rows


def test_dashboard_config_is_package_data() -> None:
    from isoscope.dashboard.launch import config_options

    options = config_options()
    assert options[options.index("--server.headless") + 1] == "true"
    assert "--server.maxUploadSize" in options


def test_wheel_installs_one_root_named_isoscope(tmp_path: Path) -> None:
    """The built wheel holds the package `isoscope` (library, dashboard, demo data) and nothing named core or
    dashboard at its top level; setuptools builds it from the listed packages and their folder mapping."""
    import zipfile

    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "-q",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    (wheel,) = tmp_path.glob("isoscope-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert {n.split("/")[0] for n in names} == {"isoscope", wheel.name.rsplit("-", 3)[0] + ".dist-info"}
    for needed in (
        "isoscope/__main__.py",
        "isoscope/dashboard/app.py",
        "isoscope/dashboard/views/home.py",
        "isoscope/dashboard/config.toml",
        "isoscope/dashboard/serve.py",
        "isoscope/dashboard/static/atlas_map.js",  # the Atlas map's JavaScript: package data, no CDN
        "isoscope/dashboard/static/atlas_map.css",
        "isoscope/assets/demo_corpus.csv",
        "isoscope/encode/embed.py",
    ):
        assert needed in names, needed
    # every package folder of the checkout is in the wheel (the list in pyproject.toml is complete)
    folders = {p.parent for p in (ROOT / "core").rglob("__init__.py")} | {
        p.parent for p in (ROOT / "dashboard").rglob("__init__.py")
    }
    for folder in folders:
        rel = folder.relative_to(ROOT)
        inner = "/".join(rel.parts[1:])
        prefix = "isoscope/" + ("dashboard/" if rel.parts[0] == "dashboard" else "") + (inner + "/" if inner else "")
        assert prefix + "__init__.py" in names, f"{rel} is missing from [tool.setuptools] packages"


def test_only_isoscope_is_importable_from_another_folder(tmp_path: Path) -> None:
    code = (
        "import importlib.util as u, isoscope, isoscope.dashboard, isoscope.assets;"
        "print(u.find_spec('core') is None, u.find_spec('dashboard') is None, isoscope.__version__)"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    no_core, no_dashboard, version = proc.stdout.split()
    assert no_core == "True" and no_dashboard == "True" and version == metadata.version("isoscope")


BARE_IMPORTS = [
    "import core",
    "import core.data.inputs as inputs",
    "from core import cli",
    "from core.geometry.report import analyse_geometry",
    "import dashboard",
    "from dashboard.launch import code_hash",
    "def later():\n    import dashboard.services.geometry",  # inside a function too
]


def test_the_lint_refuses_a_bare_import_of_the_folders(tmp_path: Path) -> None:
    """`make test` runs ruff with the repository's config: a bare `import core` / `import dashboard` (which from
    the repository root would load a second copy of the code) fails it, at any depth, and `isoscope` passes."""
    bad = tmp_path / "bad.py"
    bad.write_text("\n".join(BARE_IMPORTS) + "\n")
    good = tmp_path / "good.py"
    good.write_text("import corefoo\nimport dashboards\nimport isoscope.dashboard.launch\nfrom isoscope import data\n")
    command = [sys.executable, "-m", "ruff", "check", "--config", str(ROOT / "pyproject.toml"), "--select", "TID251"]
    proc = subprocess.run([*command, "--output-format", "concise", str(bad)], capture_output=True, text=True)
    flagged = [line for line in proc.stdout.splitlines() if "TID251" in line]
    assert proc.returncode == 1 and len(flagged) == len(BARE_IMPORTS), proc.stdout
    assert "import isoscope" in flagged[0]  # the message says what to write instead
    assert subprocess.run([*command, str(good)], capture_output=True, text=True).returncode == 0


# ---------------------------------------------------------------- declarations (issue 50)

PACKAGE_FOLDERS = ("core", "dashboard", "assets")  # what the wheel holds: isoscope, isoscope.dashboard, .assets
RUNTIME_EXTRAS = ("ray", "notebook")  # extras a user installs for a feature; `dev` is for working on Isoscope
# a module that only an extra installs is imported inside functions, behind an InputError of one line that names
# the extra; the test that proves the message without the module, for each
EXTRA_MODULES = {
    "ray": ("ray", "tests/core/test_cli.py::test_ray_engine_without_ray_names_the_extra"),
    "jscatter": ("notebook", "tests/core/space/test_widget.py::test_without_the_extras_the_map_says_what_to_install"),
}
# declared but imported by no module of the package, each for a reason
NOT_IMPORTED = {
    "sentencepiece": "transformers imports it for the tokenizers of SentencePiece models (T5, ALBERT, XLM-R)",
    "anywidget": "the notebook extra's floor for jupyter-scatter's widget base",
    "ipywidgets": "the notebook extra's floor for jupyter-scatter's widget base",
}


def dist_name(requirement: str) -> str:
    """A requirement's distribution name, normalised as PEP 503 does (``Pillow>=10`` -> ``pillow``)."""
    return re.sub(r"[-_.]+", "-", re.split(r"[\s;<>=!~\[(]", requirement.strip(), maxsplit=1)[0]).lower()


def imports_of(folders: list[Path]) -> list[tuple[str, Path, int, bool]]:
    """(top-level module, file, line, at module level) for every import in the Python files under ``folders``:
    statements at any depth (inside functions too) and ``importlib.import_module("name")`` with a literal name;
    relative imports, the standard library and ``isoscope`` itself left out."""
    found = []
    for folder in folders:
        for path in sorted(folder.rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            top_level = {id(n) for n in tree.body} | {
                id(c) for n in tree.body if isinstance(n, ast.If | ast.Try) for c in ast.walk(n)
            }  # a module's own statements, its `if TYPE_CHECKING:` and `try:` blocks included
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                elif (
                    isinstance(node, ast.Call)
                    and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"
                    and node.args
                    and isinstance(node.args[0], ast.Constant)
                    and isinstance(node.args[0].value, str)
                ):
                    names = [node.args[0].value]
                else:
                    continue
                for name in names:
                    top = name.split(".")[0]
                    if top not in sys.stdlib_module_names and top != "isoscope":
                        found.append((top, path, node.lineno, id(node) in top_level))
    return found


def declaration_problems(project: dict, folders: list[Path]) -> list[str]:
    """What ``project`` (pyproject.toml's [project] table) leaves undeclared of the imports under ``folders``: a
    module from no declared distribution, or from a runtime extra without its entry in EXTRA_MODULES, or one
    imported at module level (a plain install would fail to import the module)."""
    dists = {m: {dist_name(d) for d in ds} for m, ds in metadata.packages_distributions().items()}
    required = {dist_name(r) for r in project["dependencies"]}
    extras = {x: {dist_name(r) for r in project["optional-dependencies"].get(x, [])} for x in RUNTIME_EXTRAS}
    problems: dict[str, str] = {}  # one per module, at its first import
    for top, path, line, at_module_level in imports_of(folders):
        where = f"{path.relative_to(ROOT) if ROOT in path.parents else path}:{line}"
        from_dists = dists.get(top)
        if not from_dists:
            problems.setdefault(top, f"{top} ({where}): no installed distribution provides it")
        elif from_dists & required:
            continue
        elif in_extras := [x for x, names in extras.items() if from_dists & names]:
            if EXTRA_MODULES.get(top, ("",))[0] not in in_extras:
                problems.setdefault(top, f"{top} ({where}): only in the extra {in_extras[0]}, not in EXTRA_MODULES")
            elif at_module_level:
                problems.setdefault(top, f"{top} ({where}): from the extra {in_extras[0]}, imported at module level")
        else:
            problems.setdefault(
                top, f"{top} ({where}): {', '.join(sorted(from_dists))} is not declared in pyproject.toml"
            )
    return sorted(problems.values())


def test_every_imported_module_is_declared() -> None:
    """Issue 50: `isoscope atlas` crashed after a plain `pip install` (psutil came only with the notebook
    extras); PIL, huggingface_hub, numba, pynndescent, starlette and sentence_transformers arrived only through
    other packages. Every third-party module the package imports, at any depth, is a declared dependency or an
    extra's, guarded."""
    folders = [ROOT / f for f in PACKAGE_FOLDERS]
    assert declaration_problems(pyproject()["project"], folders) == []


def test_the_check_fails_on_an_undeclared_module(tmp_path: Path) -> None:
    """The check can fail: psutil taken out of the dependencies, a new function-level import of PyYAML (installed
    here only because other packages need it), and an extra's module imported at module level are each named."""
    project = pyproject()["project"]
    without = {**project, "dependencies": [r for r in project["dependencies"] if dist_name(r) != "psutil"]}
    problems = declaration_problems(without, [ROOT / f for f in PACKAGE_FOLDERS])
    assert len(problems) == 1 and problems[0].startswith("psutil (core/atlas/costs.py:"), problems
    (tmp_path / "new.py").write_text("import ray\n\ndef later():\n    import yaml.constructor\n")
    problems = declaration_problems(project, [tmp_path])
    assert len(problems) == 2, problems
    assert "ray (" in problems[0] and "imported at module level" in problems[0]
    assert "yaml (" in problems[1] and "pyyaml is not declared" in problems[1]


def test_every_declared_dependency_is_imported_or_has_a_reason() -> None:
    """The other way round: a dependency nothing imports is dead weight in every install, unless it is there for
    a reason (NOT_IMPORTED); every extra's module has its test of the install hint."""
    project = pyproject()["project"]
    dists = metadata.packages_distributions()
    imported = {dist_name(d) for top, *_ in imports_of([ROOT / f for f in PACKAGE_FOLDERS]) for d in dists.get(top, [])}
    declared = [r for r in project["dependencies"]] + [
        r for x in RUNTIME_EXTRAS for r in project["optional-dependencies"][x]
    ]
    unused = {dist_name(r) for r in declared} - imported - {dist_name(r) for r in ("torch",)}
    assert unused == set(NOT_IMPORTED), unused ^ set(NOT_IMPORTED)
    for module, (extra, test_id) in EXTRA_MODULES.items():
        file, name = test_id.split("::")
        assert f"def {name}(" in (ROOT / file).read_text(encoding="utf-8"), test_id
        assert extra in project["optional-dependencies"], (module, extra)


def test_the_locks_pin_every_declared_dependency() -> None:
    """requirements.txt (what `make run` installs) pins every dependency; requirements-dev.txt with
    requirements-notebook.txt on top (what `make test` installs) also every extra, the second repeating no pin of
    the first (scripts/lock.sh)."""

    def pins(name: str) -> set[str]:
        lines = (ROOT / name).read_text(encoding="utf-8").splitlines()
        return {dist_name(line) for line in lines if "==" in line and not line.startswith("#")}

    project = pyproject()["project"]
    every_extra = [r for rs in project["optional-dependencies"].values() for r in rs]
    assert {dist_name(r) for r in project["dependencies"]} <= pins("requirements.txt")
    dev, notebook = pins("requirements-dev.txt"), pins("requirements-notebook.txt")
    assert {dist_name(r) for r in project["dependencies"] + every_extra} <= dev | notebook
    assert not dev & notebook
