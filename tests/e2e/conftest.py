"""Real-browser fixtures: one Streamlit server for the whole session, visited by the session's one headless Debian
chromium (``browser`` in tests/conftest.py; its helpers in tests/chromium.py).

The server runs ``dashboard/app.py`` on a free loopback port with the user's embedding cache (so a second
run is fast) and is stopped at the end by killing its process group. No browser is ever downloaded: the
system chromium is used through Playwright's ``executable_path``. Without chromium the tests are skipped,
except under ``CI=true`` where a missing browser is a failure.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.chromium import free_port

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "docs" / "screenshots"  # the docs' pictures: written only under make screenshots
VIEWPORT = {"width": 1400, "height": 1000}
HEALTH_TIMEOUT_S = 90.0


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the browser tests. They are never rerun: a test that passes only on a second try is a bug to find
    (each action waits for the runs it triggers: ``tests/e2e/browser.py``). Under pytest-xdist (`make test`) they
    all run in one worker, with one server and one browser."""
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.e2e)
            item.add_marker(pytest.mark.xdist_group("browser"))  # `pytest -n 2 --dist loadgroup`: one worker


@dataclass
class Server:
    url: str
    proc: subprocess.Popen
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def tracebacks(self) -> list[str]:
        """Exceptions the server logged: Streamlit's own 'Uncaught app execution', and the app's bug box
        (isoscope.dashboard.ui.bug_report logs 'Uncaught app execution (a bug in Isoscope)')."""
        text = self.log()
        return [chunk[:800] for chunk in text.split("Uncaught app execution")[1:]]


def start_server(log_path: Path, extra_env: dict[str, str] | None = None, args: tuple[str, ...] = ()) -> Server:
    """Start ``isoscope app`` (what users run) from a folder outside the checkout and wait for
    ``/_stcore/health``. ``args`` go to ``isoscope app`` (e.g. a DATA_FILE)."""
    port = free_port()
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    env.update(extra_env or {})
    cmd = [sys.executable, "-m", "isoscope", "app", "--port", str(port), "--host", "127.0.0.1", *args]
    with open(log_path, "wb") as log:  # the child keeps its own copy of the handle
        proc = subprocess.Popen(
            cmd, cwd=log_path.parent, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    url = f"http://127.0.0.1:{port}"
    server = Server(url, proc, log_path)
    deadline = time.monotonic() + HEALTH_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"streamlit exited with {proc.returncode}:\n{server.log()[-2000:]}", pytrace=False)
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.read().strip() == b"ok":
                    return server
        except OSError:
            pass
        time.sleep(0.25)
    stop_server(server)
    pytest.fail(f"streamlit not healthy after {HEALTH_TIMEOUT_S:.0f} s:\n{server.log()[-2000:]}", pytrace=False)
    raise AssertionError("unreachable")


def stop_server(server: Server) -> None:
    """Terminate the server's whole process group (SIGTERM, then SIGKILL)."""
    if server.proc.poll() is not None:
        return
    try:
        os.killpg(server.proc.pid, signal.SIGTERM)
        server.proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(server.proc.pid, signal.SIGKILL)
        server.proc.wait(timeout=15)
    except ProcessLookupError:
        pass


def seed_landscape_result(root: Path) -> None:
    """One small stored loss-landscape experiment (a tiny random BERT on the demo tasks, a few seconds) in
    ``root``, so the Loss surfaces page has a result to show without minutes of live training."""
    from isoscope.landscape import LandscapeConfig, TrainConfig, load_task, run_landscape
    from isoscope.landscape.pipeline import experiment_key
    from tests.tiny_models import tiny_bert

    encoder = tiny_bert(0)
    task1, task2 = load_task("demo-topic", 0), load_task("demo-pairs", 0)
    train = TrainConfig(lr=1e-3, epochs=2, batch_size=8, n_train=24, max_length=48, seed=0)
    config = LandscapeConfig(train=train, eval_size=8, eval_chunk=8, grid=5, points_1d=5, hessian_iters=3)
    run_landscape(
        encoder, task1, task2, config=config, out_dir=root / experiment_key(encoder, task1, task2, config=config)
    )


SHARED_WITH_SERVER = ("embeddings", "onnx", "int8", "calibrators")  # content-keyed and verified on every read
SMALL_ATLAS_POINTS = 20_000


