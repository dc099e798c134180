"""dashboard/base_url.py: a page opened by its own URL (``/atlas``) gets the server's base URL in its HTML, so
Streamlit's frontend makes one health check at ``/_stcore/health`` instead of probing ``/atlas/_stcore/health``
first (issue 41: a 404 on every page opened by its URL). The real st.App of serve.py under a test client."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import pytest
import streamlit

from isoscope.dashboard.base_url import base_path, inject, script

SERVE = Path(__file__).resolve().parents[2] / "dashboard" / "serve.py"
BROWSER = {"accept": "text/html,application/xhtml+xml,*/*;q=0.8", "accept-encoding": "gzip, deflate, br"}


@pytest.fixture(scope="module")
def client():
    from starlette.testclient import TestClient

    serve = runpy.run_path(str(SERVE))  # the app `isoscope app` runs
    with TestClient(serve["app"]) as c:
        yield c


def test_base_path_is_slash_wrapped() -> None:
    assert base_path("") == "/" and base_path("/") == "/"
    assert base_path("lab/isoscope") == "/lab/isoscope/" and base_path("/lab/") == "/lab/"


def test_the_script_comes_before_every_other_script() -> None:
    html = b'<html><head><script src="a.js"></script></head><body></body></html>'
    page = inject(html, "/")
    assert page.index(script("/")) < page.index(b'src="a.js"')
    assert inject(b"no head here", "/") == b"no head here"


@pytest.mark.parametrize("url", ["/", "/atlas", "/compare"])
def test_every_page_url_says_the_servers_base_url(client, url: str) -> None:
    r = client.get(url, headers=BROWSER)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert "content-encoding" not in r.headers and int(r.headers["content-length"]) == len(r.content)
    first_script = r.text.index("<script")
    assert r.text[first_script:].startswith(script("/").decode())
    assert 'BACKEND_BASE_URL: window.location.origin + "/"' in r.text
    assert client.get("/_stcore/health").status_code == 200  # where the frontend now checks


def test_other_responses_pass_untouched(client) -> None:
    health = client.get("/_stcore/health", headers={"accept": "*/*"})
    assert health.status_code == 200 and b"BACKEND_BASE_URL" not in health.content


def test_streamlits_frontend_reads_the_base_url_before_guessing() -> None:
    """The setting is Streamlit's own: its bundle reads ``window.__streamlit.BACKEND_BASE_URL`` and guesses from
    the address only without it (a Streamlit upgrade that dropped it would make the script useless)."""
    js = Path(streamlit.__file__).parent / "static" / "static" / "js"
    bundle = "".join(p.read_text(encoding="utf-8", errors="replace") for p in js.glob("index.*.js"))
    assert "window.__streamlit" in bundle
    assert re.search(r"new URL\(e\?\?window\.location\.href\)", bundle)  # the address only as the fallback
    assert "get BACKEND_BASE_URL()" in bundle
