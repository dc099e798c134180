"""A page's defaults must not need a warning (issue 17: the Lexical overlap page fitted full whitening on 666
vectors for 384 dimensions and warned on first load), and the caches behind the pages can neither lie nor
break them: a damaged entry is recomputed, an unreadable cache is skipped."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import numpy as np
import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

import isoscope.cache as cache_mod
from tests.dashboard.conftest import APP, open_page

TOUR = ("home", "similarity", "anisotropy", "neighbours", "projection", "overlap", "calibration")


def _fresh(monkeypatch, cache: Path) -> AppTest:
    monkeypatch.setenv("ISOSCOPE_CACHE", str(cache))
    st.cache_data.clear()
    st.cache_resource.clear()  # fitted calibrators too: the pages must go to the (damaged, unreadable) disk
    at = AppTest.from_file(APP, default_timeout=900).run()
    assert not at.exception
    return at


def _state(at: AppTest) -> tuple[list[str], list[str], dict[str, str]]:
    return [w.value for w in at.warning], [e.value for e in at.error], {m.label: m.value for m in at.metric}


@pytest.mark.parametrize("page", TOUR)
def test_first_load_shows_no_warning_and_no_error(app: AppTest, page: str) -> None:
    at = open_page(app, page)
    warnings, errors, _ = _state(at)
    assert not warnings and not errors, (warnings, errors)


def test_pages_survive_an_unreadable_cache(monkeypatch, tmp_path: Path) -> None:
    """Issue 17: a cache folder of mode 000 gave every page a PermissionError traceback. Simulated (root
    ignores modes): every file operation under the cache folder is refused."""
    root = tmp_path / "cache"
    clean = {}
    at = _fresh(monkeypatch, root)
    for page in ("similarity", "calibration"):
        clean[page] = _state(open_page(at, page))[2]
    real = {name: getattr(Path, name) for name in ("exists", "read_bytes", "mkdir", "stat", "is_dir", "iterdir")}

    def guard(name):
        def wrapper(self, *a, **k):
            if str(self).startswith(str(root)):
                raise PermissionError(errno.EACCES, "Permission denied", str(self))
            return real[name](self, *a, **k)

        return wrapper

    for name in real:
        monkeypatch.setattr(Path, name, guard(name))
    real_open = os.open
    monkeypatch.setattr(
        cache_mod.os,
        "open",
        lambda p, *a, **k: (
            (_ for _ in ()).throw(PermissionError(errno.EACCES, "Permission denied", str(p)))
            if str(p).startswith(str(root))
            else real_open(p, *a, **k)
        ),
    )
    at = _fresh(monkeypatch, root)
    # one page per kind of cached work (pairs, the corpus and its calibrators, fit sets): each recomputes
    for page in ("similarity", "neighbours", "overlap", "calibration"):
        open_page(at, page)
        _, errors, metrics = _state(at)
        assert not errors and not at.exception, (page, errors)
        if page in clean:
            assert metrics == clean[page], page  # computed, the same


def test_a_damaged_cache_entry_is_recomputed_not_served(monkeypatch, tmp_path: Path) -> None:
    """Issue 17: an embedding entry half overwritten with zeros was served (Spearman null); now its checksum
    fails, it is dropped, recomputed, and the page shows the same numbers as before."""
    root = tmp_path / "cache"
    at = _fresh(monkeypatch, root)
    clean = _state(open_page(at, "similarity"))[2]
    entries = sorted((root / "embeddings").glob("*.npy"))
    assert entries
    for p in entries:
        data = bytearray(p.read_bytes())
        half = len(data) // 2
        data[half : len(data) - cache_mod.TRAILER_BYTES] = bytes(len(data) - cache_mod.TRAILER_BYTES - half)
        p.write_bytes(bytes(data))
        assert np.isfinite(np.load(p, allow_pickle=False)).all()
    at = _fresh(monkeypatch, root)
    _, errors, metrics = _state(open_page(at, "similarity"))
    assert metrics == clean and not errors
    assert all(cache_mod.verified(p.read_bytes()) for p in entries)
