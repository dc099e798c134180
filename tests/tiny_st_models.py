"""Tiny random models saved as sentence-transformers saves them (modules.json, module folders, prompts): the
recipes researchers run, built from configs with seeded weights and written by sentence-transformers itself.
No hub, no mocks: ``SentenceTransformer(folder).encode`` is the reference the tests compare Isoscope with.

- ``bge``: BERT, CLS pooling -> Dense 64->32 (tanh) -> Normalize (the bge shape);
- ``prompted``: BERT, mean pooling with prompts ``query``/``document`` (``include_prompt`` as asked);
- ``qwen``: a Qwen2 decoder, last-token pooling -> Normalize, its tokenizer padding on the left (Qwen3-Embedding,
  gte-Qwen2, e5-mistral);
- ``t5``: a T5 encoder saved as ``T5EncoderModel``, mean pooling -> Dense 32->16 -> Normalize (Sentence-T5).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import torch
from transformers import AutoTokenizer, BertConfig, BertModel, Qwen2Config, Qwen2Model, T5Config, T5EncoderModel

from isoscope.encode.models import default_model_path

RECIPES: tuple[str, ...] = ("bge", "prompted", "qwen", "t5")
PROMPTS = {"query": "query: ", "document": "passage: "}


def _st():
    with warnings.catch_warnings():  # sentence_transformers.models is deprecated in 6.x, the only path in 3-5
        warnings.simplefilter("ignore", DeprecationWarning)
        from sentence_transformers import SentenceTransformer, models

    return SentenceTransformer, models


def _transformer(root: Path, name: str, model: torch.nn.Module, padding_side: str | None = None):
    """The Transformer module of ``model`` saved with the embedded model's WordPiece tokenizer."""
    _, models = _st()
    folder = root / f"hf-{name}"
    model.save_pretrained(folder)
    tokenizer = AutoTokenizer.from_pretrained(default_model_path())
    if padding_side is not None:
        tokenizer.padding_side = padding_side
    tokenizer.save_pretrained(folder)
    return models.Transformer(str(folder), max_seq_length=64)


def save_recipe(kind: str, out: Path, seed: int = 0, include_prompt: bool = True) -> Path:
    """Write the tiny ``kind`` model (one of ``RECIPES``) to ``out`` with sentence-transformers' ``save``."""
    SentenceTransformer, models = _st()
    vocab = AutoTokenizer.from_pretrained(default_model_path()).vocab_size
    torch.manual_seed(seed)
    prompts = None
    if kind in ("bge", "prompted"):
        bert = BertModel(
            BertConfig(
                vocab_size=vocab,
                hidden_size=64,
                num_hidden_layers=2,
                num_attention_heads=2,
                intermediate_size=64,
                max_position_embeddings=128,
            )
        )
        tr = _transformer(out.parent, f"{out.name}-bert", bert)
        if kind == "bge":
            modules = [tr, models.Pooling(64, "cls"), models.Dense(64, 32), models.Normalize()]
        else:
            modules = [tr, models.Pooling(64, "mean", include_prompt=include_prompt)]
            prompts = PROMPTS
    elif kind == "qwen":
        config = Qwen2Config(
            vocab_size=vocab,
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=128,
        )
        tr = _transformer(out.parent, f"{out.name}-qwen", Qwen2Model(config), padding_side="left")
        modules = [tr, models.Pooling(32, "lasttoken"), models.Normalize()]
    elif kind == "t5":
        config = T5Config(vocab_size=vocab, d_model=32, d_kv=8, num_heads=4, d_ff=64, num_layers=2)
        tr = _transformer(out.parent, f"{out.name}-t5", T5EncoderModel(config))
        dense = models.Dense(32, 16, activation_function=torch.nn.Identity())
        modules = [tr, models.Pooling(32, "mean"), dense, models.Normalize()]
    else:
        raise ValueError(f"unknown recipe {kind!r}; one of {RECIPES}")
    SentenceTransformer(modules=modules, prompts=prompts, device="cpu").save(str(out))
    return out


def reference_vectors(folder: Path, texts: list[str], **kwargs: object):
    """``SentenceTransformer(folder).encode(texts, **kwargs)``: what the model's authors get. (n, d) float32."""
    SentenceTransformer, _ = _st()
    return SentenceTransformer(str(folder), device="cpu").encode(texts, convert_to_numpy=True, **kwargs)
