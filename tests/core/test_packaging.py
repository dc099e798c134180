"""The installable package: metadata, console script, package data found from any folder, optional extras."""

from __future__ import annotations

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
    for name in ("requirements.lock", "requirements-dev.lock"):
        pins = dict(
            line.split("==", 1) for line in (ROOT / name).read_text().splitlines() if "==" in line and line[0] != "#"
        )
        assert pins["torch"] == "2.13.0"
        assert pins["transformers"].split(".")[0] == "5", pins["transformers"]
        assert ("ray" in pins) == (name == "requirements-dev.lock")


def test_demo_data_is_package_data_found_from_any_folder(tmp_path: Path) -> None:
    assert DEMO_CORPUS.is_file() and DEMO_PAIRS.is_file()
    assert DEMO_CORPUS.parent == ROOT / "assets"  # the top-level assets/ folder, isoscope.assets in the wheel
    code = "from isoscope.paths import DEMO_CORPUS; from isoscope.data import load_corpus; print(len(load_corpus(DEMO_CORPUS)))"
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert int(proc.stdout) == 336


def test_dashboard_config_is_package_data() -> None:
    from isoscope.commands.app import config_options

    options = config_options()
    assert options[options.index("--server.headless") + 1] == "true"
    assert "--server.maxUploadSize" in options
