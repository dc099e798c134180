"""isoscope.encode.onnx_cache: cached ONNX models are verified on every read (size and SHA-256 in a sidecar written
after the model), only regular files are opened, and anything damaged is rebuilt with a warning."""

from __future__ import annotations

import json
import logging
import os

import pytest

from isoscope.encode import onnx_cache

MODEL = b"\x08\x07" + bytes(range(256)) * 40  # any bytes: the cache never parses them


class Builds:
    """A build function that counts its calls and checks that no sidecar vouches for the model while it builds."""

    def __init__(self, folder, key: str, data: bytes = MODEL) -> None:
        self.model, self.side = onnx_cache.paths(folder, key)
        self.data, self.calls = data, 0

    def __call__(self, path) -> None:
        assert not self.side.exists(), "a sidecar exists while its model is being built"
        self.calls += 1
        path.write_bytes(self.data)


@pytest.fixture()
def cached(tmp_path):
    build = Builds(tmp_path, "k")
    assert onnx_cache.model_bytes(tmp_path, "k", build) == MODEL
    return tmp_path, build


def test_built_once_then_read_and_verified(cached) -> None:
    folder, build = cached
    assert onnx_cache.model_bytes(folder, "k", build) == MODEL and build.calls == 1
    meta = json.loads(build.side.read_text())
    assert meta["size"] == len(MODEL) and len(meta["sha256"]) == 64
    assert sorted(p.name for p in folder.iterdir()) == ["k.json", "k.onnx"]  # no temporary build left


def _truncate(path) -> None:
    path.write_bytes(path.read_bytes()[: len(MODEL) // 2])


def _flip_a_byte(path) -> None:
    data = bytearray(path.read_bytes())
    data[100] ^= 0xFF
    path.write_bytes(bytes(data))


def _grow(path) -> None:
    path.write_bytes(path.read_bytes() + b"junk")


def _no_sidecar(path) -> None:
    path.with_suffix(".json").unlink()


def _bad_sidecar(path) -> None:
    path.with_suffix(".json").write_bytes(b"\xff{not json")


def _huge_sidecar(path) -> None:
    path.with_suffix(".json").write_bytes(b" " * 100_000)


def _model_gone(path) -> None:
    path.unlink()


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (_truncate, "cut short"),
        (_flip_a_byte, "SHA-256"),
        (_grow, "more than"),
        (_no_sidecar, "missing"),
        (_bad_sidecar, "sidecar"),
        (_huge_sidecar, "more than"),
        (_model_gone, "missing"),
    ],
)
def test_damaged_models_are_rebuilt_with_a_warning(cached, damage, reason: str, caplog) -> None:
    folder, build = cached
    damage(build.model)
    with caplog.at_level(logging.WARNING, logger="isoscope.encode.onnx_cache"):
        assert onnx_cache.model_bytes(folder, "k", build) == MODEL
    assert build.calls == 2
    assert "damaged" in caplog.text and reason in caplog.text
    assert onnx_cache.read_verified(folder, "k") == MODEL  # the rebuilt copy verifies


def test_a_symlink_is_never_followed(cached, tmp_path_factory, caplog) -> None:
    folder, build = cached
    elsewhere = tmp_path_factory.mktemp("elsewhere") / "target.onnx"
    elsewhere.write_bytes(MODEL)  # the right bytes, behind a link
    build.model.unlink()
    os.symlink(elsewhere, build.model)
    with pytest.raises(onnx_cache.DamagedModel, match="regular file"):
        onnx_cache.read_verified(folder, "k")
    with caplog.at_level(logging.WARNING, logger="isoscope.encode.onnx_cache"):
        assert onnx_cache.model_bytes(folder, "k", build) == MODEL
    assert build.calls == 2 and not build.model.is_symlink()  # replaced by a regular file
    assert elsewhere.read_bytes() == MODEL  # the link's target untouched


def test_a_fifo_is_never_read(cached) -> None:
    folder, build = cached
    build.model.unlink()
    os.mkfifo(build.model)  # opening it for reading would block forever
    with pytest.raises(onnx_cache.DamagedModel):
        onnx_cache.read_verified(folder, "k")  # opened without waiting for a writer, then refused by fstat


def test_a_folder_under_the_name_is_an_error_that_says_so(cached) -> None:
    folder, build = cached
    build.model.unlink()
    build.model.mkdir()
    with pytest.raises(IsADirectoryError, match="remove it"):
        onnx_cache.model_bytes(folder, "k", build)
    assert build.model.is_dir()  # never deleted
