"""Planted symlinks at the names of the files we create (issue 40, "Data loss"): a ``.partial``, a progress file, a
ledger or a cache journal that is a link to another file the user can write.

Every such file is created so that it can never follow a link (a fresh name, or O_EXCL | O_NOFOLLOW), and a
file reopened to resume is opened with O_NOFOLLOW: the link's target is never written, and the result under
the final name is a regular file holding the right array.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import isoscope.encode.chunked as ce
from isoscope.encode.embed import EmbedConfig, encode
from tests.hostile.cases import npy

TEXTS = [f"planted link case {i}: a short sentence about {w}." for i, w in enumerate(["rivers", "cakes", "maps"] * 6)]
CONFIG = EmbedConfig(batch_size=8, max_length=32)
PRECIOUS = b"the user's own file, which no run of isoscope may write\n"


class Stop(Exception):
    pass


def victim(tmp_path: Path, name: str = "precious.txt") -> Path:
    """A file elsewhere that the user can write (the link's target)."""
    folder = tmp_path / "elsewhere"
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_bytes(PRECIOUS)
    return path


def assert_untouched(*targets: Path) -> None:
    for t in targets:
        assert t.read_bytes() == PRECIOUS, f"{t} was written through a planted link"


def assert_regular(path: Path) -> None:
    assert path.is_file() and not path.is_symlink(), f"{path} is not a regular file"


@pytest.fixture(scope="module")
def reference(encoder) -> np.ndarray:
    return encode(encoder, TEXTS, None, config=CONFIG)  # (18, 384): the model's own pooling, embed's default


def test_embed_chunked_never_writes_through_planted_partial_and_progress_links(cli, tmp_path, reference) -> None:
    """Issue 40: `embed --chunk-size ... --out X.npy` wrote its .npy through a planted `X.npy.partial` link (the
    target overwritten, X.npy left a link to it)."""
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    out = tmp_path / "v.npy"
    partial, progress = victim(tmp_path, "a"), victim(tmp_path, "b")
    ce.partial_path(out).symlink_to(partial)
    ce.progress_path(out).symlink_to(progress)
    r = cli("embed", "--input", str(corpus), "--out", str(out), "--chunk-size", "5", "--max-length", "32")
    assert r.code == 0, r.err
    assert_untouched(partial, progress)
    assert_regular(out)
    np.testing.assert_allclose(np.load(out, allow_pickle=False), reference, atol=1e-5)  # float32 round-off


def test_a_resumed_run_never_writes_through_a_partial_swapped_for_a_link(encoder, tmp_path, reference) -> None:
    """An interrupted run's `.partial` replaced by a link to a file of the same shape: the resumed run must not
    open it for writing (it did: np.load(mmap_mode="r+") followed the link), it starts over instead."""
    out = tmp_path / "v.npy"

    def stop_after_two(done: int, total: int) -> None:
        if done >= 10:
            raise Stop

    with pytest.raises(Stop):
        ce.embed_to_npy(encoder, TEXTS, out, config=CONFIG, chunk_size=5, progress=stop_after_two)
    part = ce.partial_path(out)
    target = tmp_path / "elsewhere" / "same_shape.npy"
    target.parent.mkdir()
    target.write_bytes(npy(np.zeros((len(TEXTS), 384), np.float32)))
    before = target.read_bytes()
    part.unlink()
    part.symlink_to(target)
    run = ce.embed_to_npy(encoder, TEXTS, out, config=CONFIG, chunk_size=5)
    assert target.read_bytes() == before
    assert run.resumed_chunks == []  # the link is not the file the run left: started over
    assert_regular(out)
    np.testing.assert_allclose(np.load(out, allow_pickle=False), reference, atol=1e-5)


def test_an_atlas_rebuild_never_writes_through_planted_partials_or_its_ledger(tmp_path) -> None:
    """The calibrated space's `vectors.npy.partial` (and the ledger, the manifest) planted as links before a
    rebuild of a damaged stage."""
    from tests.hostile.test_atlas_folder import build

    out = tmp_path / "atlas"
    build(out)
    cal = np.load(out / "cal" / "vectors.npy", allow_pickle=False)
    (out / "cal" / "vectors.npy").unlink()
    a, b = victim(tmp_path, "a"), victim(tmp_path, "b")
    (out / "cal" / "vectors.npy.partial").symlink_to(a)
    ledger = out / "ledger.json"
    ledger_bytes = ledger.read_bytes()
    b.write_bytes(ledger_bytes)  # the ledger's content, behind a link
    ledger.unlink()
    ledger.symlink_to(b)
    run = build(out)
    assert "calibrate" in run.computed
    assert_untouched(a)
    assert b.read_bytes() == ledger_bytes
    assert_regular(out / "cal" / "vectors.npy")
    assert_regular(ledger)
    np.testing.assert_array_equal(np.load(out / "cal" / "vectors.npy", allow_pickle=False), cal)


def test_the_endpoint_cache_never_writes_through_a_planted_journal_link(tmp_path) -> None:
    """SQLite writes its rollback journal next to endpoints.sqlite: a link planted there is not followed."""
    from isoscope.encode.endpoints import Endpoint
    from isoscope.encode.remote import EndpointCache, embed_endpoint
    from tests.endpoint_server import EmbeddingServer, hashed_vectors

    db = tmp_path / "cache" / "endpoints.sqlite"
    db.parent.mkdir()
    journal = victim(tmp_path, "journal")
    db.with_name("endpoints.sqlite-journal").symlink_to(journal)
    texts = [f"text {i}" for i in range(6)]
    with EmbeddingServer() as server:
        endpoint = Endpoint("m", server.url, "ISOSCOPE_NO_KEY", 4)
        got = embed_endpoint(endpoint, texts, cache=EndpointCache(db), environ={})
        again = embed_endpoint(endpoint, texts, cache=EndpointCache(db), environ={})
    np.testing.assert_array_equal(got, hashed_vectors(texts))
    np.testing.assert_array_equal(again, got)
    assert len(server.requests) == 2  # the second run came from the cache
    assert_untouched(journal)


def test_a_link_in_place_of_the_endpoint_cache_is_not_written(tmp_path) -> None:
    """endpoints.sqlite planted as a link to another SQLite database of the user's: the cache created its table
    in that database and filled it. A link there is skipped (the vectors are fetched without a cache)."""
    import sqlite3

    from isoscope.encode.endpoints import Endpoint
    from isoscope.encode.remote import EndpointCache, embed_endpoint
    from tests.endpoint_server import EmbeddingServer

    target = tmp_path / "elsewhere" / "notes.sqlite"
    target.parent.mkdir()
    with sqlite3.connect(target) as con:
        con.execute("CREATE TABLE notes (body TEXT)")
        con.execute("INSERT INTO notes VALUES ('mine')")
    con.close()
    before = target.read_bytes()
    db = tmp_path / "cache" / "endpoints.sqlite"
    db.parent.mkdir()
    db.symlink_to(target)
    with EmbeddingServer() as server:
        embed_endpoint(Endpoint("m", server.url, "ISOSCOPE_NO_KEY", 4), ["a", "b"], cache=EndpointCache(db), environ={})
    assert target.read_bytes() == before, "the cache wrote into the database behind the link"
    assert db.is_symlink()
