"""AppTest fixtures shared by the page tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[2] / "dashboard" / "app.py")


def open_page(at: AppTest, page: str) -> AppTest:
    """Switch the router to ``views/<page>.py`` and run it; fails on any exception."""
    at.switch_page(f"views/{page}.py").run()
    assert not at.exception, at.exception
    return at


@pytest.fixture()
def app() -> AppTest:
    """A fresh app session on the home page (the model is cached across sessions in-process)."""
    at = AppTest.from_file(APP, default_timeout=300)
    at.run()
    assert not at.exception, at.exception
    return at
