"""Unbounded memory and hangs (issue 40): a server that drips its answer, endpoint answers under the byte cap
that parse into gigabytes, a tampered atlas whose points.parquet decodes to gigabytes, and ``isoscope.Space``
given a view that names far more than it holds.

Each is refused with one line (or, where the input is valid, read within bounds) at a memory cost measured in
a child process (its peak resident set, ``tests/hostile/peak.py``), far below what the input claims.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from isoscope.encode.endpoints import Endpoint
from isoscope.encode.remote import embed_endpoint
from isoscope.errors import InputError
from tests.endpoint_server import Answer, EmbeddingServer
from tests.hostile.conftest import assert_one_line
from tests.hostile.peak import GiB, child_peak

MiB = 2**20


# ---------------------------------------------------------------- a server that drips


class Drip:
    """A server that sends its answer one byte every ``every`` seconds: the status line and headers too
    (``where="headers"``), or only the body after them (``where="body"``)."""

    def __init__(self, where: str, every: float = 0.3) -> None:
        self.stop = threading.Event()
        drip = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                body = b'{"data": [' + b" " * 100_000 + b"]}"
                head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
                sent, slow = head.encode(), body
                if where == "headers":
                    sent, slow = b"", head.encode() + body
                try:
                    self.wfile.write(sent)
                    self.wfile.flush()
                    for i in range(len(slow)):
                        if drip.stop.wait(every):
                            return
                        self.wfile.write(slow[i : i + 1])
                        self.wfile.flush()
                except OSError:  # the client hung up: what the test wants
                    return

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> Drip:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.mark.timeout(60, method="signal")
@pytest.mark.parametrize("where", ["body", "headers"])
def test_a_dripping_server_is_cut_off_at_the_requests_deadline(where: str) -> None:
    """Issue 40: one byte every 20 s kept the client waiting without end (each read was within its timeout).
    With a 1 s read timeout, a request gets 5 s in all (``remote.DEADLINE_READS`` read timeouts); the answer
    would take hours."""
    with Drip(where) as server:
        endpoint = Endpoint("m", server.url, "ISOSCOPE_NO_KEY", 4)
        start = time.monotonic()
        with pytest.raises(InputError) as info:
            embed_endpoint(endpoint, ["a", "b"], timeout=1.0, retries=1, sleep=lambda _s: None, environ={})
        waited = time.monotonic() - start
    message = str(info.value)
    assert_one_line(message)
    assert "within 5 s" in message, message
    assert waited < 60  # not a timing assertion: the answer needs 30,000 s, the test's own timeout is 60 s


# ---------------------------------------------------------------- endpoint answers


ENDPOINT_CHILD = """
import sys
from isoscope.encode.endpoints import Endpoint
from isoscope.encode.remote import embed_endpoint
from isoscope.errors import InputError
url, n = sys.argv[2], int(sys.argv[3])
try:
    embed_endpoint(Endpoint("m", url, "ISOSCOPE_NO_KEY", n), [f"text {i}" for i in range(n)], retries=0, environ={})
except InputError as exc:
    print(exc, file=sys.stderr)
    sys.exit(3)
"""


def _zeros(items: int, per_item: int) -> bytes:
    """An embeddings answer of ``items`` vectors of ``per_item`` zeros (2 bytes of JSON each)."""
    row = b"[" + b"0," * (per_item - 1) + b"0]"
    data = b",".join(b'{"index": %d, "embedding": %s}' % (i, row) for i in range(items))
    return b'{"data": [' + data + b"]}"


@pytest.mark.parametrize(
    ("n", "per_item"),
    [
        (1, 50_000_000),  # 100 MB for one text (it peaked at 1.36 GB): over what one vector can need
        (128, 250_000),  # 64 MB for 128 texts, under the byte bound: 32 million values, not 128 vectors' worth
    ],
    ids=["100MB_for_one_text", "32M_values_for_128_texts"],
)
def test_an_endpoint_answer_is_bounded_by_what_the_batch_can_need(tmp_path, n: int, per_item: int) -> None:
    body = _zeros(n, per_item)
    with EmbeddingServer(script=[Answer(200, body)]) as server:
        code, err, peak = child_peak([ENDPOINT_CHILD, server.url, str(n)], tmp_path)
    assert code == 3, err[-2000:]
    assert_one_line(err.strip().splitlines()[-1])
    # the answer's bytes (held once or twice) and the interpreter; parsed, it took 1.36 GB
    assert peak < 256 * MiB, f"peak {peak / MiB:,.0f} MiB for a {len(body) / MiB:,.0f} MiB answer"


# ---------------------------------------------------------------- a tampered atlas


ATLAS_CHILD = """
import sys
from isoscope.atlas.folder import load_atlas
from isoscope.errors import InputError
try:
    atlas = load_atlas(sys.argv[2])
    print(f"loaded {atlas.n}", file=sys.stderr)
except InputError as exc:
    print(exc, file=sys.stderr)
    sys.exit(3)
