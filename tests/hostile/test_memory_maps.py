"""Memory maps and the app's server (issue 51, class 8): an atlas whose memory-mapped arrays are cut short after it
was opened, and ``isoscope app`` whose server dies.

A file cut short under an open atlas is an InputError naming it (exit status 2 in a script), never SIGBUS;
``isoscope app`` exits with its server's status and one line when the server dies on its own (a bus error, the
OOM killer), where it used to exit 0.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.hostile.conftest import assert_one_line

ROOT = Path(__file__).resolve().parents[2]
HANG_GUARD_S = 240  # seconds: a child still running this long hangs


def _refused_line(proc: subprocess.CompletedProcess, *fragments: str) -> str:
    lines = [x for x in proc.stderr.splitlines() if x.strip()]
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert len(lines) == 1, proc.stderr[-3000:]
    assert_one_line(lines[0])
    for f in fragments:
        assert f in lines[0], lines[0]
    return lines[0]


# ---------------------------------------------------------------- memory maps cut short

TRUNCATE_AND_READ = """
import os, sys
import numpy as np
from isoscope.atlas.folder import load_atlas
from isoscope.errors import InputError

atlas = load_atlas(sys.argv[1])
space = atlas.spaces["raw"]
os.truncate(os.path.join(sys.argv[1], "raw", sys.argv[2]), int(sys.argv[3]))  # cut short after it was opened
try:
    for read in (lambda: space.xy[-1], lambda: space.density.max(), lambda: space.index.positions_in_box(-9, -9, 9, 9)):
        read()
except InputError as exc:
    print(f"error: {exc}", file=sys.stderr)
    sys.exit(2)
print("read past the end of a file without an error", file=sys.stderr)
sys.exit(3)
"""


@pytest.fixture(scope="module")
def atlas_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small raw-only atlas (1,200 points: each per-point array spans pages a cut can leave behind)."""
    from isoscope.atlas.pipeline import AtlasConfig, build_atlas
    from isoscope.atlas.synthetic import synthetic_vectors

    texts, _, vectors = synthetic_vectors(1_200, 8, seed=5)
    out = tmp_path_factory.mktemp("maps") / "atlas"
    build_atlas(None, texts, out, config=AtlasConfig(layout="pca", calibrate="none"), vectors=vectors)
    return out


@pytest.mark.parametrize("name", ["xy.npy", "density.npy", "morton_xy.npy"])
def test_an_atlas_array_cut_short_after_opening_is_an_input_error_not_sigbus(
    atlas_folder: Path, tmp_path: Path, name: str
) -> None:
    import shutil

    out = tmp_path / "atlas"
    shutil.copytree(atlas_folder, out)
    size = (out / "raw" / name).stat().st_size
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(TRUNCATE_AND_READ), str(out), name, str(size // 3)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=HANG_GUARD_S,
    )
    assert proc.returncode != -signal.SIGBUS, "the reader died of SIGBUS"
    line = _refused_line(proc, f"raw/{name}", "cut short")
    assert str(out) not in line  # the atlas by its folder's name, no server path


# ---------------------------------------------------------------- isoscope app whose server dies


def _streamlit(pid: int) -> list[int]:
    """The server child of ``isoscope app`` (pid ``pid``) once it runs streamlit (after its exec)."""
    import psutil

    try:
        children = psutil.Process(pid).children()
        return [c.pid for c in children if any("streamlit" in part for part in c.cmdline())]
    except psutil.Error:  # gone, or between its fork and exec
        return []


@pytest.mark.parametrize("sig", [signal.SIGBUS, signal.SIGKILL])
def test_isoscope_app_exits_non_zero_when_its_server_dies(tmp_path: Path, sig: signal.Signals) -> None:
    pytest.importorskip("psutil")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    app = subprocess.Popen(
        [sys.executable, "-m", "isoscope", "app", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    try:
        deadline = time.monotonic() + HANG_GUARD_S
        while not (server := _streamlit(app.pid)) and app.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server, f"no server started: {app.poll()}"
        os.kill(server[0], sig)  # the server dies on its own (a bus error, the OOM killer): no stop was asked
        _, err = app.communicate(timeout=HANG_GUARD_S)
    finally:
        if app.poll() is None:
            app.kill()
            app.wait()
    assert app.returncode == 128 + sig, err[-3000:]
    last = [x for x in err.splitlines() if x.strip()][-1]
    assert last.startswith("error: the app's server stopped unexpectedly") and sig.name in last, err[-3000:]
