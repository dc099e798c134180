"""isoscope.encode.recipe_check: the allowlists match what sentence-transformers writes, and a recipe's dimensions
chain from every version's Pooling config (the hostile cases are in tests/hostile/test_model_folders.py)."""

from __future__ import annotations

import pytest
import torch

from isoscope.encode.models import default_model_path
from isoscope.encode.recipe import module_configs, read_card
from isoscope.encode.recipe_check import ACTIVATIONS, ALLOWED_KEYS, DENSE, POOLING, activation_name, check_recipe
from isoscope.errors import InputError


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_every_allowed_activation_is_read_as_sentence_transformers_saves_it(name: str) -> None:
    """A Dense saves ``fullname(activation)`` (``torch.nn.modules.activation.Tanh``): each allowed name, in that
    spelling and as ``torch.nn.NAME``, is read back as the class of that name."""
    from sentence_transformers.util import fullname

    saved = fullname(getattr(torch.nn, name)())
    assert activation_name(saved, "x") == name and activation_name(f"torch.nn.{name}", "x") == name


@pytest.mark.parametrize(
    "value", ["torch.nn.Module", "torch.nosuch.Thing", "os.system", "torch.nn.modules.activation.Softmax", 3, None]
)
def test_anything_else_is_refused_without_being_imported(value) -> None:
    with pytest.raises(InputError, match="activation_function"):
        activation_name(value, "x/2_Dense/config.json")


def test_the_allowed_keys_are_what_the_installed_sentence_transformers_writes() -> None:
    from tests.tiny_st_models import _st

    _, models = _st()
    dense = models.Dense(4, 2).get_config_dict()
    pooling = models.Pooling(4, "mean").get_config_dict()
    assert set(dense) <= ALLOWED_KEYS[DENSE] and set(pooling) <= ALLOWED_KEYS[POOLING]


def test_a_pooling_config_of_sentence_transformers_2_chains(tmp_path) -> None:
    """The embedded all-MiniLM-L6-v2 was saved by sentence-transformers 2.0 (``word_embedding_dimension`` and
    one flag per mode): mean pooling of 384 dimensions, then Normalize."""
    card = read_card(default_model_path())
    plan = check_recipe(card, module_configs(card), hidden=384)
    assert [(m.ref.kind, m.in_dim, m.out_dim) for m in plan.modules] == [("Pooling", 384, 384), ("Normalize", 384, 384)]
    with pytest.raises(InputError, match="384 but the transformer's token vectors have 768"):
        check_recipe(card, module_configs(card), hidden=768)


def test_pooling_modes_are_read_as_sentence_transformers_6_reads_them() -> None:
    from isoscope.encode.recipe_check import _modes

    assert _modes({"pooling_mode": ["cls", "max"]}, "x") == ("cls", "max")
    assert _modes({"pooling_mode_cls_token": True, "pooling_mode_mean_tokens": True}, "x") == ("cls", "mean")
    assert _modes({}, "x") == ("mean",)
    with pytest.raises(InputError, match="pooling_mode must be"):
        _modes({"pooling_mode": "median"}, "x")
    with pytest.raises(InputError, match="must be true or false"):
        _modes({"pooling_mode_cls_token": "yes"}, "x")