"""


def _points_bomb(path: Path, rows: int, cell: int, dictionary: bool) -> None:
    """points.parquet of ``rows`` texts of ``cell`` characters each (zstd: a few hundred KB on disk): one row
    per row group, or (``dictionary``) one row group whose texts are one dictionary entry."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    text = "c" * cell
    if dictionary:
        col = pa.DictionaryArray.from_arrays(pa.array(np.zeros(rows, np.int32)), pa.array([text]))
        pq.write_table(pa.table({"text": col, "topic": ["t"] * rows}), path, compression="zstd", store_schema=False)
        return
    table = pa.table({"text": [text], "topic": ["t"]})
    with pq.ParquetWriter(path, table.schema, compression="zstd") as w:
        for _ in range(rows):
            w.write_table(table)


@pytest.mark.parametrize("dictionary", [False, True], ids=["row_groups", "dictionary"])
def test_a_tampered_points_file_is_decoded_within_the_parquet_limits(tmp_path, dictionary: bool) -> None:
    """Issue 40: a 0.2 MB points.parquet whose text column decodes to 4.8 GB (its ledger fixed up) exhausted
    memory in ``load_atlas``. Here 60 texts of 24 MB (1.4 GB decoded): pages that decode past
    ISOSCOPE_MAX_PARQUET_BYTES are refused; one text stored once in a dictionary is read once."""
    from tests.hostile.test_atlas_folder import build, rewrite_ledger

    out = tmp_path / "atlas"
    build(out, n=60)
    _points_bomb(out / "points.parquet", 60, 24 * MiB, dictionary)
    assert (out / "points.parquet").stat().st_size < 2 * MiB
    rewrite_ledger(out, "points.parquet")
    code, err, peak = child_peak([ATLAS_CHILD, str(out)], tmp_path, limit=4 * GiB)
    line = err.strip().splitlines()[-1]
    if dictionary:
        assert code == 0 and line == "loaded 60", err[-2000:]
    else:
        assert code == 3, err[-2000:]
        assert_one_line(line)
        assert "ISOSCOPE_MAX_PARQUET_BYTES" in line, line
    assert peak < 512 * MiB, f"peak {peak / MiB:,.0f} MiB"  # pyarrow and pandas; decoded, it took 1.4 GB


# ---------------------------------------------------------------- Space(array)


SPACE_CHILD = """
import sys
import numpy as np
import isoscope
from isoscope.errors import InputError
kind, n, d = sys.argv[2], 300_000, 1024  # 1.2 GB as float32, held in a few KB (or not at all)
if kind == "broadcast":
    x = np.broadcast_to(np.arange(d, dtype=np.float32), (n, d))
elif kind == "memmap":
    with open(sys.argv[3], "wb") as f:
        f.truncate(4 * n * d)  # a sparse file: no block on disk
    x = np.memmap(sys.argv[3], np.float32, "r", shape=(n, d))
else:
    import torch
    x = torch.arange(d, dtype=torch.float32).expand(n, d)
try:
    isoscope.Space(x)
except InputError as exc:
    print(exc, file=sys.stderr)
    sys.exit(3)
"""


@pytest.mark.parametrize("kind", ["broadcast", "memmap", "torch_expand"])
def test_space_checks_the_vector_limit_before_copying(tmp_path, kind: str) -> None:
    """Issue 40: a 10^6 x 4096 broadcast view, a torch expand and a sparse memmap ran to 4 GB. The same limit as
    a vectors file (ISOSCOPE_MAX_VECTOR_BYTES, 64 MiB here) is checked before the copy."""
    env = {"ISOSCOPE_MAX_VECTOR_BYTES": str(64 * MiB)}
    code, err, peak = child_peak([SPACE_CHILD, kind, str(tmp_path / "sparse.f32")], tmp_path, env=env)
    assert code == 3, err[-2000:]
    line = err.strip().splitlines()[-1]
    assert_one_line(line)
    assert "ISOSCOPE_MAX_VECTOR_BYTES" in line and "300,000 x 1,024" in line, line
    assert peak < 512 * MiB, f"peak {peak / MiB:,.0f} MiB"  # torch's import is most of it; the copy is 1.2 GB


def test_space_under_the_limit_is_unchanged(monkeypatch) -> None:
    import numpy as np

    import isoscope

    monkeypatch.setenv("ISOSCOPE_MAX_VECTOR_BYTES", str(4 * 100 * 8))
    x = np.broadcast_to(np.arange(8, dtype=np.float32), (100, 8))
    space = isoscope.Space(x)
    assert space.vectors.shape == (100, 8) and space.vectors.flags.c_contiguous
    with pytest.raises(InputError, match="ISOSCOPE_MAX_VECTOR_BYTES"):
        isoscope.Space(np.broadcast_to(np.arange(8, dtype=np.float32), (101, 8)))


def test_json_nesting_in_an_answer_is_not_a_bug() -> None:
    """An answer nested deeper than Python's recursion limit is not an embeddings response (one line)."""
    body = b'{"data": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    with EmbeddingServer(script=[Answer(200, body)]) as server, pytest.raises(InputError) as info:
        embed_endpoint(Endpoint("m", server.url, "ISOSCOPE_NO_KEY", 4), ["a"], retries=0, environ={})
    assert_one_line(str(info.value))
    json.dumps(str(info.value))
