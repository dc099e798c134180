"""isoscope.landscape.packed: the padding-free forward equals the Hugging Face padded forward, and the evaluator uses it."""

from __future__ import annotations

import pytest
import torch
from torch.func import functional_call
from transformers import BertConfig, BertModel, RobertaConfig, RobertaModel

from isoscope.encode.models import encoder_from_model
from isoscope.landscape.classifier import Evaluator, build_classifier, make_eval_set
from isoscope.landscape.flat import FlatLayout
from isoscope.landscape.packed import PackedBatch, packed_logits, supports_packed
from isoscope.landscape.tasks import Task
from tests.tiny_models import tiny_bert

# Our own sentences, of very different lengths, so chunks carry real padding.
FIRST = [
    "A kettle whistles.",
    "The night train to the coast was delayed by snow on the pass for almost three hours.",
    "Bees dance to tell the hive where flowers are.",
    "Rust.",
    "The museum lent two of its oldest maps to a travelling exhibition about early navigation.",
    "She tuned the old guitar before the concert began.",
    "Fresh bread cools on the windowsill.",
    "Engineers tested the bridge with forty loaded lorries parked bumper to bumper across the deck.",
    "Owls hunt at dusk.",
    "A quiet library on a rainy afternoon is the best place to read.",
]
SECOND = [
    "Water is boiling.",
    "Snow held up the coastal train.",
    "Honeybees communicate with a waggle dance.",
    "Iron oxide forms on wet steel over many months, slowly eating the metal away.",
    "Old charts went on tour.",
    "The guitarist tuned up.",
    "A loaf is cooling by the open window while the soup simmers on the stove.",
    "The bridge passed a load test.",
    "Barn owls hunt small mammals in the fading evening light across the meadows.",
    "Reading in the rain.",
]
LABELS = [1, 1, 1, 0, 1, 1, 1, 1, 1, 0]


def _tasks() -> tuple[Task, Task]:
    train = Task(FIRST[:6], SECOND[:6], LABELS[:6], 2, "pairs")
    heldout = Task(FIRST[6:], SECOND[6:], LABELS[6:], 2, "pairs")
    return train, heldout


@pytest.fixture(scope="module")
def tiny():
    return tiny_bert(7, num_attention_heads=4, intermediate_size=48)


def _padded_logits(model, layout, eval_set, theta) -> torch.Tensor:
    with torch.inference_mode():
        params = layout.unflatten(theta)
        return torch.cat([functional_call(model, params, args=(), kwargs=c.inputs) for c in eval_set.chunks])


@pytest.mark.parametrize("pooling", ["mean", "cls"])
@pytest.mark.parametrize("chunk", [1, 3, 16])
def test_packed_logits_equal_the_padded_forward_on_a_tiny_bert(tiny, pooling, chunk):
    model = build_classifier(tiny, 2, init="scratch", seed=0, pooling=pooling)
    layout = FlatLayout.from_module(model)
    eval_set = make_eval_set(tiny.tokenizer, *_tasks(), max_length=64, chunk_size=chunk)
    assert any(bool((~c.inputs["attention_mask"].bool()).any()) for c in eval_set.chunks) or chunk == 1
    packed = PackedBatch.from_padded([c.inputs for c in eval_set.chunks])
    assert packed.n_sequences == 10
    assert len(packed.input_ids) == sum(int(c.inputs["attention_mask"].sum()) for c in eval_set.chunks)
    theta = layout.flatten(model)
    theta = theta + 0.05 * torch.randn(theta.shape, generator=torch.Generator().manual_seed(1))
    with torch.inference_mode():
        got = packed_logits(layout.unflatten(theta), tiny.model.config, packed, pooling=pooling)
    want = _padded_logits(model, layout, eval_set, theta)
    assert got.shape == want.shape == (10, 2)
    torch.testing.assert_close(got, want, atol=2e-5, rtol=1e-4)


def test_evaluator_metrics_agree_packed_and_padded_on_the_default_model(encoder):
    model = build_classifier(encoder, 2, init="pretrained", seed=0)
    layout = FlatLayout.from_module(model)
    eval_set = make_eval_set(encoder.tokenizer, *_tasks(), max_length=128, chunk_size=4)
    packed, padded = Evaluator(model, layout, eval_set), Evaluator(model, layout, eval_set, packed=False)
    assert packed.packed is not None and padded.packed is None
    theta = layout.flatten(model)
    theta = theta + 0.01 * torch.randn(theta.shape, generator=torch.Generator().manual_seed(2))
    torch.testing.assert_close(packed.logits(theta), padded.logits(theta), atol=1e-4, rtol=1e-4)
    a, b = packed(theta), padded(theta)
    assert a.keys() == b.keys()
    for name in a:
        assert a[name] == pytest.approx(b[name], abs=1e-5), name


def test_other_encoders_keep_the_padded_path(tiny):
    config = RobertaConfig(
        vocab_size=tiny.tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=48,
        max_position_embeddings=130,
    )
    roberta = encoder_from_model(RobertaModel(config), tiny.tokenizer, "tiny-roberta")
    assert supports_packed(tiny.model) and not supports_packed(roberta.model)
    assert not supports_packed(BertModel(BertConfig(**{**tiny.model.config.to_dict(), "is_decoder": True})))
    model = build_classifier(roberta, 2, init="scratch", seed=0)
    layout = FlatLayout.from_module(model)
    eval_set = make_eval_set(tiny.tokenizer, *_tasks(), max_length=64, chunk_size=4)
    assert Evaluator(model, layout, eval_set).packed is None
    with pytest.raises(ValueError, match="supports bert encoders only"):
        Evaluator(model, layout, eval_set, packed=True)


def test_left_padded_inputs_are_refused():
    chunk = {"input_ids": torch.tensor([[0, 101, 7, 102]]), "attention_mask": torch.tensor([[0, 1, 1, 1]])}
    with pytest.raises(ValueError, match="right-padded"):
        PackedBatch.from_padded([chunk])
