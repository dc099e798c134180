"""isoscope.landscape.classifier: theta covers every used parameter, evaluation is deterministic and exact (tiny BERT)."""

from __future__ import annotations

import pytest
import torch
from torch.func import functional_call

from isoscope.landscape.classifier import build_classifier


def test_theta_covers_every_used_parameter(tiny, tiny_eval):
    model, layout, _ = tiny_eval
    assert "encoder.pooler.dense.weight" not in layout.names  # unused by mean pooling: removed
    assert layout.names[-2:] == ("head.weight", "head.bias")
    assert layout.size == sum(p.numel() for p in model.parameters())
    assert tiny.model.pooler is not None  # the shared encoder is untouched
    again = build_classifier(tiny, 2, init="scratch", seed=0)
    torch.testing.assert_close(again.head.weight, model.head.weight)  # same seeded head for both inits
    assert not torch.equal(
        again.encoder.embeddings.word_embeddings.weight, model.encoder.embeddings.word_embeddings.weight
    )


def test_evaluation_has_dropout_off_and_matches_the_module(tiny_eval):
    model, layout, evaluate = tiny_eval
    theta = layout.flatten(model)
    first, second = evaluate(theta), evaluate(theta)
    assert first == second
    chunk = evaluate.eval_set.chunks[0]
    model.train()  # dropout on: two forward passes differ, so the equality above is meaningful
    with torch.no_grad():
        out_a = functional_call(model, layout.unflatten(theta), args=(), kwargs=chunk.inputs)
        out_b = functional_call(model, layout.unflatten(theta), args=(), kwargs=chunk.inputs)
    assert not torch.allclose(out_a, out_b)
    assert evaluate(theta) == first and not model.training
    # functional_call on the flat vector gives what the module's own weights give
    with torch.no_grad():
        own = model(**chunk.inputs)
    torch.testing.assert_close(functional_call(model, layout.unflatten(theta), args=(), kwargs=chunk.inputs), own)
    loss = evaluate.train_loss(theta)
    assert loss.item() == pytest.approx(first["train_loss"], rel=1e-5)


def test_eval_set_groups_by_length_and_keeps_every_example(tiny, tasks):
    from isoscope.landscape.classifier import Evaluator, check_head_pooling, check_init, make_eval_set
    from isoscope.landscape.flat import FlatLayout
    from isoscope.landscape.tasks import sample

    train, held = sample(tasks[0].train, 10, 1), sample(tasks[0].heldout, 7, 2)
    eval_set = make_eval_set(tiny.tokenizer, train, held, max_length=48, chunk_size=4)
    assert (eval_set.n_train, eval_set.n_heldout) == (10, 7) and len(eval_set.chunks) == 5  # ceil(17 / 4)
    lengths = [int(c.inputs["attention_mask"].sum(1).max()) for c in eval_set.chunks]
    assert lengths == sorted(lengths)  # length-sorted chunks
    assert sum(int((c.split == 1).sum()) for c in eval_set.chunks) == 7
    model = build_classifier(tiny, 2, init="pretrained", seed=0, pooling="cls")
    layout = FlatLayout.from_module(model)
    evaluate = Evaluator(model, layout, eval_set)
    theta = layout.flatten(model)
    full = evaluate(theta)
    assert 0.0 <= full["heldout_acc"] <= 1.0 and full["train_loss"] > 0
    # the Hessian's loss on the first k training examples (chunk order) is their mean cross-entropy
    assert evaluate.train_loss(theta, 100).item() == pytest.approx(full["train_loss"], rel=1e-5)
    assert evaluate.train_loss(theta, 3).item() != pytest.approx(full["train_loss"], rel=1e-5)
    with pytest.raises(ValueError, match="pretrained, scratch"):
        check_init("random")
    with pytest.raises(ValueError, match="mean, cls"):
        check_head_pooling("max")
    with pytest.raises(ValueError, match="at least one"):
        make_eval_set(tiny.tokenizer, train, sample(held, 0, 0), max_length=48, chunk_size=4)