@pytest.fixture(scope="session")
def small_atlas(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An atlas folder of 20,000 synthetic sentences with precomputed vectors (PCA, raw only: about 2 s, nothing
    embedded), which the server's Atlas page offers first (``ISOSCOPE_ATLAS_DIR``)."""
    from isoscope.atlas.synthetic import synthetic_atlas

    folder, _ = synthetic_atlas(tmp_path_factory.mktemp("atlas") / "small", SMALL_ATLAS_POINTS)
    return folder


@pytest.fixture(scope="session")
def streamlit_server(
    chromium_executable: str, tmp_path_factory: pytest.TempPathFactory, session_cache: Path, small_atlas: Path
) -> Iterator[Server]:
    """The app on a private cache folder that holds one small stored landscape experiment, with what is keyed by
    its content shared with the rest of the session (``SHARED_WITH_SERVER``: the demo is embedded, the ONNX and
    int8 models are built and each calibrator is fitted once per session, not once more for the browser), and
    ``small_atlas`` as the Atlas page's first source.

    Under ``make screenshots`` (ISOSCOPE_SCREENSHOTS=1) it uses the user's own cache instead, so docs/pages.md
    shows the experiment made with the real model (``python -m isoscope landscape ...``, see docs/results.md).
    """
    env = {"ISOSCOPE_ATLAS_DIR": str(small_atlas)}
    if os.environ.get("ISOSCOPE_SCREENSHOTS") != "1":
        cache = tmp_path_factory.mktemp("isoscope-cache")
        for name in SHARED_WITH_SERVER:
            (session_cache / name).mkdir(exist_ok=True)
            (cache / name).symlink_to(session_cache / name, target_is_directory=True)
        seed_landscape_result(cache / "landscape")
        env["ISOSCOPE_CACHE"] = str(cache)
    server = start_server(tmp_path_factory.mktemp("streamlit") / "server.log", env)
    try:
        yield server
    finally:
        stop_server(server)


@pytest.fixture(scope="session")
def warm_server(streamlit_server: Server, browser) -> Server:
    """The server after one session has opened the home page (the model is loaded once, here)."""
    from tests.e2e import browser as b

    context = browser.new_context(viewport=VIEWPORT)
    context.add_init_script(b.RUN_COUNTER_JS)
    page = context.new_page()
    try:
        b.goto(page, streamlit_server.url + "/")
        page.get_by_role("heading", name="Isoscope").first.wait_for(timeout=b.RUN_TIMEOUT_MS)
    finally:
        context.close()
    return streamlit_server


def outside_requests(context, server: Server) -> list[str]:
    """Every request ``context`` makes to a host other than the app's, as it happens (issue 26: the favicon came
    from a font CDN, which fails offline): the list a test asserts empty."""
    from urllib.parse import urlsplit

    local = {urlsplit(server.url).hostname, "127.0.0.1", "localhost"}
    outside: list[str] = []

    def record(request) -> None:
        url = urlsplit(request.url)
        if url.scheme in ("http", "https", "ws", "wss") and url.hostname not in local:
            outside.append(request.url)

    context.on("request", record)
    return outside


@pytest.fixture()
def page(warm_server: Server, browser):
    """A fresh browser tab (a new Streamlit session) on the home page; fails on new server tracebacks and on
    any request to another host."""
    from tests.e2e import browser as b

    seen = len(warm_server.tracebacks())
    context = browser.new_context(viewport=VIEWPORT, accept_downloads=True)
    outside = outside_requests(context, warm_server)
    context.add_init_script(b.RUN_COUNTER_JS)
    pg = context.new_page()
    pg.set_default_timeout(b.ACTION_TIMEOUT_MS)
    try:
        b.goto(pg, warm_server.url + "/")
        pg.get_by_role("heading", name="Isoscope").first.wait_for(timeout=b.RUN_TIMEOUT_MS)
        yield pg
    finally:
        context.close()
    new = warm_server.tracebacks()[seen:]
    assert not new, f"the server logged an uncaught exception: {new[0]}"
    assert not outside, f"requests to other hosts: {sorted(set(outside))}"


@pytest.fixture(scope="session")
def screenshots(tmp_path_factory) -> Path:
    """Where page screenshots go: docs/screenshots under ``make screenshots``, else a temporary one."""
    if os.environ.get("ISOSCOPE_SCREENSHOTS") == "1":
        return SCREENSHOTS
    return tmp_path_factory.mktemp("screenshots")
