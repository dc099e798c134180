"""Hostile int8 cache: a cached int8 ONNX model cut short (a full disk, a killed copy) or replaced is never
loaded; ``isoscope sts --precision int8`` warns, rebuilds it and gives the same numbers as before."""

from __future__ import annotations

import json
import logging
import os
from collections import OrderedDict
from pathlib import Path

import pytest

from isoscope.encode import quantize
from isoscope.paths import DEMO_PAIRS
from tests.conftest import private_cache


def _sts_int8(cli) -> dict:
    result = cli("sts", "--pairs", str(DEMO_PAIRS), "--precision", "int8", "--no-cache", "--json")
    assert result.code == 0, result.err
    return json.loads(result.out.splitlines()[-1])


def _fresh_process(monkeypatch) -> None:
    """What a new process starts with: no int8 encoder in memory, so the model is read from the cache."""
    monkeypatch.setattr(quantize, "_MEMO", OrderedDict())


def _cut_short(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 3])


def _symlinked(path: Path) -> None:
    target = path.with_name("elsewhere.bin")
    target.write_bytes(path.read_bytes())  # the right bytes behind a link: still refused (only regular files)
    path.unlink()
    os.symlink(target, path)


def _emptied(path: Path) -> None:
    path.write_bytes(b"")


@pytest.mark.parametrize("damage", [_cut_short, _symlinked, _emptied], ids=["truncated", "symlink", "empty"])
def test_a_damaged_int8_model_is_rebuilt_and_gives_the_same_numbers(
    cli, monkeypatch, caplog, damage, tmp_path: Path
) -> None:
    monkeypatch.setenv("ISOSCOPE_CACHE", str(private_cache(tmp_path / "cache")))  # only this test's int8 models
    _fresh_process(monkeypatch)
    before = _sts_int8(cli)
    folder = Path(os.environ["ISOSCOPE_CACHE"]) / "int8"
    models = sorted(folder.glob("*.onnx"))
    assert len(models) == 1, models  # mean pooling: the last-hidden-state export only
    damage(models[0])
    _fresh_process(monkeypatch)
    with caplog.at_level(logging.WARNING, logger="isoscope.encode.onnx_cache"):
        after = _sts_int8(cli)
    assert "damaged" in caplog.text and "rebuilding" in caplog.text
    assert models[0].is_file() and not models[0].is_symlink()
    assert after["spearman"] == before["spearman"] and after["pearson"] == before["pearson"]
    _fresh_process(monkeypatch)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="isoscope.encode.onnx_cache"):
        assert _sts_int8(cli)["spearman"] == before["spearman"]  # the rebuilt copy verifies: no second rebuild
    assert "damaged" not in caplog.text
