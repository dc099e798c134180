"""A client of a real ``isoscope app`` server that speaks Streamlit's WebSocket protocol as the frontend does
(``BackMsg`` out, ``ForwardMsg`` in), for the classroom-mode tests that must go through the server layer.

``bench/classroom.py`` measures with a client like this one; this one also keeps the session id, reads every
message (file URL responses included), binds a chosen local address (a second client "address" on the
loopback), and uploads files the way the frontend does (file URLs, then a PUT with the XSRF token).
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CODE = "HOSTILE-ROUND-28"
TIMEOUT = 300.0


def run_async(coro):
    """``asyncio.run(coro)`` in a thread of its own: the pytest worker's main thread may already run an event loop
    (Playwright's sync API keeps one there for the browser tests that shared this worker before)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Server:
    port: int
    process: subprocess.Popen
    cache: Path | None = None  # its ISOSCOPE_CACHE

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def pid(self) -> int:
        """The streamlit process (the isoscope command runs it as a child)."""
        for _ in range(200):
            children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
            pids = children.read_text().split() if children.exists() else []
            if pids:
                return int(pids[0])
            time.sleep(0.1)
        raise RuntimeError("the streamlit server did not start")

    def status(self, field_name: str) -> int:
        """A ``/proc/<pid>/status`` value in bytes (``VmHWM``, ``VmRSS``)."""
        for line in Path(f"/proc/{self.pid()}/status").read_text().splitlines():
            if line.startswith(field_name + ":"):
                return int(line.split()[1]) * 1024
        raise KeyError(field_name)

    def stop(self) -> None:
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)


