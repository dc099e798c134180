"""A padding-free forward pass of the BERT classifier, for evaluating many points of theta.

A grid point evaluates the same fixed examples again and again, so the cost is the forward pass, and
78% of it is in linear layers. Those (and the layer norms, GELU and residuals) act on each token alone,
so here they run once on all real tokens of the evaluation set stacked into one (N, d) matrix: no pad
tokens, and one large matrix product per layer instead of one per chunk. Only attention needs the
sequences: per length-sorted chunk, the packed rows are scattered into a padded (b, t) block, attended
with a key-padding mask, and gathered back. Query, key and value are one fused product.

``PackedClassifier`` wraps a ``Classifier``'s own modules (same parameter names), so a grid point is
``functional_call(PackedClassifier(model), layout.unflatten(theta), args=(batch,))``: views of the flat
vector, no weight copies. Exact: the logits equal the Hugging Face forward of ``Classifier`` to float32
rounding (tests compare the two on a tiny random BERT and on the default model). Used for ``BertModel``
with absolute positions (BERT, MiniLM and their fine-tunes); ``supports_packed`` says when, and other
encoders keep the padded ``functional_call`` path.

On 64 STS-B pairs (1,993 tokens; 2,280 with padding in chunks of 8) with all-MiniLM-L6-v2, one point
takes 0.30 s instead of 0.38 s here (``bench/landscape.py`` measures both side by side).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import reduce

import torch
from torch import nn
from torch.nn import functional as F
from transformers.activations import ACT2FN

PACKED_MODEL_TYPES: tuple[str, ...] = ("bert",)


@dataclass
class AttentionBlock:
    """Where one chunk's packed rows [start, stop) sit in its padded (b * t) block."""

    start: int
    stop: int
    batch: int
    length: int
    slots: torch.Tensor  # (stop - start,) int64 positions in the flattened (b * t) block
    key_mask: torch.Tensor  # (b, 1, 1, t) bool, True where a real token is


@dataclass
class PackedBatch:
    """Every real token of the evaluation set, sequence after sequence."""

    input_ids: torch.Tensor  # (N,)
    token_type_ids: torch.Tensor  # (N,)
    position_ids: torch.Tensor  # (N,)
    sequence: torch.Tensor  # (N,) which sequence (example) each token belongs to
    first_token: torch.Tensor  # (S,) row of each sequence's first token ([CLS])
    lengths: torch.Tensor  # (S,) real tokens per sequence
    blocks: list[AttentionBlock]

    @property
    def n_sequences(self) -> int:
        return len(self.lengths)

    def to(self, device: torch.device) -> PackedBatch:
        """The same batch with every tensor on ``device`` (itself when it is there already)."""
        if self.input_ids.device == device:
            return self
        blocks = [replace(b, slots=b.slots.to(device), key_mask=b.key_mask.to(device)) for b in self.blocks]
        moved = {
            name: getattr(self, name).to(device)
            for name in ("input_ids", "token_type_ids", "position_ids", "sequence", "first_token", "lengths")
        }
        return PackedBatch(**moved, blocks=blocks)

    @classmethod
    def from_padded(cls, chunks: list[dict[str, torch.Tensor]]) -> PackedBatch:
        """Pack padded chunks (``input_ids``, ``attention_mask``, optional ``token_type_ids``, each (b, t)).

        Sequences keep the order of the chunks and of the rows within each chunk. Padding must be on
        the right (real tokens first), as Hugging Face tokenizers of BERT models pad.
        """
        ids, types, positions, sequence, blocks = [], [], [], [], []
        first, lengths = [], []
        row, seq = 0, 0
        for chunk in chunks:
            mask = chunk["attention_mask"].bool()  # (b, t)
            b, t = mask.shape
            lens = mask.sum(1)  # (b,)
            if not torch.equal(mask, torch.arange(t)[None, :] < lens[:, None]):
                raise ValueError("packing needs right-padded inputs (real tokens first in every row)")
            tt = chunk.get("token_type_ids", torch.zeros_like(chunk["input_ids"]))
            ids.append(chunk["input_ids"][mask])
            types.append(tt[mask])
            positions.append(torch.arange(t).expand(b, t)[mask])
            sequence.append((seq + torch.arange(b))[:, None].expand(b, t)[mask])
            starts = row + torch.cumsum(lens, 0) - lens  # (b,)
            first.append(starts)
            lengths.append(lens)
            n = int(lens.sum())
            slots = torch.arange(b * t).view(b, t)[mask]  # (n,)
            blocks.append(AttentionBlock(row, row + n, b, t, slots, mask[:, None, None, :]))
            row, seq = row + n, seq + b
        return cls(
            torch.cat(ids),
            torch.cat(types),
            torch.cat(positions),
            torch.cat(sequence),
            torch.cat(first),
            torch.cat(lengths),
            blocks,
        )


