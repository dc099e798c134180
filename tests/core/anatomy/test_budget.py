"""Parameter budget: counts equal the real transformers modules, the group split, presets, CLI."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
import torch
from transformers import (
    BertConfig,
    BertForMaskedLM,
    BertModel,
    RemBertConfig,
    RemBertForMaskedLM,
    RemBertModel,
    XLMRobertaConfig,
    XLMRobertaForMaskedLM,
    XLMRobertaModel,
)

from isoscope.anatomy.budget import (
    PRESET_NAMES,
    PRESETS,
    Architecture,
    architecture_from_config,
    architecture_from_model,
    get_preset,
    parameter_budget,
)
from isoscope.cli import main
from isoscope.errors import InputError
from tests.core.commands.cli_checks import one_error_line

TINY = {"vocab_size": 97, "hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 24}


def numel(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())  # shared (tied) parameters once


def group_numel(model: torch.nn.Module) -> dict[str, int]:
    """Real parameter counts by our groups, from module names (independent of isoscope.anatomy.budget).

    A tied output embedding is the input table: it counts once, as input embedding, whichever of its names
    (``...embeddings.word_embeddings.weight`` or ``lm_head.decoder.weight``) a transformers version lists.
    """
    out = {"input_embedding": 0, "transformer": 0, "output_embedding": 0}
    inputs = {
        id(p)
        for name, p in model.named_parameters(remove_duplicate=False)
        if ".embeddings." in f".{name}" or "embedding_hidden_mapping_in" in name
    }
    for name, p in model.named_parameters():  # each tensor once
        if id(p) in inputs:
            out["input_embedding"] += p.numel()
        elif name.startswith(("cls.", "lm_head.")):
            out["output_embedding"] += p.numel()
        else:
            out["transformer"] += p.numel()
    return out


def budget_groups(model: torch.nn.Module) -> dict[str, int]:
    b = parameter_budget(architecture_from_model(model))
    return {"input_embedding": b.input_embedding, "transformer": b.transformer, "output_embedding": b.output_embedding}


# ------------------------------------------------------------------ the real model


def test_loaded_model_count_equals_modules(encoder) -> None:
    budget = parameter_budget(architecture_from_model(encoder.model))
    assert budget.finetuning_total == numel(encoder.model) == 22_713_216
    assert budget.input_embedding == sum(p.numel() for p in encoder.model.embeddings.parameters())
    assert budget.transformer == numel(encoder.model.encoder) + numel(encoder.model.pooler)


def test_loaded_model_pretraining_equals_masked_lm_with_pooler(encoder) -> None:
    """The pre-training budget of the loaded BertModel = BertForMaskedLM of its config + the pooler."""
    budget = parameter_budget(architecture_from_model(encoder.model))
    with torch.device("meta"):
        mlm = BertForMaskedLM(encoder.model.config)
    pooler = encoder.model.config.hidden_size * (encoder.model.config.hidden_size + 1)
    assert budget.pretraining_total == numel(mlm) + pooler


# ------------------------------------------------------------------ tiny configs, tied and untied


@pytest.mark.parametrize("tied", [True, False])
def test_tiny_bert_masked_lm(tied: bool) -> None:
    torch.manual_seed(0)
    mlm = BertForMaskedLM(BertConfig(**TINY, max_position_embeddings=40, tie_word_embeddings=tied))
    arch = architecture_from_model(mlm)
    assert arch.tied is tied and arch.pooler is False
    budget = parameter_budget(arch)
    assert budget.pretraining_total == numel(mlm)
    assert budget_groups(mlm) == group_numel(mlm)
    assert budget.finetuning_total == numel(mlm.bert)
    decoder = mlm.cls.predictions.decoder
    own_bias = decoder.bias is not None and decoder.bias is not mlm.cls.predictions.bias  # transformers 5, untied
    untied_extra = 0 if tied else TINY["vocab_size"] * TINY["hidden_size"] + (97 if own_bias else 0)
    assert budget.output_embedding == 16 * 16 + 16 + 2 * 16 + 97 + untied_extra


def test_tiny_bert_model_with_pooler() -> None:
    model = BertModel(BertConfig(**TINY, type_vocab_size=3))
    budget = parameter_budget(architecture_from_model(model))
    assert budget.finetuning_total == numel(model)
    assert budget.components["pooler"] == ("transformer", 16 * 16 + 16)
    assert budget.components["token_type_embeddings"] == ("input_embedding", 3 * 16)


@pytest.mark.parametrize("tied", [True, False])
def test_tiny_xlm_roberta(tied: bool) -> None:
    cfg = XLMRobertaConfig(**TINY, max_position_embeddings=34, type_vocab_size=1, tie_word_embeddings=tied)
    mlm = XLMRobertaForMaskedLM(cfg)
    budget = parameter_budget(architecture_from_model(mlm))
    assert budget.pretraining_total == numel(mlm)
    assert budget_groups(mlm) == group_numel(mlm)
    assert budget.finetuning_total == numel(XLMRobertaModel(cfg, add_pooling_layer=False))


@pytest.mark.parametrize(("e_in", "e_out"), [(8, 24), (24, 8), (16, 16), (8, 8)])
def test_tiny_rembert_decoupled(e_in: int, e_out: int) -> None:
    """RemBERT is always untied in transformers (its config forces tie_word_embeddings=False)."""
    cfg = RemBertConfig(**TINY, input_embedding_size=e_in, output_embedding_size=e_out, max_position_embeddings=32)
    mlm = RemBertForMaskedLM(cfg)
    arch = architecture_from_model(mlm)
    assert (arch.e_in, arch.e_out, arch.tied) == (e_in, e_out, False)
    budget = parameter_budget(arch)
    assert budget.pretraining_total == numel(mlm)
    assert budget_groups(mlm) == group_numel(mlm)
    assert budget.components["embedding_projection"] == ("input_embedding", e_in * 16 + 16)  # even when e_in == H
    base = RemBertModel(cfg)  # with pooler: the fine-tuning model
    assert parameter_budget(architecture_from_model(base)).finetuning_total == numel(base)


def test_rembert_input_projection_is_in_input_embedding_group() -> None:
    b = parameter_budget(Architecture(100, 32, 1, 64, tied=False, input_embedding_size=8, output_embedding_size=48))
    assert b.input_embedding == 100 * 8 + 512 * 8 + 2 * 8 + 2 * 8 + (8 * 32 + 32)
    assert b.output_embedding == (32 * 48 + 48) + 2 * 48 + 48 * 100 + 100
    assert b.pretraining_total == b.input_embedding + b.transformer + b.output_embedding
    assert b.finetuning_total == b.input_embedding + b.transformer


# ------------------------------------------------------------------ presets


@pytest.mark.parametrize("name", PRESET_NAMES)
def test_presets_equal_full_size_modules_on_meta(name: str) -> None:
    """Every preset, instantiated at full size on the meta device (no memory), counts exactly."""
    arch = PRESETS[name]
    common = {
        "vocab_size": arch.vocab_size,
        "hidden_size": arch.hidden_size,
        "num_hidden_layers": arch.num_layers,
        "num_attention_heads": arch.num_attention_heads,
        "intermediate_size": arch.intermediate_size,
        "max_position_embeddings": arch.max_position_embeddings,
        "type_vocab_size": arch.type_vocab_size,
    }
    with torch.device("meta"):
        if name == "rembert":
            cfg = RemBertConfig(**common, input_embedding_size=256, output_embedding_size=1664)
            base, mlm = RemBertModel(cfg), RemBertForMaskedLM(cfg)
        elif name.startswith("xlm"):
            cfg = XLMRobertaConfig(**common)
            base, mlm = XLMRobertaModel(cfg), XLMRobertaForMaskedLM(cfg)
        else:
            cfg = BertConfig(**common)
            base, mlm = BertModel(cfg), BertForMaskedLM(cfg)
    budget = parameter_budget(arch)
    assert budget.finetuning_total == numel(base)
    pooler = arch.hidden_size * (arch.hidden_size + 1)
    assert budget.pretraining_total == numel(mlm) + pooler  # the MLM model has no pooler
    assert architecture_from_config(cfg, name=name) == arch


def test_preset_known_totals_and_shares() -> None:
    bert = parameter_budget(PRESETS["bert-base-uncased"])
    assert bert.finetuning_total == 109_482_240
    xlmr = parameter_budget(PRESETS["xlm-roberta-base"])
    assert xlmr.finetuning_total == 278_043_648
    assert xlmr.embedding_share_finetuning > 0.65 > bert.embedding_share_finetuning
    rembert = parameter_budget(PRESETS["rembert"])
    assert rembert.finetuning_total == 575_920_384
    # the large output embedding is dropped for fine-tuning: the share falls from ~49% to ~11%
    assert rembert.embedding_share_pretraining > 0.45
    assert rembert.embedding_share_finetuning < 0.12


def test_get_preset_unknown_lists_names() -> None:
    with pytest.raises(InputError, match="bert-base-uncased, bert-large-uncased"):
        get_preset("gpt-17")
    assert get_preset("google/RemBERT") is PRESETS["rembert"]


def test_bad_architecture() -> None:
    with pytest.raises(InputError, match="vocab_size must be a positive"):
        parameter_budget(Architecture(0, 8, 1, 8))
    with pytest.raises(InputError, match="tied output embedding"):
        parameter_budget(Architecture(10, 8, 1, 8, tied=True, output_embedding_size=12))
    with pytest.raises(InputError, match="BERT-style"):
        from transformers import T5Config

        architecture_from_config(T5Config())


def test_biases_and_layer_norm_switches() -> None:
    a = Architecture(50, 8, 2, 12, max_position_embeddings=10)
    full = parameter_budget(a).pretraining_total
    no_bias = parameter_budget(replace(a, biases=False)).pretraining_total
    # per layer 4 x 8 + 12 + 8 biases, pooler 8, MLM transform 8, output bias 50
    assert full - no_bias == 2 * (4 * 8 + 12 + 8) + 8 + 8 + 50
    no_ln = parameter_budget(replace(a, layer_norms=False)).pretraining_total
    assert full - no_ln == 2 * 8 + 2 * (2 * 2 * 8) + 2 * 8  # embeddings, 2 per layer, MLM transform


# ------------------------------------------------------------------ CLI


def test_cli_preset_json(capsys) -> None:
    assert main(["params", "--preset", "xlm-roberta-base", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["name"] == "xlm-roberta-base"
    assert out["finetuning_total"] == 278_043_648
    assert out["embedding_share_finetuning"] == pytest.approx(192_398_592 / 278_043_648)
    assert sum(c["params"] for c in out["components"].values()) == out["pretraining_total"]


def test_cli_all_presets(capsys) -> None:
    assert main(["params", "--preset", "all", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in out["presets"]] == list(PRESET_NAMES)


def test_cli_explicit_sizes_match_module(capsys) -> None:
    argv = ["params", "--vocab-size", "97", "--hidden-size", "16", "--layers", "2", "--intermediate-size", "24"]
    argv += ["--untied", "--input-embedding-size", "8", "--output-embedding-size", "24", "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    cfg = RemBertConfig(**TINY, input_embedding_size=8, output_embedding_size=24, tie_word_embeddings=False)
    assert out["pretraining_total"] == numel(RemBertForMaskedLM(cfg)) + 16 * 17
    assert out["finetuning_total"] == numel(RemBertModel(cfg))


def test_cli_loaded_model(capsys) -> None:
    assert main(["params", "--model", "default", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["finetuning_total"] == 22_713_216


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--preset", "nope"], "unknown preset 'nope'; choose one of bert-base-uncased"),
        ([], "give exactly one of"),
        (["--vocab-size", "10", "--hidden-size", "8"], "need --layers, --intermediate-size"),
        (["--preset", "rembert", "--vocab-size", "10"], "give exactly one of"),
        (["--vocab-size", "0", "--hidden-size", "8", "--layers", "1", "--intermediate-size", "4"], "vocab_size"),
    ],
)
def test_cli_bad_input_exit_2_one_line(capsys, argv: list[str], message: str) -> None:
    assert main(["params", *argv, "--json"]) == 2
    assert message in one_error_line(capsys)
