"""Classroom mode through the real server (issue 28): before the access code nothing but the code form is
processed (no uploads, no cache control, no metrics), guesses are throttled per client address and for the
whole server (not per session), and an admitted student's hostile upload costs the server little memory.

These tests start ``isoscope app --classroom`` and speak Streamlit's WebSocket protocol (``streamlit_ws``), so
they go through the server layer that enforces the rules (``isoscope.dashboard.classroom.guard``), as a browser or a
script would. The throttle tests assert lower bounds on elapsed time: a slow machine only makes them truer.
"""

from __future__ import annotations

import asyncio
import shutil
import time
from pathlib import Path

import pytest

from tests.hostile.cases import lying_parquet
from tests.hostile.streamlit_ws import Server, Session, http, put_file, run_async, start_classroom, xsrf_cookie

WRONG = "THAT-IS-NOT-IT"
NOT_THE_CODE = "That is not the access code."


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Server:
    s = start_classroom(tmp_path_factory.mktemp("classroom-cache"))
    yield s
    s.stop()


def _run(coro):
    return run_async(coro)


# ---------------------------------------------------------------- nothing before the code


def test_metrics_are_not_served(server: Server) -> None:
    """Issue 28: /_stcore/metrics listed internal function names to anyone, before the code."""
    status, _, body = http("GET", server.url + "/_stcore/metrics")
    assert status == 404, body[:200]
    assert b"isoscope" not in body


def test_only_the_code_form_reaches_a_session_before_the_code(server: Server) -> None:
    """A file-URL request (the first step of an upload) gets no answer before the code, and one after it."""
    from streamlit.proto.BackMsg_pb2 import BackMsg

    async def scenario() -> tuple[list[str], list[str]]:
        s = await Session(server).connect()
        try:
            gate = await s.run()
            assert "classroom_code" in gate.widget("text_input", "classroom_code")
            msg = BackMsg()
            msg.file_urls_request.request_id = "early"
            msg.file_urls_request.session_id = s.session_id
            msg.file_urls_request.file_names.append("x.csv")
            await s.send(msg)
            before = [m.WhichOneof("type") for m in (await s.run()).others]  # the run proves the server is there
            await s.enter()
            msg.file_urls_request.request_id = "admitted"
            await s.send(msg)
            after: list[str] = []
            while "file_urls_response" not in after:  # other messages of the admitted run may come first
                after.append((await s.recv(60)).WhichOneof("type"))
            return before, after
        finally:
            await s.close()

    before, after = _run(scenario())
    assert "file_urls_response" not in before, before
    assert after[-1] == "file_urls_response"


def test_uploads_before_the_code_are_refused(server: Server) -> None:
    """Issue 28: before the code, 20 x 19 MB uploads were stored (+376 MB held after disconnect). The upload
    route now answers 403 for a session that has not given the code, before its body is read."""
    xsrf = xsrf_cookie(server)
    data = b"sentence1,sentence2,score\na,b,1\n"

    async def scenario() -> tuple[int, int]:
        stranger, student = await Session(server).connect(), await Session(server).connect()
        try:
            await stranger.run()
            await student.enter()
            refused = put_file(server, f"_stcore/upload_file/{stranger.session_id}/f1", "p.csv", data, xsrf)[0]
            accepted = put_file(server, f"_stcore/upload_file/{student.session_id}/f1", "p.csv", data, xsrf)[0]
            return refused, accepted
        finally:
            await stranger.close()
            await student.close()

    refused, accepted = _run(scenario())
    assert refused == 403
    assert accepted == 204  # the same request from an admitted session is stored: the refusal is the code's


def test_clear_cache_before_the_code_is_dropped(server: Server) -> None:
    """Issue 28: a `clear_cache` message before the code emptied every student's cached results (a cached page
    went from 0.39 s to 8.3 s). The probe is the server's embedding cache on disk, emptied before each visit: a
    visit that computes the page writes its vectors there, a visit served from the in-memory cache writes
    nothing. (Elements in the run are no probe: a cache hit replays the progress bar its cached function drew,
    sometimes with its values.)"""
    from streamlit.proto.BackMsg_pb2 import BackMsg

    disk = server.cache / "embeddings"

    def visit_wrote() -> bool:
        """Whether the visit since the last ``fresh_disk()`` wrote vectors to the disk cache."""
        return disk.exists() and any(p.is_file() for p in disk.rglob("*"))

    def fresh_disk() -> None:
        shutil.rmtree(disk, ignore_errors=True)

    async def scenario() -> tuple[bool, bool, bool]:
        student = await Session(server).connect()
        stranger = await Session(server).connect()
        try:
            teacher = await Session(server).connect()
            try:  # an admitted session may clear the caches: the cold visit is cold whatever ran before
                await teacher.enter()
                clear = BackMsg()
                clear.clear_cache = True  # (it also clears the sender's own session state)
                await teacher.send(clear)
                await teacher.run()
            finally:
                await teacher.close()
            await student.enter()
            fresh_disk()
            await student.run("Sentence pairs")
            cold = visit_wrote()
            fresh_disk()
            await student.run("Sentence pairs")
            warm = visit_wrote()
            await stranger.run()
            msg = BackMsg()
            msg.clear_cache = True
            await stranger.send(msg)
            await stranger.run()  # the server has read the message by the time this run finishes
            fresh_disk()
            await student.run("Sentence pairs")
            return cold, warm, visit_wrote()
        finally:
            await student.close()
            await stranger.close()

    cold, warm, after = _run(scenario())
    assert cold and not warm, (cold, warm)  # the probe works: computing writes the vectors, a cache hit does not
    assert not after, "the stranger's clear_cache emptied the in-memory caches: the page was computed again"


