"""Fixtures of the core tests."""

from __future__ import annotations

import pytest


@pytest.fixture()
def cli(cli_main):
    """``cli([...])`` is ``python -m isoscope ...`` in-process: exit status, output on capsys."""
    return cli_main
