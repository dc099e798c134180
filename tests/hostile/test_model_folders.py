"""Issue 51, items 2 to 4, on model folders: files that are not regular files, recipes whose claims are believed
before allocating, and recipes trusted as code. Tiny models saved by sentence-transformers itself
(``tests.tiny_st_models``: the bge shape BERT -> CLS -> Dense 64->32 (tanh) -> Normalize, Sentence-T5's
mean -> Dense 32->16 -> Normalize, its Dense weights 2 kB), then damaged as a hostile user would:

- a FIFO, a link loop or a dangling link among the files the loaders read (``model.safetensors`` as a FIFO hung
  past 120 s): ``isoscope.encode.recipe.check_model_files`` (``isoscope.paths.regular_files``) over the folder
  and every module folder, before anything opens them;
- a Dense config claiming 32 -> 40,000,000 beside 2 kB of weights (allocated past 4 GB), its header lying too, or
  a ``pytorch_model.bin`` too small for the claim: ``isoscope.encode.recipe_check`` against the weights' header and
  bytes (``isoscope.encode.weights``);
- an activation of ``torch.nn.Module``, ``torch.nosuch.Thing`` or ``os.system`` (imported by their dotted path), an
  ``in_features`` that does not chain, an unknown key (``'str' object has no attribute 'detach'``), a T5 class
  named in a BERT config (``'BertConfig' object has no attribute 'd_model'``).

Each is refused by ``isoscope embed`` with exit status 2 and one line naming the file or field, the folder left as
it was and no output written, in a child whose peak memory stays under 1 GiB.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import struct
from collections.abc import Callable
from pathlib import Path

import pytest

from isoscope.encode.models import load_encoder
from isoscope.errors import InputError
from tests.hostile.cli_child import assert_refused, run_cli_child, snapshot
from tests.hostile.conftest import assert_one_line
from tests.hostile.peak import GiB
from tests.tiny_st_models import save_recipe

BIG = 40_000_000  # the Dense width a config claims: 40M x 32 float32 weights would be 5 GB


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("tiny")
    return {kind: save_recipe(kind, root / kind) for kind in ("bge", "t5")}


def _json(path: Path, **changes: object) -> None:
    config = json.loads(path.read_text())
    config.update(changes)
    path.write_text(json.dumps(config))


def _fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def _loop(path: Path) -> None:
    path.unlink()
    path.symlink_to(path.name)  # a link to itself


def _dangling(path: Path) -> None:
    path.unlink()
    path.symlink_to(path.parent / "gone" / path.name)


def _weights_of(folder: Path, shapes: dict[str, list[int]]) -> None:
    """Rewrite a safetensors file's header to claim ``shapes`` (float32), keeping its 2 kB of data."""
    path = folder / "model.safetensors"
    raw = path.read_bytes()
    data = raw[8 + struct.unpack("<Q", raw[:8])[0] :]
    header, at = {}, 0
    for name, shape in shapes.items():
        size = 4 * math.prod(shape)
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [at, at + size]}
        at += size
    blob = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(blob)) + blob + data)


def _in_64(folder: Path) -> None:
    """T5's Dense made 64 -> 16 with weights of that shape: consistent, but the pooling gives 32."""
    import torch
    from safetensors.torch import save_file

    _json(folder / "2_Dense" / "config.json", in_features=64)
    save_file(
        {"linear.weight": torch.zeros(16, 64), "linear.bias": torch.zeros(16)}, folder / "2_Dense" / "model.safetensors"
    )


def _bin_claim(folder: Path) -> None:
    """T5's Dense weights as a pytorch_model.bin (a few kB) under a config claiming 32 -> 40,000,000."""
    import torch
    from safetensors.torch import load_file

    dense = folder / "2_Dense"
    torch.save(load_file(dense / "model.safetensors"), dense / "pytorch_model.bin")
    (dense / "model.safetensors").unlink()
    _json(dense / "config.json", out_features=BIG)


def _header_claim(folder: Path) -> None:
    _json(folder / "2_Dense" / "config.json", out_features=BIG)
    _weights_of(folder / "2_Dense", {"linear.bias": [BIG], "linear.weight": [BIG, 32]})