def start_classroom(cache: Path, env: dict[str, str] | None = None) -> Server:
    """``isoscope app --classroom --access-code CODE`` on a free port of 127.0.0.1, answering its health check."""
    port = free_port()
    run_env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "ISOSCOPE_CACHE": str(cache)}
    argv = ["app", "--classroom", "--access-code", CODE, "--host", "127.0.0.1", "--port", str(port)]
    process = subprocess.Popen(
        [sys.executable, "-m", "isoscope", *argv],
        cwd=ROOT,
        env={**run_env, **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    server = Server(port, process, cache)
    deadline = time.monotonic() + 180
    while True:
        try:
            with urllib.request.urlopen(f"{server.url}/_stcore/health", timeout=5):
                return server
        except OSError:
            if time.monotonic() > deadline or process.poll() is not None:
                server.stop()
                raise RuntimeError("the server did not answer") from None
            time.sleep(0.5)


def http(method: str, url: str, data: bytes | None = None, headers: dict[str, str] | None = None):
    """(status, headers with lower-case names, body) of one request; HTTP errors are answers too."""
    request = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=60) as r:
            return r.status, {k.lower(): v for k, v in r.headers.items()}, r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, {k.lower(): v for k, v in exc.headers.items()}, exc.read()


@dataclass
class Run:
    """One script run as the client saw it."""

    seconds: float = 0.0
    elements: list[tuple[str, object]] = field(default_factory=list)  # (element type, proto)
    others: list[object] = field(default_factory=list)  # every ForwardMsg that is not a delta

    def kinds(self) -> list[str]:
        return [k for k, _ in self.elements]

    def texts(self, kind: str) -> list[str]:
        return [getattr(p, "body", "") for k, p in self.elements if k == kind]

    def widget(self, kind: str, key_part: str) -> str:
        return next(p.id for k, p in self.elements if k == kind and key_part in getattr(p, "id", ""))


class Session:
    """One browser tab."""

    def __init__(self, server: Server, local_host: str | None = None) -> None:
        self.server, self.local_host = server, local_host
        self.ws = None
        self.session_id = ""
        self.pages: dict[str, str] = {}
        self.current = ""
        self.pending: list[object] = []  # messages read outside a run

    async def connect(self) -> Session:
        import websockets

        url = f"ws://127.0.0.1:{self.server.port}/_stcore/stream"
        kwargs = {"local_addr": (self.local_host, 0)} if self.local_host else {}
        self.ws = await websockets.connect(url, subprotocols=["streamlit"], max_size=None, open_timeout=60, **kwargs)
        return self

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()

    async def send(self, msg) -> None:
        await self.ws.send(msg.SerializeToString())

    async def recv(self, timeout: float = TIMEOUT):
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        fwd = ForwardMsg()
        fwd.ParseFromString(await asyncio.wait_for(self.ws.recv(), timeout))
        if fwd.WhichOneof("type") == "new_session":
            self.session_id = fwd.new_session.initialize.session_id or self.session_id
            self.current = fwd.new_session.page_script_hash or self.current
        elif fwd.WhichOneof("type") == "navigation":
            self.pages.update({p.page_name: p.page_script_hash for p in fwd.navigation.app_pages})
            self.current = fwd.navigation.page_script_hash or self.current
        return fwd

    async def run(self, page: str | None = None, widget_states: list | None = None) -> Run:
        """Ask for a script run (of ``page``, or the current one) and read until it has finished."""
        from streamlit.proto.BackMsg_pb2 import BackMsg
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        msg = BackMsg()
        msg.rerun_script.query_string = ""
        msg.rerun_script.page_script_hash = self.pages[page] if page is not None else self.current
        msg.rerun_script.widget_states.widgets.extend(widget_states or [])
        start = time.perf_counter()
        await self.send(msg)
        run, started = Run(), False
        while True:
            fwd = await self.recv()
            kind = fwd.WhichOneof("type")
            if not started:  # what is left of an earlier run (one that ended in st.rerun) is not this run's
                started = kind == "new_session"
                if not started:
                    continue
            if kind == "delta" and fwd.delta.WhichOneof("type") == "new_element":
                element = fwd.delta.new_element
                etype = element.WhichOneof("type")
                run.elements.append((etype, getattr(element, etype) if etype else None))
            elif kind != "delta":
                run.others.append(fwd)
            if kind == "script_finished" and fwd.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                run.seconds = time.perf_counter() - start
                return run

    async def guess(self, code: str, gate: Run | None = None) -> Run:
        """Type ``code`` into the access-code form and press Enter."""
        from streamlit.proto.WidgetStates_pb2 import WidgetState

        gate = gate or await self.run()
        text = gate.widget("text_input", "classroom_code")
        submit = next(p.id for k, p in gate.elements if k == "button" and p.is_form_submitter)
        return await self.run(
            widget_states=[WidgetState(id=text, string_value=code), WidgetState(id=submit, trigger_value=True)]
        )

    async def enter(self) -> Run:
        return await self.guess(CODE)

    async def upload(self, widget_id: str, name: str, data: bytes, xsrf: str) -> tuple[int, object]:
        """Upload ``data`` as the frontend does: ask for a file URL, PUT the file; returns (HTTP status, the
        widget state that names the uploaded file)."""
        from streamlit.proto.BackMsg_pb2 import BackMsg
        from streamlit.proto.WidgetStates_pb2 import WidgetState

        msg = BackMsg()
        msg.file_urls_request.request_id = "req-1"
        msg.file_urls_request.session_id = self.session_id
        msg.file_urls_request.file_names.append(name)
        await self.send(msg)
        while True:
            fwd = await self.recv()
            if fwd.WhichOneof("type") == "file_urls_response":
                break
            self.pending.append(fwd)
        urls = fwd.file_urls_response.file_urls[0]
        status, _, _ = put_file(self.server, urls.upload_url, name, data, xsrf)
        state = WidgetState(id=widget_id)
        info = state.file_uploader_state_value.uploaded_file_info.add()
        info.file_id, info.name, info.size = urls.file_id, name, len(data)
        info.file_urls.CopyFrom(urls)
        return status, state


def xsrf_cookie(server: Server) -> str:
    """The XSRF cookie the health check sets, as for the frontend (its value is also the upload's X-Xsrftoken)."""
    _, headers, _ = http("GET", server.url + "/_stcore/health")
    cookie = headers.get("set-cookie", "")
    for part in cookie.split(";"):
        if part.strip().startswith("_streamlit_xsrf="):
            return part.strip().split("=", 1)[1]
    raise AssertionError(f"no XSRF cookie in {cookie!r}")


def put_file(server: Server, url: str, name: str, data: bytes, xsrf: str):
    """PUT a multipart upload to ``url`` (relative or absolute) with the XSRF cookie and header."""
    boundary = "----isoscope-hostile-28"
    body = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{name}"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n"
        ).encode()
        + data
        + f"\r\n--{boundary}--\r\n".encode()
    )
    headers = {
        "Content-Type": f"multipart/form-data; boundary={boundary}",
        "Cookie": f"_streamlit_xsrf={xsrf}",
        "X-Xsrftoken": xsrf,
    }
    full = url if url.startswith("http") else server.url + "/" + url.lstrip("/")
    return http("PUT", full, body, headers)