def supports_packed(encoder: nn.Module) -> bool:
    """True for a Hugging Face BERT encoder with absolute position embeddings (what ``packed_logits`` implements)."""
    config = getattr(encoder, "config", None)
    return (
        config is not None
        and getattr(config, "model_type", None) in PACKED_MODEL_TYPES
        and getattr(config, "position_embedding_type", "absolute") == "absolute"
        and not getattr(config, "is_decoder", False)
        and getattr(config, "hidden_act", None) in ACT2FN
    )


def _attention(x: torch.Tensor, p: dict[str, torch.Tensor], pre: str, heads: int, batch: PackedBatch) -> torch.Tensor:
    """Self-attention of packed rows x (N, d), chunk by chunk. Returns the context (N, d) before the output dense."""
    d = x.shape[1]
    w = torch.cat([p[f"{pre}.self.{n}.weight"] for n in ("query", "key", "value")])  # (3d, d)
    bias = torch.cat([p[f"{pre}.self.{n}.bias"] for n in ("query", "key", "value")])  # (3d,)
    qkv = F.linear(x, w, bias)  # (N, 3d)
    out = torch.empty_like(x)  # (N, d)
    dh = d // heads
    for blk in batch.blocks:
        padded = qkv.new_zeros(blk.batch * blk.length, 3 * d)  # (b*t, 3d)
        padded[blk.slots] = qkv[blk.start : blk.stop]
        q, k, v = padded.view(blk.batch, blk.length, 3, heads, dh).permute(2, 0, 3, 1, 4)  # each (b, H, t, dh)
        ctx = F.scaled_dot_product_attention(q, k, v, attn_mask=blk.key_mask)  # (b, H, t, dh)
        out[blk.start : blk.stop] = ctx.transpose(1, 2).reshape(blk.batch * blk.length, d)[blk.slots]
    return out


def packed_logits(
    params: dict[str, torch.Tensor],
    config,
    batch: PackedBatch,
    *,
    pooling: str = "mean",
    prefix: str = "encoder.",
    head: str = "head.",
) -> torch.Tensor:
    """Classifier logits (S, c) for every packed sequence, from a name -> tensor dict of its parameters."""
    p = {name[len(prefix) :]: t for name, t in params.items() if name.startswith(prefix)}
    eps = float(config.layer_norm_eps)
    act = ACT2FN[config.hidden_act]
    d = int(config.hidden_size)
    x = (
        F.embedding(batch.input_ids, p["embeddings.word_embeddings.weight"])
        + F.embedding(batch.position_ids, p["embeddings.position_embeddings.weight"])
        + F.embedding(batch.token_type_ids, p["embeddings.token_type_embeddings.weight"])
    )  # (N, d)
    x = F.layer_norm(x, (d,), p["embeddings.LayerNorm.weight"], p["embeddings.LayerNorm.bias"], eps)
    for i in range(int(config.num_hidden_layers)):
        pre = f"encoder.layer.{i}"
        ctx = _attention(x, p, f"{pre}.attention", int(config.num_attention_heads), batch)  # (N, d)
        h = F.linear(ctx, p[f"{pre}.attention.output.dense.weight"], p[f"{pre}.attention.output.dense.bias"])
        x = F.layer_norm(
            h + x, (d,), p[f"{pre}.attention.output.LayerNorm.weight"], p[f"{pre}.attention.output.LayerNorm.bias"], eps
        )
        h = act(F.linear(x, p[f"{pre}.intermediate.dense.weight"], p[f"{pre}.intermediate.dense.bias"]))  # (N, 4d)
        h = F.linear(h, p[f"{pre}.output.dense.weight"], p[f"{pre}.output.dense.bias"])  # (N, d)
        x = F.layer_norm(h + x, (d,), p[f"{pre}.output.LayerNorm.weight"], p[f"{pre}.output.LayerNorm.bias"], eps)
    if pooling == "mean":
        pooled = x.new_zeros(batch.n_sequences, d).index_add_(0, batch.sequence, x)  # (S, d)
        pooled = pooled / batch.lengths[:, None].to(x.dtype)
    else:
        pooled = x[batch.first_token]  # (S, d)
    return F.linear(pooled, params[f"{head}weight"], params[f"{head}bias"])  # (S, c)


class PackedClassifier(nn.Module):
    """A ``Classifier``'s encoder and head (shared, same parameter names) with the packed forward.

    ``forward(batch)`` reads each parameter through the module tree, so ``torch.func.functional_call``
    substitutes the views of a flat theta exactly as it does for the padded ``Classifier``.
    """

    def __init__(self, classifier: nn.Module) -> None:
        super().__init__()
        if not supports_packed(classifier.encoder):
            raise ValueError(f"the packed forward supports {', '.join(PACKED_MODEL_TYPES)} encoders only")
        self.encoder = classifier.encoder
        self.head = classifier.head
        self.pooling = classifier.pooling
        self.names = tuple(name for name, _ in classifier.named_parameters())

    def forward(self, batch: PackedBatch) -> torch.Tensor:
        params = {name: reduce(getattr, name.split("."), self) for name in self.names}
        return packed_logits(params, self.encoder.config, batch, pooling=self.pooling)  # (S, c)
