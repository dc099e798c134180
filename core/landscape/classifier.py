"""The model whose loss surface we draw: a transformer encoder, mean pooling, and a linear head.

Sentence pairs are cross-encoded (``[CLS] a [SEP] b [SEP]`` with token types), as in BERT fine-tuning.
theta is every parameter the loss depends on: the encoder's unused pooler (BERT's [CLS] dense layer,
never read by mean pooling) is removed, so it cannot add directions with zero gradient.

The head is initialised from ``seed`` alone (normal, std = the config's initializer_range, bias 0), so
the pre-trained and the from-scratch run on the same task start from the same head.

``Evaluator`` computes loss and accuracy of any flat theta on one fixed, seeded evaluation set (training
examples and held-out examples, length-sorted into padded chunks once), dropout off (``eval()``), under
``torch.inference_mode``, with ``functional_call`` on views of the flat theta: for BERT encoders on the
padding-free ``PackedClassifier`` (``isoscope.landscape.packed``), for others on the padded chunks.

Devices (``isoscope.landscape.placement``): the classifier is built on the encoder's device (``Encoder.device``,
resolved when the encoder was loaded), in float32; the evaluation examples are tokenized once on the CPU and
copied to the model's device once, by the ``Evaluator``, which takes theta on any device and sums the losses in
float64 on the CPU (a few numbers per example).
"""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.func import functional_call
from torch.nn import functional as F
from transformers import AutoModel

from isoscope.cache import make_key
from isoscope.encode.models import Encoder
from isoscope.encode.pooling import masked_mean
from isoscope.landscape.flat import FlatLayout
from isoscope.landscape.options import HEAD_POOLINGS, INITS, HeadPooling, Init
from isoscope.landscape.packed import PackedBatch, PackedClassifier, supports_packed
from isoscope.landscape.placement import module_device, seeded_rng, to_device
from isoscope.landscape.records import Metrics
from isoscope.landscape.tasks import Task

log = logging.getLogger(__name__)

SCRATCH_SEED_OFFSET = 1_000_003  # the random init never reuses the seed of the data order or the head


def check_init(init: str) -> str:
    if init not in INITS:
        raise ValueError(f"unknown init '{init}'; choose one of {', '.join(INITS)}")
    return init


def check_head_pooling(pooling: str) -> str:
    if pooling not in HEAD_POOLINGS:
        raise ValueError(f"unknown head pooling '{pooling}'; choose one of {', '.join(HEAD_POOLINGS)}")
    return pooling


class Classifier(nn.Module):
    """encoder -> pooled vector (b, d) -> linear head -> logits (b, n_classes)."""

    def __init__(self, encoder: nn.Module, hidden_size: int, n_classes: int, *, pooling: HeadPooling = "mean") -> None:
        super().__init__()
        self.encoder = encoder
        self.head = nn.Linear(hidden_size, n_classes)
        self.pooling = check_head_pooling(pooling)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, **extra: torch.Tensor) -> torch.Tensor:
        hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask, **extra).last_hidden_state
        pooled = masked_mean(hidden, attention_mask) if self.pooling == "mean" else hidden[:, 0]  # (b, d)
        return self.head(pooled)  # (b, c)


def build_classifier(
    encoder: Encoder, n_classes: int, *, init: Init, seed: int, pooling: HeadPooling = "mean"
) -> Classifier:
    """A trainable classifier in float32 on the encoder's device: the pre-trained weights copied, or a seeded
    random init of the same config (drawn on the CPU, so a seed is one init on every device)."""
    check_init(init)
    if encoder.is_encoder_decoder:
        raise ValueError("loss landscapes support encoder-only models (BERT-like); got an encoder-decoder")
    if init == "pretrained":
        body = copy.deepcopy(encoder.model)  # once per run; the shared Encoder is never modified
    else:
        with seeded_rng(torch.device("cpu"), seed + SCRATCH_SEED_OFFSET):  # built on the CPU, then moved
            body = AutoModel.from_config(encoder.model.config)
    if getattr(body, "pooler", None) is not None:
        body.pooler = None
    model = Classifier(body, encoder.hidden_size, n_classes, pooling=pooling)
    std = float(getattr(encoder.model.config, "initializer_range", 0.02))
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        model.head.weight.copy_(torch.randn(model.head.weight.shape, generator=gen) * std)
        model.head.bias.zero_()
    for p in model.parameters():
        p.requires_grad_(True)
    return model.to(device=torch.device(encoder.device), dtype=torch.float32).eval()


def tokenize(tokenizer, task: Task, idx: np.ndarray | list[int], *, max_length: int) -> dict[str, torch.Tensor]:
    """Padded model inputs for rows ``idx`` of ``task`` (pairs are encoded together)."""
    a = [task.texts_a[i] for i in idx]
    b = [task.texts_b[i] for i in idx] if task.texts_b is not None else None
    enc = tokenizer(a, b, truncation=True, max_length=max_length, padding=True, return_tensors="pt")
    return {k: v for k, v in enc.items() if k in ("input_ids", "attention_mask", "token_type_ids")}


@dataclass
class EvalChunk:
    inputs: dict[str, torch.Tensor]  # padded (b, t) tensors
    labels: torch.Tensor  # (b,)
    split: torch.Tensor  # (b,) 0 = training example, 1 = held-out example


@dataclass
class EvalSet:
    """The fixed evaluation examples, tokenized once and grouped by length."""

    chunks: list[EvalChunk]
    n_train: int
    n_heldout: int
    key: str


