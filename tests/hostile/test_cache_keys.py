"""Caches that served the wrong thing (issue 40): two rows of endpoints.sqlite with their data and checksums
swapped were served (the vectors of text 14 returned for text 19), two atlas tiles swapped on disk were served
as each other, and the warning about a lone surrogate in the user's texts depended on the cache.

Every cache entry's checksum names its key (as the embedding cache's trailer does): an entry moved under
another key, checksum and all, is dropped and computed again. A warning about the input belongs to reading
it: it is given every time, whether the vectors come from the cache or not.
"""

from __future__ import annotations

import json
import logging
import sqlite3

import numpy as np

from isoscope.encode.endpoints import Endpoint
from isoscope.encode.remote import EndpointCache, embed_endpoint, text_key
from tests.endpoint_server import EmbeddingServer, hashed_vectors

TEXTS = [f"text number {i}" for i in range(24)]


def test_swapped_endpoint_rows_are_fetched_again_not_served(tmp_path) -> None:
    cache = EndpointCache(tmp_path / "endpoints.sqlite")
    with EmbeddingServer() as server:
        endpoint = Endpoint("m", server.url, "ISOSCOPE_NO_KEY", 8)
        first = embed_endpoint(endpoint, TEXTS, cache=cache, environ={})
        with sqlite3.connect(cache.path) as con:  # rows 14 and 19 trade data and checksum
            rows = con.execute("SELECT text, data, checksum FROM vectors").fetchall()
            keys = {text: (data, checksum) for text, data, checksum in rows}
            a, b = text_key(TEXTS[14]), text_key(TEXTS[19])
            for key, other in ((a, b), (b, a)):
                con.execute("UPDATE vectors SET data = ?, checksum = ? WHERE text = ?", (*keys[other], key))
        con.close()
        sent = len(server.requests)
        again = embed_endpoint(endpoint, TEXTS, cache=cache, environ={})
    np.testing.assert_array_equal(first, hashed_vectors(TEXTS))
    np.testing.assert_array_equal(again, first)  # text 19 gets its own vector, not text 14's
    assert [sorted(x) for x in server.inputs()[sent:]] == [sorted([TEXTS[14], TEXTS[19]])]  # fetched again


def test_swapped_tile_files_are_drawn_again_not_served(tmp_path, monkeypatch) -> None:
    from isoscope.dashboard import tiles
    from tests.dashboard.test_tiles import build

    monkeypatch.setenv("ISOSCOPE_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "atlas"
    build(out)
    style = ("topic", False)
    a = tiles.tile_png(str(out), "raw", style, 1, 0, 0)
    b = tiles.tile_png(str(out), "raw", style, 1, 1, 1)
    assert a is not None and b is not None and a != b
    files = sorted((tmp_path / "cache" / "atlas-tiles").rglob("*.png"))
    assert [f.name for f in files] == ["0-0.png", "1-1.png"]
    first, second = (f.read_bytes() for f in files)
    files[0].write_bytes(second)
    files[1].write_bytes(first)
    with tiles._lock:
        tiles._memory.clear()
    assert tiles.tile_png(str(out), "raw", style, 1, 0, 0) == a
    assert tiles.tile_png(str(out), "raw", style, 1, 1, 1) == b


def _surrogate_warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if "surrogate" in r.getMessage()]


def test_a_lone_surrogate_is_warned_about_on_every_read_cached_or_not(encoder, tmp_path, caplog) -> None:
    """``isoscope.embed`` of texts holding half of an emoji: the texts are repaired and the warning given on
    the second run too, when the vectors come from the cache (it crashed in the tokenizer)."""
    import isoscope

    texts = ["half \ud83d of an emoji", "a dog runs in the park", "a cat sleeps on the mat"]
    cache = tmp_path / "embeddings"
    spaces = []
    for _ in range(2):
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            spaces.append(isoscope.embed(texts, encoder, cache=str(cache), progress=False))
        assert len(_surrogate_warnings(caplog)) == 1, caplog.text
    assert any(cache.iterdir())  # the second run read the cache
    for space in spaces:
        assert space.texts[0] == "half \ufffd of an emoji"
        assert [w for w in space.warnings if "surrogate" in w]
    np.testing.assert_array_equal(spaces[0].vectors, spaces[1].vectors)


def test_a_file_with_a_lone_surrogate_is_warned_about_on_every_read(encoder, tmp_path, caplog) -> None:
    """The same for a file read by ``isoscope.embed(Path)`` (its warning was kept in space.warnings only)."""
    from pathlib import Path

    import isoscope

    path = tmp_path / "c.jsonl"
    lines = [{"text": "half \ud83d of an emoji"}, {"text": "a dog runs"}, {"text": "a cat sleeps"}]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    for _ in range(2):
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            space = isoscope.embed(Path(path), encoder, cache=str(tmp_path / "embeddings"), progress=False)
        assert len(_surrogate_warnings(caplog)) == 1, caplog.text
        assert space.texts[0] == "half \ufffd of an emoji"


def test_swapped_onnx_models_are_rebuilt_not_served(tmp_path, caplog) -> None:
    """Two cached ONNX models swapped with their sidecars (a model and the sidecar that vouches for it): the
    sidecar names its key, so each is rebuilt instead of being served as the other model."""
    from isoscope.encode.onnx_cache import model_bytes, paths

    built: list[str] = []

    def builder(payload: bytes):
        def build(path):
            built.append(payload.decode())
            path.write_bytes(payload)

        return build

    assert model_bytes(tmp_path, "a", builder(b"model a")) == b"model a"
    assert model_bytes(tmp_path, "b", builder(b"model b")) == b"model b"
    for x, y in zip(paths(tmp_path, "a"), paths(tmp_path, "b"), strict=True):
        tmp = x.with_suffix(".swap")
        x.rename(tmp)
        y.rename(x)
        tmp.rename(y)
    with caplog.at_level(logging.WARNING):
        assert model_bytes(tmp_path, "a", builder(b"model a")) == b"model a"
        assert model_bytes(tmp_path, "b", builder(b"model b")) == b"model b"
    assert built == ["model a", "model b", "model a", "model b"]
    assert "another model" in caplog.text
