"""Tiny random encoders built from a config (never mocks): fast stand-ins for the real model in tests."""

from __future__ import annotations

import torch
from transformers import AutoTokenizer, BertConfig, BertModel, T5Config, T5Model

from isoscope.encode.models import Encoder, default_model_path, encoder_from_model


def tiny_bert(seed: int = 0, **config: object) -> Encoder:
    """A seeded random BERT (hidden 32, 2 layers unless ``config`` says otherwise) with the default tokenizer."""
    tokenizer = AutoTokenizer.from_pretrained(default_model_path())
    settings = {
        "vocab_size": tokenizer.vocab_size,
        "hidden_size": 32,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "intermediate_size": 64,
        "max_position_embeddings": 128,
        **config,
    }
    torch.manual_seed(seed)
    return encoder_from_model(BertModel(BertConfig(**settings)), tokenizer, "tiny-bert")


def tiny_t5(seed: int = 0, **config: object) -> Encoder:
    """A seeded random T5Model (d_model 32, 2 + 2 layers unless ``config`` says otherwise) with the default
    WordPiece tokenizer; its pad id 0 is the decoder start token."""
    tokenizer = AutoTokenizer.from_pretrained(default_model_path())
    settings = {
        "vocab_size": tokenizer.vocab_size,
        "d_model": 32,
        "d_kv": 8,
        "num_heads": 4,
        "d_ff": 64,
        "num_layers": 2,
        "num_decoder_layers": 2,
        "decoder_start_token_id": 0,
        "pad_token_id": 0,
        **config,
    }
    torch.manual_seed(seed)
    return encoder_from_model(T5Model(T5Config(**settings)), tokenizer, "tiny-t5")
