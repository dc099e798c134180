"""JupyterLab for the widget's browser test (``make test-lab``): one server for the session (``tests/lab/jupyter.py``,
shared with ``bench/widget.py``: the server from ``.venv-lab``, the kernel from the project's venv, an isolated
Jupyter config, no network, a token; stopped at the end); the browser is the test process's one chromium
(``browser``, tests/conftest.py), shared with tests/e2e."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.lab.jupyter import Lab, LabError, lab_executable, running_lab


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.lab)
            item.add_marker(pytest.mark.xdist_group("lab"))


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory, chromium_executable: str) -> Iterator[Lab]:
    executable = lab_executable()
    if executable is None:
        pytest.skip(
            "JupyterLab is not set up: run `make test` or `make test-lab` (they build .venv-lab and set ISOSCOPE_LAB)"
        )
    try:
        with running_lab(executable, tmp_path_factory.mktemp("lab")) as server:
            yield server
    except LabError as exc:
        pytest.fail(str(exc), pytrace=False)
