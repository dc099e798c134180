"""--device and --dtype on the command line: every command that embeds takes them, results say what ran, a device this
machine lacks is one line with the InputError exit status."""

from __future__ import annotations

import argparse
import importlib
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from isoscope.cli import COMMANDS
from isoscope.encode.device import DTYPES
from isoscope.encode.embed import encode
from tests.core.commands.cli_checks import exit_status, one_error_line

TEXTS = ["The first text.", "A second, longer text about something else entirely.", "Third"]
NOT_EMBEDDING = {"app", "params", "data"}  # the dashboard (its sidebar picks the device), a parameter count, a download
EMBEDDING = sorted(set(COMMANDS) - NOT_EMBEDDING)


def _corpus(tmp_path: Path) -> Path:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(TEXTS) + "\n")
    return corpus


def _parser(name: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=name)
    importlib.import_module(COMMANDS[name][0]).add_arguments(p)
    return p


@pytest.mark.parametrize("name", EMBEDDING)
def test_every_embedding_command_takes_device_and_dtype(name):
    p = _parser(name)
    options = {o for action in p._actions for o in action.option_strings}
    assert {"--device", "--dtype"} <= options, name
    device = next(a for a in p._actions if "--device" in a.option_strings)
    dtype = next(a for a in p._actions if "--dtype" in a.option_strings)
    assert device.default == "auto" and device.type("CUDA:1") == "cuda:1" and device.type("cpu") == "cpu"
    with pytest.raises(argparse.ArgumentTypeError):
        device.type("gpu")
    assert tuple(dtype.choices) == DTYPES and dtype.default == "float32"
    assert "--device DEVICE" in p.format_help()  # the help texts format (no stray % in them)


def test_embed_json_says_device_and_dtype(cli, encoder, tmp_path, capsys):
    out = tmp_path / "x.npy"
    argv = ["embed", "--input", str(_corpus(tmp_path)), "--out", str(out), "--device", "cpu", "--json", "--quiet"]
    assert cli(argv) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["device"] == "cpu" and result["dtype"] == "float32"
    np.testing.assert_allclose(np.load(out), encode(encoder, TEXTS), atol=1e-6)


def test_embed_bfloat16_on_the_cpu(cli, tmp_path, capsys):
    out = tmp_path / "x.npy"
    argv = ["embed", "--input", str(_corpus(tmp_path)), "--out", str(out), "--dtype", "bfloat16", "--json", "--quiet"]
    assert cli([*argv, "--device", "cpu", "--no-cache"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["device"] == "cpu" and result["dtype"] == "bfloat16"
    vectors = np.load(out)
    assert vectors.dtype == np.float32 and vectors.shape == (3, 384)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA GPU: cuda is not refused here")
@pytest.mark.parametrize("command", ["embed", "geometry"])
def test_cuda_without_one_is_one_line_with_the_input_error_status(cli, tmp_path, capsys, command):
    source = str(_corpus(tmp_path))
    extra = ["--out", str(tmp_path / "x.npy")] if command == "embed" else []
    assert exit_status(cli, [command, "--input", source, *extra, "--device", "cuda", "--quiet"]) == 2
    line = one_error_line(capsys)
    assert "device cuda" in line and "--device cpu" in line


def test_float16_on_the_cpu_is_one_line(cli, tmp_path, capsys):
    argv = ["embed", "--input", str(_corpus(tmp_path)), "--out", str(tmp_path / "x.npy"), "--quiet"]
    assert exit_status(cli, [*argv, "--device", "cpu", "--dtype", "float16"]) == 2
    assert "--dtype bfloat16" in one_error_line(capsys)


def test_a_bad_device_is_a_usage_error(cli, tmp_path, capsys):
    argv = ["embed", "--input", str(_corpus(tmp_path)), "--out", str(tmp_path / "x.npy"), "--device", "gpu"]
    assert exit_status(cli, argv) == 2
    assert "cuda:N" in capsys.readouterr().err


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA GPU: cuda is not refused here")
def test_landscape_resolves_its_device_as_embedding_does(cli, tmp_path, capsys):
    """The loss surfaces train on the GPU when there is one: a missing one is refused by the shared device
    resolution, in the words embedding uses, before any task or model loads."""
    assert exit_status(cli, ["landscape", "--task", "demo-topic", "--device", "cuda:0"]) == 2
    line = one_error_line(capsys)
    assert "device cuda:0" in line and "--device cpu" in line and "landscape" not in line
    embed = ["embed", "--input", str(_corpus(tmp_path)), "--out", str(tmp_path / "x.npy"), "--quiet"]
    assert exit_status(cli, [*embed, "--device", "cuda:0"]) == 2
    assert one_error_line(capsys) == line


def test_landscape_trains_in_float32_only(cli, capsys):
    assert exit_status(cli, ["landscape", "--task", "demo-topic", "--device", "cpu", "--dtype", "bfloat16"]) == 2
    assert "float32 only" in one_error_line(capsys)
