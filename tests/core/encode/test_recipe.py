"""isoscope.encode.recipe: a sentence-transformers folder's recipe, read from its files and run with
sentence-transformers' own modules; the refusals (a model's own code) in one line each."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from isoscope.encode.recipe import card_digest, load_recipe, prompt_length, read_card, resolve_prompt
from isoscope.errors import InputError
from tests.tiny_st_models import PROMPTS, save_recipe

TEXTS = ["A man plays the guitar.", "Two dogs run through a field of yellow flowers.", "Hi", "The quick brown fox."]


@pytest.fixture(scope="module")
def recipes(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("recipes")
    return {kind: save_recipe(kind, root / kind) for kind in ("bge", "prompted", "t5")}


def test_the_card_lists_the_modules_prompts_and_similarity(recipes) -> None:
    card = read_card(recipes["bge"])
    assert [m.kind for m in card.modules] == ["Transformer", "Pooling", "Dense", "Normalize"]
    assert card.transformer_path == "" and card.similarity_fn_name == "cosine"
    assert read_card(recipes["prompted"]).prompts == PROMPTS
    assert read_card(recipes["bge"] / "2_Dense") is None  # no modules.json: not a recipe


def test_the_head_is_described_and_sized(recipes) -> None:
    bge = load_recipe(str(recipes["bge"]), read_card(recipes["bge"]), local_files_only=True)
    assert bge.describe() == "CLS pooling -> Dense 64->32 (tanh) -> normalise" and bge.output_dim == 32
    t5 = load_recipe(str(recipes["t5"]), read_card(recipes["t5"]), local_files_only=True)
    assert t5.describe() == "mean pooling -> Dense 32->16 -> normalise" and t5.output_dim == 16


def test_apply_normalises_what_the_dense_layer_projects(recipes) -> None:
    bge = load_recipe(str(recipes["bge"]), read_card(recipes["bge"]), local_files_only=True)
    hidden = torch.randn(3, 5, 64, generator=torch.Generator().manual_seed(0))  # (b, t, d)
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 0, 0, 0, 0]])
    out = bge.apply(hidden, mask).numpy()  # (3, 32)
    dense = bge.modules[1]
    expected = torch.tanh(dense.linear(hidden[:, 0])).numpy()  # CLS, projected, before normalising
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    np.testing.assert_allclose(out, expected, atol=1e-6)  # float32 of unit vectors: a few ulps


def _edit_modules(folder: Path, tmp_path: Path, change) -> Path:
    copy = tmp_path / folder.name
    shutil.copytree(folder, copy)
    modules = json.loads((copy / "modules.json").read_text())
    change(modules)
    (copy / "modules.json").write_text(json.dumps(modules))
    return copy


def test_a_module_of_the_models_own_code_is_refused_by_name(recipes, tmp_path) -> None:
    def custom(modules):
        modules[1]["type"] = "modeling_custom.MagicPooling"

    with pytest.raises(InputError, match=r"module 1 of modules.json is 'modeling_custom.MagicPooling'.*openai:NAME"):
        read_card(_edit_modules(recipes["bge"], tmp_path, custom))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda m: m.__setitem__(0, {**m[0], "type": "sentence_transformers.models.Pooling"}), "starts with Pooling"),
        (lambda m: m.__setitem__(1, {**m[1], "path": "../elsewhere"}), "outside the folder"),
        (lambda m: m.__setitem__(2, {"idx": 2}), "names no module type"),
    ],
)
def test_a_malformed_module_list_is_one_line(recipes, tmp_path, change, message) -> None:
    with pytest.raises(InputError, match=message) as info:
        read_card(_edit_modules(recipes["bge"], tmp_path, change))
    assert "\n" not in str(info.value)


def test_prompts_resolve_by_name_text_or_default(recipes) -> None:
    card = read_card(recipes["prompted"])
    assert resolve_prompt(card, "query") == "query: " and resolve_prompt(card, text="my own: ") == "my own: "
    assert resolve_prompt(card) == ""  # no default_prompt_name: no prompt
    with pytest.raises(InputError, match="has prompts: document, query"):
        resolve_prompt(card, "passage", model="tiny")
    with pytest.raises(InputError, match="has prompts: none"):
        resolve_prompt(None, "query")


def test_prompt_length_leaves_out_the_trailing_special_token(recipes) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(recipes["prompted"])
    ids = tokenizer(["query: "])["input_ids"][0]  # [CLS] query : [SEP]
    assert prompt_length(tokenizer, "query: ") == len(ids) - 1 and prompt_length(tokenizer, "") == 0


def test_the_digest_follows_the_dense_weights(recipes, tmp_path) -> None:
    copy = tmp_path / "bge"
    shutil.copytree(recipes["bge"], copy)
    before = card_digest(copy, read_card(copy))
    (copy / "2_Dense" / "config.json").write_text(
        (copy / "2_Dense" / "config.json").read_text().replace('"bias": true', '"bias": false')
    )
    assert card_digest(copy, read_card(copy)) != before