def make_eval_set(tokenizer, train: Task, heldout: Task, *, max_length: int, chunk_size: int = 8) -> EvalSet:
    """Tokenize training + held-out examples once; length-sorted chunks keep padding small.

    On 64 STS-B pairs, chunks of 8 add 12% padding tokens (chunks of 32: 59%), and the forward pass is compute-bound, so
    small chunks are faster despite smaller matrix products.
    """
    if chunk_size < 1:
        raise ValueError("chunk_size must be >= 1")
    if len(train) == 0 or len(heldout) == 0:
        raise ValueError("the evaluation set needs at least one training and one held-out example")
    both = Task(
        train.texts_a + heldout.texts_a,
        (train.texts_b + heldout.texts_b) if train.texts_b is not None and heldout.texts_b is not None else None,
        np.concatenate([train.labels, heldout.labels]),
        train.n_classes,
        train.name,
    )
    split = np.r_[np.zeros(len(train), np.int64), np.ones(len(heldout), np.int64)]
    lengths = [
        len(x) for x in tokenizer(both.texts_a, both.texts_b, truncation=True, max_length=max_length)["input_ids"]
    ]
    order = np.argsort(lengths, kind="stable")
    chunks = []
    for start in range(0, len(order), chunk_size):
        idx = order[start : start + chunk_size]
        chunks.append(
            EvalChunk(
                tokenize(tokenizer, both, idx, max_length=max_length),
                torch.as_tensor(both.labels[idx]),
                torch.as_tensor(split[idx]),
            )
        )
    key = make_key("evalset", train.digest(), heldout.digest(), max_length)
    return EvalSet(chunks, len(train), len(heldout), key)


class Evaluator:
    """Loss and accuracy of a flat theta on a fixed EvalSet, through ``functional_call`` (no weight copies)."""

    def __init__(self, model: Classifier, layout: FlatLayout, eval_set: EvalSet, *, packed: bool | None = None) -> None:
        """``packed``: use the padding-free BERT forward (``isoscope.landscape.packed``); None = wherever supported."""
        self.model = model
        self.layout = layout
        self.eval_set = eval_set
        self.device = module_device(model)  # where every forward pass runs; the inputs are copied there once
        use_packed = packed if packed is not None else supports_packed(model.encoder)
        self.packed_model = PackedClassifier(model) if use_packed else None  # refuses other encoders
        packed_batch = PackedBatch.from_padded([c.inputs for c in eval_set.chunks]) if use_packed else None
        self.packed = packed_batch.to(self.device) if packed_batch is not None else None
        self._inputs = [to_device(c.inputs, self.device) for c in eval_set.chunks]  # padded (b, t) per chunk
        self._chunk_labels = [c.labels.to(self.device) for c in eval_set.chunks]  # (b,) per chunk
        self._labels = torch.cat([c.labels for c in eval_set.chunks])  # (S,) in chunk order, on the CPU
        self._split = torch.cat([c.split for c in eval_set.chunks])  # (S,)

    def logits(self, theta: torch.Tensor) -> torch.Tensor:
        """Logits (S, c) of every evaluation example (chunk order) at ``theta`` (on any device; copied to the model's
        when it is elsewhere), on the model's device, without gradients."""
        self.model.eval()  # dropout off, always
        with torch.inference_mode():
            params = self.layout.unflatten(theta.to(self.device))
            if self.packed_model is not None:
                return functional_call(self.packed_model, params, args=(self.packed,))
            return torch.cat([functional_call(self.model, params, args=(), kwargs=inputs) for inputs in self._inputs])

    def __call__(self, theta: torch.Tensor) -> dict[str, float]:
        """``records.Metrics`` as a dict: {"train_loss", "train_acc", "heldout_loss", "heldout_acc"} (mean
        cross-entropy, accuracy)."""
        logits = self.logits(theta).float().cpu()  # (S, c): the sums below are the CPU's on every device
        losses = F.cross_entropy(logits, self._labels, reduction="none").double()  # (S,)
        hits = (logits.argmax(-1) == self._labels).double()  # (S,)
        count = torch.zeros(2, dtype=torch.float64).index_add_(0, self._split, torch.ones_like(losses))
        loss = (torch.zeros(2, dtype=torch.float64).index_add_(0, self._split, losses) / count).tolist()
        acc = (torch.zeros(2, dtype=torch.float64).index_add_(0, self._split, hits) / count).tolist()
        return Metrics(train_loss=loss[0], train_acc=acc[0], heldout_loss=loss[1], heldout_acc=acc[1]).to_json()

    def train_loss(self, theta: torch.Tensor, max_examples: int | None = None) -> torch.Tensor:
        """Differentiable mean cross-entropy on the training part of the set (for Hessian-vector products).

        ``max_examples`` keeps the first that many training examples (in the set's fixed chunk order).
        Attention runs on the math SDPA backend: the fused CPU kernel has no double backward.
        """
        from torch.nn.attention import SDPBackend, sdpa_kernel

        self.model.eval()
        theta = theta.to(self.device)  # differentiable: a gradient flows back to theta's own device
        params = self.layout.unflatten(theta)
        total = theta.new_zeros(())
        left = self.eval_set.n_train if max_examples is None else min(max_examples, self.eval_set.n_train)
        used = left
        with sdpa_kernel(SDPBackend.MATH):
            for chunk, chunk_inputs, labels in zip(self.eval_set.chunks, self._inputs, self._chunk_labels, strict=True):
                keep = torch.nonzero(chunk.split == 0).flatten()[:left].to(self.device)  # (k,)
                if len(keep) == 0:
                    continue
                inputs = {k: v[keep] for k, v in chunk_inputs.items()}
                logits = functional_call(self.model, params, args=(), kwargs=inputs)  # (k, c)
                total = total + F.cross_entropy(logits, labels[keep], reduction="sum")
                left -= len(keep)
                if left == 0:
                    break
        return total / used
