"""The installable package: metadata, console script, package data found from any folder, optional extras."""

from __future__ import annotations

import csv
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
