"""Fixtures of the landscape tests: one thread, the tiny random BERT and the STS-B / demo tasks."""

from __future__ import annotations

import pytest
import torch

from isoscope.landscape.classifier import Evaluator, build_classifier, make_eval_set
from isoscope.landscape.flat import FlatLayout
from isoscope.landscape.tasks import load_task, sample
from tests.core.landscape.helpers import tiny_config
from tests.tiny_models import tiny_bert


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Tiny models run far faster on one thread, and the test machine is shared."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def tiny():
    return tiny_bert(1234, num_hidden_layers=3, hidden_dropout_prob=0.3, attention_probs_dropout_prob=0.3)


@pytest.fixture(scope="module")
def tasks(stsb_dir):
    return load_task("stsb", 0, stsb_dir), load_task("demo-topic", 0)


@pytest.fixture(scope="module")
def tiny_eval(tiny, tasks):
    model = build_classifier(tiny, 2, init="pretrained", seed=0)
    layout = FlatLayout.from_module(model)
    eval_set = make_eval_set(
        tiny.tokenizer, sample(tasks[0].train, 12, 1), sample(tasks[0].heldout, 12, 2), max_length=64, chunk_size=8
    )
    return model, layout, Evaluator(model, layout, eval_set)


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory, stsb_dir):
    """One small finished experiment (tiny BERT, both inits, both views, 2 seeds), shared read-only.

    Returns (out_dir, summary, config, tasks); tests that change files copy the folder first.
    """
    from isoscope.landscape.pipeline import run_landscape

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        encoder = tiny_bert(1234, num_hidden_layers=3, hidden_dropout_prob=0.3, attention_probs_dropout_prob=0.3)
        task_pair = load_task("stsb", 0, stsb_dir), load_task("demo-topic", 0)
        config = tiny_config(seeds=2, learning_heldout=16)
        out = tmp_path_factory.mktemp("landscape") / "run"
        summary = run_landscape(encoder, *task_pair, config=config, out_dir=out)
    finally:
        torch.set_num_threads(before)
    return out, summary, config, (encoder, task_pair)
