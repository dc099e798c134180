"""Hostile model inputs: missing paths, folders that are not models, hub ids while offline, remote code,
pickled and corrupt weights. isoscope.encode.models.load_encoder answers with one InputError line and never runs or
unpickles anything; the app shows one error and keeps working on the embedded default."""

from __future__ import annotations

import json
import pickle
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from isoscope.dashboard.services.models import ModelKey
from isoscope.encode.models import default_model_path, load_encoder
from isoscope.errors import InputError
from tests.dashboard.conftest import APP
from tests.hostile.cases import MarkerPayload
from tests.hostile.conftest import assert_one_line


def _missing(tmp: Path, marker: Path) -> str:
    return str(tmp / "no" / "such" / "model")


def _not_a_model(tmp: Path, marker: Path) -> str:
    (tmp / "notes").mkdir()
    (tmp / "notes" / "readme.txt").write_text("not a model")
    return str(tmp / "notes")


def _a_file(tmp: Path, marker: Path) -> str:
    (tmp / "weights.bin").write_bytes(b"junk")
    return str(tmp / "weights.bin")


def _hub_offline(tmp: Path, marker: Path) -> str:
    return "isoscope-tests/no-such-model"


def _bad_config(tmp: Path, marker: Path) -> str:
    d = tmp / "badcfg"
    d.mkdir()
    (d / "config.json").write_bytes(b"\x00\x01 not json")
    return str(d)


def _remote_code(tmp: Path, marker: Path) -> str:
    """A folder whose config asks for custom code that would create the marker when imported."""
    d = tmp / "remote"
    d.mkdir()
    auto_map = {"AutoConfig": "configuration_evil.EvilConfig", "AutoModel": "modeling_evil.EvilModel"}
    (d / "config.json").write_text(json.dumps({"model_type": "evil", "auto_map": auto_map}))
    for name in ("configuration_evil.py", "modeling_evil.py"):
        (d / name).write_text(f"from pathlib import Path\nPath({str(marker)!r}).touch()\n")
    return str(d)


def _copy_default(tmp: Path, name: str) -> Path:
    d = tmp / name
    shutil.copytree(default_model_path(), d)
    return d


def _pickled_weights(tmp: Path, marker: Path) -> str:
    """The real model folder with its weights replaced by a pickle whose loading would create the marker."""
    d = _copy_default(tmp, "pickled")
    for w in [*d.glob("*.safetensors"), *d.glob("*.bin")]:
        w.unlink()
    (d / "pytorch_model.bin").write_bytes(pickle.dumps(MarkerPayload(marker)))
    return str(d)


def _corrupt_safetensors(tmp: Path, marker: Path) -> str:
    d = _copy_default(tmp, "corrupt")
    for w in d.glob("*.safetensors"):
        w.write_bytes(w.read_bytes()[:1000])
    return str(d)


def _no_tokenizer(tmp: Path, marker: Path) -> str:
    d = tmp / "notok"
    d.mkdir()
    shutil.copy(Path(default_model_path()) / "config.json", d / "config.json")
    return str(d)


def _huge_config(tmp: Path, marker: Path) -> str:
    """The real model folder whose config claims a 4M-token vocabulary and hidden size 8192 (issue 28: an
    internal error; building it would allocate 128 GB of embeddings)."""
    d = _copy_default(tmp, "huge")
    config = json.loads((d / "config.json").read_text())
    config.update(vocab_size=4_000_000, hidden_size=8192, intermediate_size=32768)
    (d / "config.json").write_text(json.dumps(config))
    return str(d)


MODEL_CASES: list[tuple[str, Callable[[Path, Path], str]]] = [
    ("missing_path", _missing),
    ("folder_not_a_model", _not_a_model),
    ("a_file", _a_file),
    ("hub_id_offline", _hub_offline),
    ("config_not_json", _bad_config),
    ("remote_code", _remote_code),
    ("pickled_weights", _pickled_weights),
    ("no_tokenizer", _no_tokenizer),
    ("corrupt_safetensors", _corrupt_safetensors),
    ("config_larger_than_its_weights", _huge_config),
]


@pytest.mark.parametrize(("case", "make"), MODEL_CASES, ids=[c[0] for c in MODEL_CASES])
def test_load_encoder_refuses(case: str, make, tmp_path: Path) -> None:
    marker = tmp_path / "MARKER"
    name = make(tmp_path, marker)
    try:
        load_encoder(name)
    except InputError as exc:
        assert_one_line(str(exc))
    except Exception as exc:  # anything else is the failure this test exists to catch
        raise AssertionError(f"{type(exc).__name__} instead of InputError: {exc}") from None
    else:
        raise AssertionError(f"{name} loaded")
    assert not marker.exists(), "user code or a pickle was executed"


@pytest.fixture(scope="module")
def default_metrics() -> dict[str, str]:
    """The Sentence pairs metrics on the embedded default model."""
    at = AppTest.from_file(APP, default_timeout=600)
    at.run()
    at.switch_page("views/similarity.py").run()
    assert not at.exception
    return {m.label: m.value for m in at.metric}


@pytest.mark.parametrize(
    ("case", "make"),
    MODEL_CASES,
    ids=[c[0] for c in MODEL_CASES],
)
def test_app_bad_model_keeps_default(default_metrics, case: str, make, tmp_path: Path) -> None:
    """A bad model in the sidebar: one error line, and every page keeps working on the embedded default.

    The model is typed before the first run, so the router (app.py) draws the sidebar with it.
    """
    marker = tmp_path / "MARKER"
    at = AppTest.from_file(APP, default_timeout=600)
    at.session_state["model_input"] = make(tmp_path, marker)
    at.run()
    assert not at.exception, at.exception[0].value if at.exception else ""
    errors = [e.value for e in at.error]
    assert len(errors) == 1, errors
    assert_one_line(errors[0])
    assert any("embedded default" in c.value for c in at.sidebar.caption)
    settings = at.session_state["_settings"]
    assert settings.model == ModelKey() and "all-MiniLM-L6-v2" in settings.model_label
    assert at.title[0].value == "Isoscope"
    at.switch_page("views/similarity.py").run()
    assert not at.exception
    assert {m.label: m.value for m in at.metric} == default_metrics  # same result as on the default model
    assert not marker.exists()


def test_a_config_larger_than_its_weights_is_refused_before_allocating(tmp_path: Path) -> None:
    """The refusal comes before the model is built: the child's peak resident memory stays under 1 GiB."""
    from tests.hostile.peak import GiB, child_peak

    folder = _huge_config(tmp_path, tmp_path / "MARKER")
    stmt = (
        "from isoscope.encode.models import load_encoder\n"
        "from isoscope.errors import InputError\n"
        "try:\n"
        f"    load_encoder({folder!r})\n"
        "except InputError as exc:\n"
        "    assert 'billion parameters' in str(exc), exc\n"
        "else:\n"
        "    raise SystemExit('loaded')\n"
    )
    code, err, peak = child_peak([stmt], tmp_path)
    assert code == 0, err[-2000:]
    assert peak < GiB, f"peak {peak / 2**20:.0f} MiB"
