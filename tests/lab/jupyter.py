"""A JupyterLab server and a notebook driven by a real browser, shared by the widget's browser test (``tests/lab``,
``make test-lab``) and its benchmark (``bench/widget.py``, ``make bench-widget``). Plain functions, no pytest.

The server comes from a second venv (``.venv-lab``, ``requirements-lab.txt``: JupyterLab and the widget
front-ends, no torch); the kernel is the project's Python (a kernelspec pointing at ``sys.executable``). Its
Jupyter config, data and runtime folders are private to one run, nothing is fetched from the network (no news,
no update check, no extension listing), and a token guards it. ``running_lab`` stops its process group at the end.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.chromium import free_port

KERNEL = "isoscope-test"
KERNEL_NAME = "isoscope (test)"
START_TIMEOUT_S = 120.0
LOCAL = ("data:", "blob:", "about:")  # what a page may load besides the server itself


class LabError(RuntimeError):
    """JupyterLab did not start (its log's tail is in the message)."""


@dataclass
class Lab:
    url: str
    token: str
    root: Path
    proc: subprocess.Popen
    log: Path

    def open_url(self, notebook: str) -> str:
        """The notebook in a workspace of its own: JupyterLab restores a workspace's open tabs (and starts their
        kernels), so a second notebook opened in the default one would find the first beside it."""
        return f"{self.url}/lab/workspaces/{Path(notebook).stem}/tree/{notebook}?token={self.token}"


def lab_executable(given: str | None = None) -> Path | None:
    """The jupyter-lab named by ``given`` or ``ISOSCOPE_LAB`` (``make test-lab`` sets it), or None when unset."""
    given = given or os.environ.get("ISOSCOPE_LAB")
    return Path(given) if given else None


def _private_dirs(base: Path) -> dict[str, Path]:
    """The root, data, config, runtime and settings folders of one server, with the kernelspec of this Python."""
    dirs = {n: base / n for n in ("root", "data", "config", "runtime", "settings")}
    for d in dirs.values():
        d.mkdir(parents=True, exist_ok=True)
    spec = dirs["data"] / "kernels" / KERNEL
    spec.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": KERNEL_NAME, "language": "python"}))
    settings = dirs["settings"] / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True, exist_ok=True)
    (settings / "notification.jupyterlab-settings").write_text(json.dumps({"fetchNews": "false"}))  # no news toast
    return dirs


def start_lab(executable: Path, base: Path, extra_env: dict[str, str] | None = None) -> Lab:
    """Start ``executable`` (jupyter-lab) on a free loopback port with its folders under ``base``; wait until it
    answers. LabError when it exits or does not answer within ``START_TIMEOUT_S``."""
    if not executable.is_file():
        raise LabError(f"ISOSCOPE_LAB={executable} is not a jupyter-lab executable")
    dirs = _private_dirs(base)
    port, token = free_port(), secrets.token_hex(16)
    env = dict(
        os.environ,
        JUPYTER_PATH=str(dirs["data"]),
        JUPYTER_CONFIG_DIR=str(dirs["config"]),
        JUPYTER_RUNTIME_DIR=str(dirs["runtime"]),
        JUPYTER_PLATFORM_DIRS="1",
        JUPYTERLAB_SETTINGS_DIR=str(dirs["settings"]),
        ISOSCOPE_CACHE=str(base / "cache"),
        HF_HUB_OFFLINE="1",
        **(extra_env or {}),
    )
    cmd = [
        str(executable),
        "--no-browser",
        "--ip=127.0.0.1",
        f"--port={port}",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={dirs['root']}",
        "--LabApp.news_url=",  # no request to the news feed
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        "--ServerApp.open_browser=False",
        "--LabApp.extension_manager=readonly",  # no listing of extensions from PyPI
    ]
    if os.geteuid() == 0:  # containers and CI machines often run as root
        cmd.append("--allow-root")
    log = base / "lab.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            cmd, cwd=dirs["root"], env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    lab = Lab(f"http://127.0.0.1:{port}", token, dirs["root"], proc, log)
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        if proc.poll() is not None:
            raise LabError(f"jupyter-lab exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{lab.url}/api/status?token={token}", timeout=2) as r:
                if r.status == 200:
                    return lab
        except OSError:
            pass
        if time.monotonic() > deadline:
            stop_lab(lab)
            raise LabError(f"jupyter-lab not up after {START_TIMEOUT_S:.0f} s:\n{log.read_text()[-3000:]}")
        time.sleep(0.5)


