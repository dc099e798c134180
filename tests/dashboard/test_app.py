"""The router's error contract: the user's mistake is one line; a bug looks like a bug (with its traceback)."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from isoscope.dashboard.services import geometry
from tests.dashboard.conftest import open_page


def _bug(*args, **kwargs):
    raise ValueError("operands could not be broadcast together with shapes (384,) (16,)")


def test_a_bug_in_core_is_shown_as_a_bug_with_its_traceback(app: AppTest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A ValueError from deep inside core is not the user's input: no one-line 'what to fix' box, but a
    'this is a bug' box with the traceback in an expander (and the sidebar keeps working)."""
    import isoscope.geometry.metrics

    monkeypatch.setattr(isoscope.geometry.metrics, "all_metrics", _bug)  # a deliberate bug, injected
    geometry.metrics_of.clear()  # no cached metrics from other tests may hide it (the rest of the cache stays)
    at = app.switch_page("views/anisotropy.py").run()
    errors = [e.value for e in at.error]
    assert any("bug in Isoscope" in e and "ValueError" in e and "broadcast" in e for e in errors), errors
    assert at.exception, "the traceback must be available"
    assert "broadcast" in at.exception[0].message
    assert not any("what to fix" in e for e in errors)
    assert at.sidebar.selectbox(key="pooling").value == "model"  # the app itself still works


def test_bad_input_is_one_line_and_no_traceback(app: AppTest) -> None:
    at = open_page(app, "similarity")
    at.radio(key="sim_source").set_value("Upload a file").run()
    at.file_uploader(key="sim_upload").set_value(("p.csv", b"sentence1,sentence2\n", "text/csv")).run()
    assert not at.exception
    assert len(at.error) == 1 and "bug" not in at.error[0].value