def test_an_admitted_students_lying_parquet_costs_the_server_little(server: Server, tmp_path: Path) -> None:
    """Issue 28: a classroom upload of the lying-footer Parquet took the server to 3.35 GB, which it kept.
    Refused at the budget, the server's peak resident memory grows by less than 256 MiB over what it held after
    computing the demo page (that baseline is the model, its ONNX engine and the page's data, not the upload's)."""
    data = lying_parquet(tmp_path / "liar.parquet")
    xsrf = xsrf_cookie(server)

    async def scenario() -> tuple[list[str], int]:
        from streamlit.proto.WidgetStates_pb2 import WidgetState

        s = await Session(server).connect()
        try:
            await s.enter()
            page = await s.run("Sentence pairs")  # the demo pairs: the model is loaded and the page computed
            radio = WidgetState(id=page.widget("radio", "sim_source"), string_value="Upload a file")
            upload_page = await s.run(widget_states=[radio])
            before = server.status("VmHWM")  # what the server needs anyway, before the upload
            status, state = await s.upload(
                upload_page.widget("file_uploader", "sim_upload"), "liar.parquet", data, xsrf
            )
            assert status == 204
            done = await s.run(widget_states=[radio, state])
            return done.texts("alert"), before
        finally:
            await s.close()

    alerts, before = _run(scenario())
    peak = server.status("VmHWM")
    grew = peak - before
    assert any("limit for Parquet" in a for a in alerts), alerts
    assert grew < 256 * 2**20, f"the server's peak grew by {grew / 2**20:.0f} MiB (from {before / 2**20:.0f} MiB)"
    print(f"classroom upload of the lying Parquet: server peak {peak / 2**20:.0f} MiB (grew by {grew / 2**20:.0f} MiB)")


CLASS_ROWS = 20_000  # isoscope.dashboard.launch.CLASSROOM_MAX_ROWS, the class's row limit


def _csv_rows(n: int) -> bytes:
    return b"sentence1,sentence2,score\n" + b"".join(b"a%d,b%d,1\n" % (i, i) for i in range(n))


def _npy_rows(n: int) -> bytes:
    import io

    import numpy as np

    buf = io.BytesIO()
    np.save(buf, np.ones((n, 4), dtype=np.float32), allow_pickle=False)
    return buf.getvalue()


UPLOAD_PATHS = {  # page, its source radio and the value that shows the uploaders, (uploader key, file name, data)
    "pairs": ("Sentence pairs", "sim_source", "Upload a file", [("sim_upload", "p.csv", _csv_rows)]),
    "corpus": ("Anisotropy", "ani_source", "Upload a file", [("ani_upload", "c.txt", None)]),
    "vectors": (
        "Neighbours",
        "nb_source",
        "Upload vectors (.npy)",
        [("nb_vec_upload", "v.npy", _npy_rows), ("nb_meta_upload", "t.txt", None)],
    ),
}


