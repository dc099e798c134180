"""Classroom mode (issue 17): an access code before any page, a model box that offers only the embedded model
and the teacher's allowlist and never reveals what exists on disk, bugs without tracebacks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from isoscope.dashboard.launch import code_hash
from isoscope.dashboard.services import geometry
from isoscope.dashboard.services.models import ModelKey
from isoscope.encode.models import default_model_path
from tests.dashboard.conftest import APP

CODE = "K7QM-3XHD"


@pytest.fixture()
def classroom(monkeypatch, tmp_path: Path) -> Path:
    """Classroom mode as ``isoscope app --classroom --access-code K7QM-3XHD --allow-model ...`` sets it up."""
    broken = tmp_path / "secret-folder" / "broken-model"
    broken.mkdir(parents=True)
    (broken / "config.json").write_text("{not json")
    models = [["minilm-copy", default_model_path()], ["broken", str(broken)]]
    monkeypatch.setenv("ISOSCOPE_CLASSROOM", "1")
    monkeypatch.setenv("ISOSCOPE_ACCESS_CODE_SHA256", code_hash(CODE))
    monkeypatch.setenv("ISOSCOPE_ALLOWED_MODELS", json.dumps(models))
    return tmp_path


def _enter(at: AppTest, code: str) -> AppTest:
    at.text_input(key="classroom_code").input(code)
    at.button[0].click().run()
    return at


def _texts(at: AppTest) -> str:
    """Every text the session shows (main area and sidebar)."""
    kinds = ("markdown", "caption", "error", "warning", "info", "title", "text", "selectbox", "text_input")
    parts = []
    for kind in kinds:
        for el in at.get(kind):
            parts += [str(getattr(el, a, "")) for a in ("value", "label", "options", "placeholder", "help")]
    return " ".join(parts)


def test_no_page_before_the_access_code(classroom: Path) -> None:
    at = AppTest.from_file(APP, default_timeout=600).run()
    assert not at.exception
    assert [t.value for t in at.title] == ["Isoscope"]
    assert "_settings" not in at.session_state  # the sidebar (model, data) never ran
    assert not at.sidebar.selectbox and not at.sidebar.text_input
    _enter(at, "WRONG-CODE")
    assert [e.value for e in at.error] == ["That is not the access code."]
    assert "_settings" not in at.session_state
    at.switch_page("views/similarity.py").run()  # asking for a page directly does not get past the gate
    assert not at.metric and "_settings" not in at.session_state


def test_the_access_code_opens_every_page(classroom: Path) -> None:
    at = AppTest.from_file(APP, default_timeout=600).run()
    _enter(at, " k7qm 3xhd ")  # case, spaces and dashes do not matter
    assert not at.exception and not at.error
    assert "_settings" in at.session_state
    at.switch_page("views/similarity.py").run()
    assert not at.exception and at.metric


def test_attempts_are_limited_per_session(classroom: Path, monkeypatch) -> None:
    import isoscope.dashboard.classroom.session

    monkeypatch.setattr(isoscope.dashboard.classroom.session, "MAX_ATTEMPTS", 3)
    at = AppTest.from_file(APP, default_timeout=600).run()
    for _ in range(3):
        _enter(at, "WRONG-CODE")
    _enter(at, CODE)  # even the right code is not checked any more in this session
    assert "_settings" not in at.session_state
    assert any("Too many wrong codes" in e.value for e in at.error)


def test_model_box_offers_the_allowlist_and_reveals_nothing_on_disk(classroom: Path) -> None:
    at = _enter(AppTest.from_file(APP, default_timeout=600).run(), CODE)
    assert not at.sidebar.text_input  # no free-text model path: nothing to probe /etc or /nonexistent with
    box = at.sidebar.selectbox(key="model_choice")
    assert box.options == ["all-MiniLM-L6-v2 (embedded)", "minilm-copy", "broken"]
    box.set_value("broken").run()
    errors = [e.value for e in at.error]
    assert errors == ["Could not load broken."], errors  # the label, not the path or the loader's message
    shown = _texts(at)
    assert "secret-folder" not in shown and str(classroom) not in shown and "config.json" not in shown
    assert at.session_state["_settings"].model == ModelKey()  # fell back to the embedded model
    at.sidebar.selectbox(key="model_choice").set_value("minilm-copy").run()
    assert not at.error and at.session_state["_settings"].model_label == "minilm-copy"
    assert default_model_path() not in _texts(at)


@pytest.mark.parametrize("probe", ["/etc", "/nonexistent", "/root/.ssh"])
def test_a_typed_path_is_ignored(classroom: Path, probe: str) -> None:
    """The default app tells /etc ('not a model directory') from /nonexistent ('does not exist'); in classroom
    mode a path smuggled into the old box's session key is not even looked at."""
    at = _enter(AppTest.from_file(APP, default_timeout=600).run(), CODE)
    at.session_state["model_input"] = probe
    at.run()
    assert not at.exception and not at.error
    assert at.session_state["_settings"].model == ModelKey()


def _bug(*args, **kwargs):
    raise ValueError("cannot open /srv/isoscope/secret/config.json")


def test_a_bug_shows_no_traceback_and_no_path(classroom: Path, monkeypatch) -> None:
    import isoscope.geometry.metrics

    at = _enter(AppTest.from_file(APP, default_timeout=600).run(), CODE)
    monkeypatch.setattr(isoscope.geometry.metrics, "all_metrics", _bug)
    geometry.metrics_of.clear()  # only the cached metrics: every other test keeps its warm cache
    at.switch_page("views/anisotropy.py").run()
    errors = [e.value for e in at.error]
    assert any("bug in Isoscope" in e and "ValueError" in e for e in errors), errors
    assert not at.exception  # no traceback element
    assert "/srv/isoscope" not in _texts(at)


def test_outside_classroom_mode_the_model_box_is_free_text(monkeypatch) -> None:
    monkeypatch.delenv("ISOSCOPE_CLASSROOM", raising=False)
    at = AppTest.from_file(APP, default_timeout=600).run()
    assert not at.exception and "_settings" in at.session_state  # no gate
    assert at.sidebar.text_input(key="model_input")


def test_the_migration_page_offers_the_allowlist_for_model_b(classroom: Path) -> None:
    """Model B in classroom mode: the allowlist by label, no free-text path; a broken one is named by its label."""
    at = _enter(AppTest.from_file(APP, default_timeout=600).run(), CODE)
    at.switch_page("views/migration.py").run()
    assert not at.exception, at.exception
    assert "mig_new" not in [t.key for t in at.text_input]  # nothing to probe the disk with
    box = at.selectbox(key="mig_new_choice")
    assert box.options == ["all-MiniLM-L6-v2 (embedded)", "minilm-copy", "broken"]
    box.set_value("broken").run()
    errors = [e.value for e in at.error]
    assert errors == ["Could not load broken."], errors
