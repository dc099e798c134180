"""A class opening a cold Atlas page at once (issue 28: 6 of 10 students got bug boxes, FileNotFoundError on
``vectors.npy.partial``: concurrent builds of one folder raced in the app).

Ten sessions of ``isoscope app --classroom`` pass the access code and open the Atlas page at the same moment,
through Streamlit's WebSocket protocol (``bench/classroom.py``'s client): no session may see an exception or
an error box, and the demo atlas is built once (one folder in the cache), the other sessions waiting for it.
"""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from bench.classroom import Session, _free_port, start_server
from tests.hostile.streamlit_ws import run_async

SESSIONS = 10


@pytest.mark.slow
def test_ten_students_open_a_cold_atlas_page_at_once(tmp_path: Path) -> None:
    port = _free_port()
    cache = tmp_path / "cache"
    server = start_server(port, cache)

    async def student() -> list[str]:
        session = Session(port)
        try:
            await session.connect()
            admitted = await session.enter_code()
            page = await session.run("Atlas")
            return admitted.errors + page.errors + ([] if page.widgets else ["the Atlas page drew nothing"])
        finally:
            await session.close()

    async def class_() -> list[list[str]]:
        return await asyncio.gather(*(student() for _ in range(SESSIONS)))

    try:
        errors = run_async(class_())  # in a thread: Playwright may hold this worker's event loop
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=60)
    assert all(not e for e in errors), [e for e in errors if e]
    built = [p for p in (cache / "atlas").iterdir() if p.is_dir()]
    assert len(built) == 1  # one build, shared by all ten
