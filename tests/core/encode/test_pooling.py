"""Pooling: option parsing and the math of every mode on hand-made hidden states with padding."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch

from isoscope.encode.pooling import (
    ENCODER_POOLING_MODES,
    POOLING_MODES,
    T5_POOLING_MODES,
    PoolingSpec,
    canonical_pooling,
    default_pooling,
    layer_names,
    layer_pooling,
    masked_max,
    masked_mean,
    parse_pooling,
    pool,
    pooling_choices,
    resolve_pooling,
    valid_pooling_modes,
)
from isoscope.errors import InputError


@dataclass(frozen=True)
class PoolingModelStub:
    """What deciding a pooling reads of a model (``isoscope.encode.pooling.PoolingModel``): no weights needed."""

    num_layers: int
    is_encoder_decoder: bool


# ---------------------------------------------------------------- parsing, checking, the default

MODEL_6 = PoolingModelStub(num_layers=6, is_encoder_decoder=False)
T5_2 = PoolingModelStub(num_layers=2, is_encoder_decoder=True)


@pytest.mark.parametrize("mode", ENCODER_POOLING_MODES)
def test_parse_encoder_modes(mode: str) -> None:
    spec = parse_pooling(mode)
    assert spec == PoolingSpec(mode) == spec.check(6)
    assert spec.name == str(spec) == mode


def test_parse_strips_whitespace() -> None:
    assert parse_pooling("  mean ") == PoolingSpec("mean")


@pytest.mark.parametrize("k", [0, 1, 6])
def test_parse_layer_in_bounds(k: int) -> None:
    spec = parse_pooling(f"layer:{k}").check(6)
    assert (spec.kind, spec.layer, spec.name) == ("layer", k, f"layer:{k}")
    assert spec == layer_pooling(k) and spec.needs_hidden_states


@pytest.mark.parametrize("mode", ["layer:-1", "layer:x", "layer:", "layer:1.5"])
def test_parse_layer_malformed(mode: str) -> None:
    with pytest.raises(InputError, match="layer") as info:
        parse_pooling(mode)
    assert "\n" not in str(info.value)


def test_a_layer_the_model_lacks_is_refused_once_the_model_is_known() -> None:
    spec = parse_pooling("layer:7")  # the syntax is fine: a 12-layer model has it
    with pytest.raises(InputError, match="between 0 and 6"):
        spec.check(6)
    with pytest.raises(InputError, match="between 0 and 6"):
        resolve_pooling("layer:7", MODEL_6)


def test_parse_unknown_lists_every_choice() -> None:
    with pytest.raises(InputError) as info:
        parse_pooling("avg")
    msg = str(info.value)
    assert "avg" in msg
    for mode in POOLING_MODES:
        assert mode in msg
    assert "layer:K" in msg


@pytest.mark.parametrize("mode", T5_POOLING_MODES)
def test_t5_modes_refused_for_encoder_only(mode: str) -> None:
    with pytest.raises(InputError, match="encoder-decoder"):
        parse_pooling(mode).check(6, is_encoder_decoder=False)


@pytest.mark.parametrize("mode", [m for m in POOLING_MODES if m != "model"])
def test_every_mode_accepted_for_encoder_decoder(mode: str) -> None:
    assert resolve_pooling(mode, T5_2).name == mode


def test_the_default_is_decided_in_one_place() -> None:
    assert resolve_pooling(None, MODEL_6) == default_pooling(MODEL_6) == PoolingSpec("mean")
    assert resolve_pooling(None, T5_2) == default_pooling(T5_2) == PoolingSpec("enc_mean")
    assert resolve_pooling(PoolingSpec("cls"), MODEL_6) == PoolingSpec("cls")  # a spec is not parsed again


def test_layer_names_are_formatted_in_one_place() -> None:
    assert layer_names(2) == ["layer:0", "layer:1", "layer:2"] == [layer_pooling(k).name for k in range(3)]


def test_valid_pooling_modes() -> None:
    assert valid_pooling_modes(False) == ENCODER_POOLING_MODES
    assert set(valid_pooling_modes(True)) == set(ENCODER_POOLING_MODES) | set(T5_POOLING_MODES)
    assert not set(valid_pooling_modes(False)) & set(T5_POOLING_MODES)


def test_spec_flags() -> None:
    assert parse_pooling("last2avg").needs_hidden_states
    assert parse_pooling("first_last_avg").needs_hidden_states
    assert not parse_pooling("mean").needs_hidden_states
    assert parse_pooling("encdec_first").needs_decoder
    assert not parse_pooling("enc_first").needs_decoder


# ---------------------------------------------------------------- math

PAD = 1000.0  # huge values in padded positions: any pooling that reads them is visibly wrong


@pytest.fixture()
def batch() -> tuple[torch.Tensor, torch.Tensor]:
    """Two sequences of 4 positions, d = 2; the second has 2 real tokens then 2 pads."""
    hidden = torch.tensor(
        [
            [[1.0, -2.0], [3.0, 0.0], [5.0, 2.0], [-1.0, 4.0]],
            [[2.0, 6.0], [4.0, -8.0], [PAD, PAD], [PAD, -PAD]],
        ]
    )  # (2, 4, 2)
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]])  # (2, 4)
    return hidden, mask


@pytest.fixture()
def hidden_states(batch) -> tuple[torch.Tensor, ...]:
    """Four 'layers' (embeddings + 3): layer i = last layer * (i + 1) / 4 plus i, so each layer differs."""
    last, _ = batch
    return tuple(last * (i + 1) / 4 + i for i in range(4))


def test_mean_ignores_pads(batch) -> None:
    hidden, mask = batch
    out = pool(PoolingSpec("mean"), hidden, mask)
    expected = torch.tensor([[2.0, 1.0], [3.0, -1.0]])  # row 2: mean of the 2 real tokens only
    torch.testing.assert_close(out, expected)
    torch.testing.assert_close(masked_mean(hidden, mask), expected)


def test_max_ignores_pads(batch) -> None:
    hidden, mask = batch
    expected = torch.tensor([[5.0, 4.0], [4.0, 6.0]])
    torch.testing.assert_close(pool(PoolingSpec("max"), hidden, mask), expected)
    torch.testing.assert_close(masked_max(hidden, mask), expected)


def test_max_of_negative_values_with_pads_of_zero() -> None:
    hidden = torch.tensor([[[-3.0], [-2.0], [0.0]]])  # (1, 3, 1); the pad holds 0, above every real value
    mask = torch.tensor([[1, 1, 0]])
    torch.testing.assert_close(masked_max(hidden, mask), torch.tensor([[-2.0]]))


def test_cls_is_first_token(batch) -> None:
    hidden, mask = batch
    torch.testing.assert_close(pool(PoolingSpec("cls"), hidden, mask), torch.tensor([[1.0, -2.0], [2.0, 6.0]]))


def test_enc_first_and_enc_mean_match_cls_and_mean(batch) -> None:
    hidden, mask = batch
    torch.testing.assert_close(pool(PoolingSpec("enc_first"), hidden, mask), hidden[:, 0])
    torch.testing.assert_close(pool(PoolingSpec("enc_mean"), hidden, mask), pool(PoolingSpec("mean"), hidden, mask))


def test_last2avg(batch, hidden_states) -> None:
    _, mask = batch
    out = pool(PoolingSpec("last2avg"), hidden_states[-1], mask, hidden_states=hidden_states)
    avg = (hidden_states[3] + hidden_states[2]) / 2
    expected = torch.stack([avg[0].mean(0), avg[1, :2].mean(0)])
    torch.testing.assert_close(out, expected)


def test_first_last_avg_uses_layer_1_and_last(batch, hidden_states) -> None:
    _, mask = batch
    out = pool(PoolingSpec("first_last_avg"), hidden_states[-1], mask, hidden_states=hidden_states)
    avg = (hidden_states[1] + hidden_states[3]) / 2
    expected = torch.stack([avg[0].mean(0), avg[1, :2].mean(0)])
    torch.testing.assert_close(out, expected)
    wrong = (hidden_states[0] + hidden_states[3]) / 2  # the embedding layer must not be used
    assert not torch.allclose(out, torch.stack([wrong[0].mean(0), wrong[1, :2].mean(0)]))


@pytest.mark.parametrize("k", [0, 1, 2, 3])
def test_layer_k(batch, hidden_states, k: int) -> None:
    _, mask = batch
    out = pool(PoolingSpec("layer", k), hidden_states[-1], mask, hidden_states=hidden_states)
    h = hidden_states[k]
    torch.testing.assert_close(out, torch.stack([h[0].mean(0), h[1, :2].mean(0)]))


def test_hidden_state_modes_need_hidden_states(batch) -> None:
    hidden, mask = batch
    for spec in (PoolingSpec("last2avg"), PoolingSpec("first_last_avg"), PoolingSpec("layer", 1)):
        with pytest.raises(ValueError, match="hidden states"):
            pool(spec, hidden, mask)


def test_encdec_first_returns_the_decoder_output(batch) -> None:
    hidden, mask = batch
    dec = torch.tensor([[7.0, 8.0], [9.0, 10.0]])
    torch.testing.assert_close(pool(PoolingSpec("encdec_first"), hidden, mask, decoder_first=dec), dec)
    with pytest.raises(ValueError, match="decoder"):
        pool(PoolingSpec("encdec_first"), hidden, mask)


def test_pooling_choices_is_the_one_list_each_mode_once() -> None:
    assert pooling_choices(2) == ["cls", "mean", "max", "last2avg", "first_last_avg", "layer:0", "layer:1", "layer:2"]
    t5 = pooling_choices(1, is_encoder_decoder=True)
    assert t5 == ["max", "last2avg", "first_last_avg", "enc_first", "enc_mean", "encdec_first", "layer:0", "layer:1"]
    assert len(set(t5)) == len(t5)
    for choices, encdec in ((pooling_choices(3), False), (t5, True)):
        assert default_pooling(PoolingModelStub(3, encdec)).name in choices
        for mode in ("cls", "mean", "max"):
            assert canonical_pooling(mode, encdec) in choices
            parse_pooling(canonical_pooling(mode, encdec)).check(3, encdec)  # every choice parses