Make = Callable[[Path], None]
# (case, tiny model, damage, fragments of the one line)
NOT_REGULAR: list[tuple[str, str, Make, tuple[str, ...]]] = [
    ("fifo_weights", "bge", lambda d: _fifo(d / "model.safetensors"), ("model.safetensors", "FIFO")),
    ("loop_weights", "bge", lambda d: _loop(d / "model.safetensors"), ("model.safetensors", "link loop")),
    ("fifo_tokenizer", "bge", lambda d: _fifo(d / "tokenizer.json"), ("tokenizer.json", "FIFO")),
    ("fifo_modules_json", "bge", lambda d: _fifo(d / "modules.json"), ("modules.json", "FIFO")),
    ("fifo_dense_weights", "t5", lambda d: _fifo(d / "2_Dense" / "model.safetensors"), ("2_Dense", "FIFO")),
    ("loop_pooling_config", "bge", lambda d: _loop(d / "1_Pooling" / "config.json"), ("1_Pooling", "link loop")),
    ("dangling_tokenizer_config", "bge", lambda d: _dangling(d / "tokenizer_config.json"), ("tokenizer_config",)),
]
RECIPES: list[tuple[str, str, Make, tuple[str, ...]]] = [
    (
        "activation_torch_nn_module",
        "bge",
        lambda d: _json(d / "2_Dense" / "config.json", activation_function="torch.nn.Module"),
        ("2_Dense/config.json", "activation_function", "torch.nn.Module"),
    ),
    (
        "activation_torch_nosuch",
        "bge",
        lambda d: _json(d / "2_Dense" / "config.json", activation_function="torch.nosuch.Thing"),
        ("torch.nosuch.Thing", "never imported"),
    ),
    (
        "activation_os_system",
        "bge",
        lambda d: _json(d / "2_Dense" / "config.json", activation_function="os.system"),
        ("os.system",),
    ),
    ("in_features_after_pooling", "t5", _in_64, ("2_Dense/config.json", "in_features is 64", "gives 32")),
    (
        "pooling_dimension",
        "t5",
        lambda d: _json(d / "1_Pooling" / "config.json", embedding_dimension=64),
        ("1_Pooling/config.json", "64", "32 dimensions"),
    ),
    (
        "dense_unknown_key",
        "bge",
        lambda d: _json(d / "2_Dense" / "config.json", init_weight="x"),
        ("2_Dense/config.json", "init_weight"),
    ),
    ("pooling_unknown_key", "bge", lambda d: _json(d / "1_Pooling" / "config.json", magic=1), ("'magic'",)),
    (
        "dense_on_token_embeddings",
        "bge",
        lambda d: _json(d / "2_Dense" / "config.json", module_input_name="token_embeddings"),
        ("module_input_name", "token_embeddings"),
    ),
    (
        "t5_class_in_bert_config",
        "bge",
        lambda d: _json(d / "config.json", architectures=["T5EncoderModel"]),
        ("T5EncoderModel", "bert"),
    ),
    (
        "dense_claims_40m_outputs",
        "t5",
        lambda d: _json(d / "2_Dense" / "config.json", out_features=BIG),
        ("2_Dense/model.safetensors", "16 x 32", f"{BIG} x 32"),
    ),
    ("dense_header_claims_40m_too", "t5", _header_claim, ("2_Dense/model.safetensors", "unreadable")),
    ("dense_bin_too_small_for_claim", "t5", _bin_claim, ("pytorch_model.bin", "1,320,000,000 weights")),
]


def _damaged(tiny: dict[str, Path], tmp_path: Path, case: str, base: str, make: Make) -> Path:
    folder = tmp_path / case
    shutil.copytree(tiny[base], folder, symlinks=True)
    make(folder)
    return folder


def test_the_tiny_recipes_load(tiny) -> None:
    """The undamaged folders pass every check (the refusals below are about the damage, not the recipes)."""
    assert load_encoder(str(tiny["bge"]), "cpu").recipe.describe() == "CLS pooling -> Dense 64->32 (tanh) -> normalise"
    assert load_encoder(str(tiny["t5"]), "cpu").recipe.output_dim == 16


@pytest.mark.parametrize(("case", "base", "make", "fragments"), RECIPES, ids=[c[0] for c in RECIPES])
def test_a_damaged_recipe_is_one_input_error(tiny, tmp_path, case, base, make, fragments) -> None:
    folder = _damaged(tiny, tmp_path, case, base, make)
    with pytest.raises(InputError) as info:
        load_encoder(str(folder), "cpu")
    assert_one_line(str(info.value))
    for f in fragments:
        assert f.lower() in str(info.value).lower(), f"{f!r} not in {info.value}"


def test_every_case_is_refused_by_the_cli_in_one_line_under_1_gib(tiny, tmp_path) -> None:
    """Every case through ``isoscope embed`` in one child process: exit 2, one line naming the file or field, the
    folder as it was (FIFOs still FIFOs, nothing opened or rewritten), no vectors written, peak under 1 GiB."""
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("a man plays the guitar\ntwo dogs run\n")
    cases = NOT_REGULAR + RECIPES
    folders = [_damaged(tiny, tmp_path, case, base, make) for case, base, make, _ in cases]
    before = [snapshot(f) for f in folders]
    argvs = [
        ["embed", "--model", str(f), "--input", str(corpus), "--out", str(tmp_path / f"{f.name}.npy"), "--quiet"]
        for f in folders
    ]
    run = run_cli_child(argvs, tmp_path, timeout=240)  # a FIFO read would hang: the timeout fails the test
    for (case, _, _, fragments), folder, result, was in zip(cases, folders, run.results, before, strict=True):
        assert_refused(result, *fragments)
        assert snapshot(folder) == was, case
        assert not (tmp_path / f"{folder.name}.npy").exists(), case
    assert run.peak < GiB, f"peak {run.peak / 2**20:.0f} MiB"