def stop_lab(lab: Lab) -> None:
    """Terminate the server's process group (its kernels too): SIGTERM, then SIGKILL."""
    if lab.proc.poll() is not None:
        return
    os.killpg(lab.proc.pid, signal.SIGTERM)
    try:
        lab.proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(lab.proc.pid, signal.SIGKILL)
        lab.proc.wait(timeout=20)


def shutdown_kernels(lab: Lab) -> int:
    """Shut down every kernel the server runs (the notebooks' pages may stay open); returns how many."""
    auth = {"Authorization": f"token {lab.token}"}
    with urllib.request.urlopen(urllib.request.Request(f"{lab.url}/api/kernels", headers=auth), timeout=10) as r:
        kernels = json.load(r)
    for kernel in kernels:
        url = f"{lab.url}/api/kernels/{kernel['id']}"
        urllib.request.urlopen(urllib.request.Request(url, method="DELETE", headers=auth), timeout=30).close()
    return len(kernels)


@contextmanager
def running_lab(executable: Path, base: Path, extra_env: dict[str, str] | None = None) -> Iterator[Lab]:
    lab = start_lab(executable, base, extra_env)
    try:
        yield lab
    finally:
        stop_lab(lab)


def write_notebook(path: Path, sources: Sequence[str]) -> None:
    """A notebook of code cells (``sources``, not run) on the project's kernel."""
    cells = [
        {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": src, "id": f"c{i}"}
        for i, src in enumerate(sources)
    ]
    meta = {"kernelspec": {"name": KERNEL, "display_name": KERNEL_NAME, "language": "python"}}
    path.write_text(json.dumps({"cells": cells, "metadata": meta, "nbformat": 4, "nbformat_minor": 5}))


def offline_context(browser, lab: Lab, viewport: dict[str, int]) -> tuple[object, list[str]]:
    """A browser context that lets requests reach the server only: every other URL is refused and recorded in
    the returned list (the widget's JavaScript must come from the kernel, never from a CDN)."""
    context = browser.new_context(viewport=viewport)
    outside: list[str] = []

    def route(r) -> None:
        if r.request.url.startswith((lab.url, *LOCAL)):
            r.continue_()
        else:
            outside.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    return context, outside


def open_notebook(page, lab: Lab, notebook: str, timeout_ms: float = 120_000) -> None:
    """Open ``notebook`` and wait until its kernel is connected and idle (the status bar says so)."""
    page.goto(lab.open_url(notebook), wait_until="domcontentloaded")
    page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=timeout_ms)
    idle = re.compile(rf"{re.escape(KERNEL_NAME)} \| Idle")
    page.locator(".jp-StatusBar-Widget", has_text=idle).wait_for(timeout=timeout_ms)


def run_cell(page, index: int) -> None:
    """Select cell ``index`` by its prompt (command mode, also when the focus is on a widget) and run it."""
    page.locator(".jp-Notebook .jp-Cell").nth(index).locator(".jp-InputPrompt").click()
    page.keyboard.press("Shift+Enter")


def wait_for_prompt(page, index: int, count: int, timeout_ms: float = 120_000) -> None:
    """Wait until cell ``index`` shows the execution count ``[count]`` (its run has finished)."""
    cell = page.locator(".jp-Notebook .jp-Cell").nth(index)
    cell.locator(".jp-InputPrompt", has_text=f"[{count}]").wait_for(timeout=timeout_ms)