@pytest.mark.parametrize("path", list(UPLOAD_PATHS))
def test_every_upload_path_holds_the_class_row_limit(server: Server, path: str) -> None:
    """Issue 28: every class limit on every upload path. An admitted student's file one row over the class's
    20,000 is refused in one line naming the limit, on each page that takes an upload."""
    from isoscope.dashboard.launch import CLASSROOM_MAX_ROWS

    assert CLASSROOM_MAX_ROWS == CLASS_ROWS
    page_name, radio_key, choice, uploads = UPLOAD_PATHS[path]
    texts = b"".join(b"text number %d\n" % i for i in range(CLASS_ROWS + 1))
    xsrf = xsrf_cookie(server)

    async def scenario() -> list[str]:
        from streamlit.proto.WidgetStates_pb2 import WidgetState

        s = await Session(server).connect()
        try:
            await s.enter()
            page = await s.run(page_name)
            radio = WidgetState(id=page.widget("radio", radio_key), string_value=choice)
            upload_page = await s.run(widget_states=[radio])
            states = [radio]
            for key, name, make in uploads:
                data = make(CLASS_ROWS + 1) if make else texts
                status, state = await s.upload(upload_page.widget("file_uploader", key), name, data, xsrf)
                assert status == 204, status
                states.append(state)
            return (await s.run(widget_states=states)).texts("alert")
        finally:
            await s.close()

    errors = [a for a in _run(scenario()) if "20,000" in a]
    assert len(errors) == 1 and "\n" not in errors[0].strip(), errors
    assert "20,001" in errors[0] or "limit" in errors[0].lower(), errors


def test_an_upload_over_the_class_size_is_refused_by_the_server(server: Server) -> None:
    """The class's 20 MB upload size is enforced by the server: an admitted student's PUT that announces 21 MB
    answers 413 before its body is sent (the client sends only the headers)."""
    import http.client

    xsrf = xsrf_cookie(server)

    async def scenario() -> int:
        s = await Session(server).connect()
        try:
            await s.enter()
            conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
            conn.putrequest("PUT", f"/_stcore/upload_file/{s.session_id}/big")
            headers = {
                "Content-Type": "multipart/form-data; boundary=b",
                "Content-Length": str(21 * 2**20),
                "Cookie": f"_streamlit_xsrf={xsrf}",
                "X-Xsrftoken": xsrf,
            }
            for k, v in headers.items():
                conn.putheader(k, v)
            conn.endheaders()
            status = conn.getresponse().status
            conn.close()
            return status
        finally:
            await s.close()

    assert _run(scenario()) == 413


# ---------------------------------------------------------------- guesses throttled


async def _wrong_guesses(server: Server, sessions: int, guesses: int, hosts: list[str | None]) -> list[list[str]]:
    """``sessions`` sessions per host, each sending ``guesses`` wrong codes one after another, all at once."""

    async def one(host: str | None) -> list[str]:
        s = await Session(server, host).connect()
        try:
            gate = await s.run()
            answers = []
            for _ in range(guesses):
                run = await s.guess(WRONG, gate)
                answers += run.texts("alert")
                gate = run
            return answers
        finally:
            await s.close()

    return await asyncio.gather(*(one(h) for h in hosts for _ in range(sessions)))


def test_guesses_are_throttled_per_client_address_not_per_session() -> None:
    """Issue 28: the lock was per session (20 guesses, one a second), so 50 reconnecting sessions made 24-34
    guesses a second. Now every session of an address draws from the address's budget (40 at once, then one
    a second): 10 sessions x 6 guesses need at least 20 s, however many sessions share them."""
    from isoscope.dashboard.classroom.guard import GUESSES_PER_CLIENT

    burst, rate = GUESSES_PER_CLIENT
    with _fresh_server() as server:
        start = time.monotonic()
        answers = _run(_wrong_guesses(server, 10, 6, [None]))
        elapsed = time.monotonic() - start
    assert all(a.count(NOT_THE_CODE) == 6 for a in answers), answers  # every guess answered, none admitted
    assert elapsed >= (60 - burst) / rate - 1, f"60 guesses in {elapsed:.1f} s"


def test_guesses_are_throttled_for_the_whole_server() -> None:
    """Four client addresses (127.0.0.2-5 on the loopback), each within its own budget, share the server's:
    128 guesses against a burst of 100 and three a second need at least 9 s."""
    from isoscope.dashboard.classroom.guard import GUESSES_OVERALL, GUESSES_PER_CLIENT

    burst, rate = GUESSES_OVERALL
    assert 32 <= GUESSES_PER_CLIENT[0]
    with _fresh_server() as server:
        start = time.monotonic()
        answers = _run(_wrong_guesses(server, 8, 4, [f"127.0.0.{i}" for i in range(2, 6)]))
        elapsed = time.monotonic() - start
    assert sum(a.count(NOT_THE_CODE) for a in answers) == 128
    assert elapsed >= (128 - burst) / rate - 1, f"128 guesses in {elapsed:.1f} s"


class _fresh_server:
    """A server of its own (the throttles' budgets are per server process)."""

    def __enter__(self) -> Server:
        import tempfile

        self.tmp = tempfile.TemporaryDirectory(prefix="isoscope-throttle-")
        self.server = start_classroom(Path(self.tmp.name))
        return self.server

    def __exit__(self, *exc) -> None:
        self.server.stop()
        self.tmp.cleanup()
