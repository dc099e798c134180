"""JupyterLab for the widget's browser test (``make test-lab``): the server from a second venv (``.venv-lab``,
``requirements-lab.txt``: JupyterLab and the widget front-ends, no torch), the kernel from the project's venv
(a kernelspec pointing at this Python), an isolated Jupyter config, no network, a token; stopped at the end."""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.conftest import CHROMIUM_ARGS, chromium_path, free_port, keep_children_at_our_priority

KERNEL = "isoscope-test"
START_TIMEOUT_S = 120.0


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.lab)
            item.add_marker(pytest.mark.xdist_group("lab"))


@dataclass
class Lab:
    url: str
    token: str
    root: Path
    proc: subprocess.Popen
    log: Path

    def open_url(self, notebook: str) -> str:
        return f"{self.url}/lab/tree/{notebook}?token={self.token}"


def _lab_executable() -> Path:
    given = os.environ.get("ISOSCOPE_LAB")
    if not given:
        pytest.skip("JupyterLab is not set up: run `make test-lab` (it builds .venv-lab and sets ISOSCOPE_LAB)")
    path = Path(given)
    if not path.is_file():
        pytest.fail(f"ISOSCOPE_LAB={given} is not a jupyter-lab executable", pytrace=False)
    return path


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    executable = _lab_executable()
    if chromium_path() is None:
        pytest.fail("chromium was not found; run `make browser`", pytrace=False)
    base = tmp_path_factory.mktemp("lab")
    root, data, config, runtime = (base / n for n in ("root", "data", "config", "runtime"))
    spec = data / "kernels" / KERNEL
    spec.mkdir(parents=True)
    for d in (root, config, runtime):
        d.mkdir()
    settings = base / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text(json.dumps({"fetchNews": "false"}))  # no news toast
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(
        json.dumps({"argv": argv, "display_name": "isoscope (test)", "language": "python"})
    )
    port, token = free_port(), secrets.token_hex(16)
    env = dict(
        os.environ,
        JUPYTER_PATH=str(data),
        JUPYTER_CONFIG_DIR=str(config),
        JUPYTER_RUNTIME_DIR=str(runtime),
        JUPYTER_PLATFORM_DIRS="1",
        JUPYTERLAB_SETTINGS_DIR=str(base / "settings"),
        ISOSCOPE_CACHE=str(base / "cache"),
        HF_HUB_OFFLINE="1",
    )
    cmd = [
        str(executable),
        "--no-browser",
        "--ip=127.0.0.1",
        f"--port={port}",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        "--LabApp.news_url=",  # no request to the news feed
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        "--ServerApp.open_browser=False",
        "--LabApp.extension_manager=readonly",  # no listing of extensions from PyPI
    ]
    if os.geteuid() == 0:  # containers and CI machines often run as root
        cmd.append("--allow-root")
    log = base / "lab.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    server = Lab(url, token, root, proc, log)
    deadline = time.monotonic() + START_TIMEOUT_S
    try:
        while True:
            if proc.poll() is not None:
                pytest.fail(f"jupyter-lab exited with {proc.returncode}:\n{log.read_text()[-3000:]}", pytrace=False)
            try:
                with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"jupyter-lab not up after {START_TIMEOUT_S:.0f} s:\n{log.read_text()[-3000:]}")
            time.sleep(0.5)
        yield server
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=20)


@pytest.fixture(scope="session")
def lab_browser():
    from playwright.sync_api import sync_playwright

    keep_children_at_our_priority()
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()
