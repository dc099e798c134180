"""Hostile fitted-calibrator folders: isoscope.calibrate.load_calibrator refuses anything that is not an intact
folder written by ``save`` with one InputError line, and never unpickles or imports anything."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from isoscope.calibrate import JSON_NAME, TENSORS_NAME, load_calibrator, make_calibrator
from isoscope.errors import InputError
from tests.hostile.cases import junk, pickled_npy, raw_pickle
from tests.hostile.conftest import assert_one_line

RNG = np.random.default_rng(0)
X = (RNG.standard_normal((200, 16)) @ RNG.standard_normal((16, 16)) + 3.0).astype(np.float32)  # (n, d)


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An intact whitening calibrator folder to copy and tamper with."""
    folder = tmp_path_factory.mktemp("cal") / "whitening"
    make_calibrator("sn+abtt:2").fit(X).save(folder)
    return folder


def _copy(saved: Path, tmp: Path) -> Path:
    d = tmp / "cal"
    shutil.copytree(saved, d)
    return d


def _doc(d: Path) -> dict:
    return json.loads((d / JSON_NAME).read_text())


def _write_doc(d: Path, doc: dict) -> None:
    (d / JSON_NAME).write_text(json.dumps(doc))


Tamper = Callable[[Path, Path, Path], Path]  # (intact folder, tmp dir, marker) -> folder to load


def missing_folder(s, t, m):
    return t / "nowhere"


def empty_folder(s, t, m):
    (t / "empty").mkdir()
    return t / "empty"


def a_file(s, t, m):
    (t / "file.json").write_text("{}")
    return t / "file.json"


def json_only(s, t, m):
    d = _copy(s, t)
    (d / TENSORS_NAME).unlink()
    return d


def json_junk(s, t, m):
    d = _copy(s, t)
    (d / JSON_NAME).write_bytes(junk(300))
    return d


def json_not_object(s, t, m):
    d = _copy(s, t)
    (d / JSON_NAME).write_text("[1, 2, 3]")
    return d


def wrong_format(s, t, m):
    d = _copy(s, t)
    _write_doc(d, {**_doc(d), "format": "something-else"})
    return d


def future_version(s, t, m):
    d = _copy(s, t)
    _write_doc(d, {**_doc(d), "version": 99})
    return d


def unknown_class(s, t, m):
    d = _copy(s, t)
    _write_doc(d, {**_doc(d), "class": "os.system"})
    return d


def params_injection(s, t, m):
    """Constructor arguments the class does not take."""
    d = _copy(s, t)
    doc = _doc(d)
    doc["params"] = {"__import__": "os", "steps": "rm -rf /"}
    _write_doc(d, doc)
    return d


def tensors_junk(s, t, m):
    d = _copy(s, t)
    (d / TENSORS_NAME).write_bytes(junk(1000))
    return d


def tensors_truncated(s, t, m):
    d = _copy(s, t)
    data = (d / TENSORS_NAME).read_bytes()
    (d / TENSORS_NAME).write_bytes(data[: len(data) // 2])
    return d


def tensors_pickled_npy(s, t, m):
    """A pickle (np.save of an object array) where the safetensors file should be."""
    d = _copy(s, t)
    (d / TENSORS_NAME).write_bytes(pickled_npy(m))
    return d


def tensors_raw_pickle(s, t, m):
    d = _copy(s, t)
    (d / TENSORS_NAME).write_bytes(raw_pickle(m))
    return d


def tensors_from_other_calibrator(s, t, m):
    """Arrays of a calibrator fitted on another dimension: shapes disagree with the JSON."""
    d = _copy(s, t)
    other = t / "other"
    make_calibrator("sn+abtt:2").fit(X[:, :8]).save(other)
    shutil.copy(other / TENSORS_NAME, d / TENSORS_NAME)
    return d


def json_lies_about_shapes(s, t, m):
    """JSON and arrays agree with each other but not with the parameters (n_features_in_ changed)."""
    d = _copy(s, t)
    doc = _doc(d)
    text = json.dumps(doc).replace('"n_features_in_": 16', '"n_features_in_": 4')
    (d / JSON_NAME).write_text(text)
    return d


def nan_in_tensors(s, t, m):
    from safetensors.numpy import load_file, save_file

    d = _copy(s, t)
    tensors = load_file(d / TENSORS_NAME)
    key = sorted(tensors)[0]
    tensors[key] = np.full_like(tensors[key], np.nan)
    save_file(tensors, d / TENSORS_NAME, metadata={"format": "isoscope-calibrator"})
    return d


CASES: list[tuple[str, Tamper]] = [
    (f.__name__, f)
    for f in (
        missing_folder,
        empty_folder,
        a_file,
        json_only,
        json_junk,
        json_not_object,
        wrong_format,
        future_version,
        unknown_class,
        params_injection,
        tensors_junk,
        tensors_truncated,
        tensors_pickled_npy,
        tensors_raw_pickle,
        tensors_from_other_calibrator,
        json_lies_about_shapes,
        nan_in_tensors,
    )
]


def test_intact_folder_loads(saved: Path) -> None:
    cal = load_calibrator(saved)
    ref = make_calibrator("sn+abtt:2").fit(X)
    np.testing.assert_allclose(cal.transform(X), ref.transform(X), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("case", "tamper"), CASES, ids=[c[0] for c in CASES])
def test_load_refuses(saved: Path, case: str, tamper: Tamper, tmp_path: Path) -> None:
    marker = tmp_path / "MARKER"
    folder = tamper(saved, tmp_path, marker)
    try:
        load_calibrator(folder)
    except InputError as exc:
        assert_one_line(str(exc))
    except Exception as exc:
        raise AssertionError(f"{type(exc).__name__} instead of InputError: {exc}") from None
    else:
        raise AssertionError(f"{case}: a tampered calibrator loaded")
    assert not marker.exists(), "a pickle was executed"
