"""A class on one server (issue 17): what the first session computed is shared, not redone per session.

Measured with bench/classroom.py: a second session's page views cost the server a fraction of the first's,
once (1) the Anisotropy page's cosine histogram came from a cache shared across sessions instead of being
recomputed on every visit, and (2) the long-lived heap was frozen out of Streamlit's full garbage collection
after every script run. These tests pin both down without timing anything: the expensive core functions
are counted while a second session visits the tour pages.
"""

from __future__ import annotations

import gc
from collections import Counter

import streamlit as st
from streamlit.testing.v1 import AppTest

from tests.conftest import private_cache
from tests.dashboard.conftest import APP, open_page

TOUR = ("home", "similarity", "anisotropy", "neighbours", "projection")


def _count(monkeypatch, calls: Counter, module, name: str) -> None:
    real = getattr(module, name)

    def counted(*args, **kwargs):
        calls[name] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)


def _tour() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=900).run()
    for page in TOUR:
        open_page(at, page)
        assert not at.error, (page, [e.value for e in at.error])
    return at


def test_a_second_session_recomputes_nothing(monkeypatch, tmp_path) -> None:
    import isoscope.dashboard.services.calibration
    import isoscope.dashboard.services.neighbours
    import isoscope.encode.embed
    import isoscope.geometry.metrics
    import isoscope.neighbours.projection

    monkeypatch.setenv("ISOSCOPE_CACHE", str(private_cache(tmp_path / "cache")))  # the session's embeddings
    st.cache_data.clear()
    st.cache_resource.clear()
    calls: Counter = Counter()
    for module, name in (
        (isoscope.encode.embed, "_encode_uncached"),  # a forward pass of the model
        (isoscope.geometry.metrics, "cosine_histogram_sample"),  # Anisotropy: was computed on every visit
        (isoscope.geometry.metrics, "all_metrics"),
        (isoscope.neighbours.projection, "project"),  # PCA/UMAP
        (isoscope.dashboard.services.neighbours, "build_index"),  # FAISS
        (isoscope.dashboard.services.calibration, "load_stored"),  # every calibrator fit (read from disk, or fitted)
    ):
        _count(monkeypatch, calls, module, name)
    _tour()
    first = Counter(calls)
    assert first["cosine_histogram_sample"] and first["load_stored"], first  # (embeddings: maybe on disk)
    _tour()  # another student, same pages, same settings
    assert calls == first, f"a second session redid {dict(calls - first)}"


def test_the_heap_is_frozen_after_the_first_run() -> None:
    """Streamlit's gc.collect(2) after every run walked the whole heap (torch, transformers, the model):
    more than half of a warm page view's CPU. Frozen objects are skipped."""
    AppTest.from_file(APP, default_timeout=900).run()
    assert gc.get_freeze_count() > 100_000  # the libraries and the model
