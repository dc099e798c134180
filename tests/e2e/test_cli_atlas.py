"""Issue 41: an atlas built on the command line opens in the app. ``isoscope atlas --input c.txt --out my-atlas/``
on a small corpus with the embedded model, then ``isoscope app my-atlas/`` (from the folder it was built in, as a
user types it): the Atlas page opens on that folder and draws its map in a real browser. Then ``kill PID`` of the
command frees the app's port within 5 s (the Streamlit child is stopped with it) and the page can no longer load."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

from isoscope.data import load_corpus
from isoscope.paths import DEMO_CORPUS
from tests.e2e import browser as b
from tests.e2e.conftest import SHARED_WITH_SERVER, VIEWPORT, start_server, stop_server
from tests.e2e.test_atlas import settled

TEXTS = 60  # a tiny corpus: every 80th demo text, several topics


def port_free(url: str) -> bool:
    host, port = url.rsplit("/", 1)[-1].split(":")
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex((host, int(port))) != 0


def test_isoscope_app_opens_a_cli_built_atlas_and_kill_stops_it(browser, tmp_path, session_cache) -> None:
    texts = load_corpus(DEMO_CORPUS).texts[::80][:TEXTS]
    (tmp_path / "c.txt").write_text("\n".join(texts) + "\n", encoding="utf-8")
    cache = tmp_path / "cache"
    cache.mkdir()
    for name in SHARED_WITH_SERVER:  # the ONNX export of the embedded model once per test session
        (session_cache / name).mkdir(exist_ok=True)
        (cache / name).symlink_to(session_cache / name, target_is_directory=True)
    env = dict(os.environ, HF_HUB_OFFLINE="1", ISOSCOPE_CACHE=str(cache))
    built = subprocess.run(
        [sys.executable, "-m", "isoscope", "atlas", "--input", "c.txt", "--out", "my-atlas/", "--layout", "pca"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    assert f"atlas of {len(texts)} texts" in built.stdout

    server = start_server(tmp_path / "app.log", {"ISOSCOPE_CACHE": str(cache)}, ("my-atlas/",))
    context = browser.new_context(viewport=VIEWPORT)
    context.add_init_script(b.RUN_COUNTER_JS)
    try:
        page = context.new_page()
        page.set_default_timeout(b.ACTION_TIMEOUT_MS)
        b.goto(page, f"{server.url}/atlas")
        page.get_by_role("heading", name="Atlas").first.wait_for(timeout=b.RUN_TIMEOUT_MS)
        b.wait_idle(page)
        b.assert_clean(page)
        option = b.main(page).locator('[data-testid="stRadioOption"]', has_text="Atlas folder").first
        assert option.locator("input").is_checked()
        box = b.main(page).locator('[data-testid="stTextInput"]', has_text="Atlas folder").locator("input")
        assert box.input_value() == str((tmp_path / "my-atlas").resolve())
        assert f"{len(texts)} points, every one drawn at every zoom" in b.captions(page)
        drawn = settled(page)
        assert drawn["missing"] == 0 and drawn["placed"], drawn  # the map's tiles and its cluster labels

        os.kill(server.proc.pid, signal.SIGTERM)  # `kill PID`: the command's PID only, not its process group
        deadline = time.monotonic() + 5
        while not port_free(server.url) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert port_free(server.url), "the app's port is still served 5 s after kill PID"
        assert server.proc.wait(timeout=5) == 0
        try:
            page.goto(f"{server.url}/atlas", timeout=10_000)
            reached = True
        except Exception:  # playwright's net::ERR_CONNECTION_REFUSED
            reached = False
        assert not reached, "the page still loads after kill PID"
    finally:
        context.close()
        stop_server(server)
    assert not server.tracebacks(), server.tracebacks()[0]
