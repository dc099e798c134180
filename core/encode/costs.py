"""What embedding costs here: tokens over the encoder's measured throughput, and the int8 model's build.

- embedding: tokens (the tokenizer on a seeded sample of the texts, scaled to all of them) / the encoder's
  own throughput, measured once on a short probe (``measure_throughput``: two length-sorted batches of
  ``PROBE_TEXTS``, after one warm-up pass, on the engine that will run); ``embed_texts_cost`` is ``FREE`` when
  the cache holds every pooling asked for;
- an int8 model: the seconds of building (exporting and quantising) one- and two-layer copies of the model
  with random weights, extrapolated to its layers (``measure_int8_build``).

The value they return is ``isoscope.costs.Cost``. Light to import: numpy, torch and transformers are imported
inside the functions that measure.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from isoscope.costs import FREE, Cost
from isoscope.encode.pooling import PoolingSpec, default_pooling, resolve_pooling

if TYPE_CHECKING:
    from isoscope.cache import ArrayCache
    from isoscope.encode.models import Encoder

TOKEN_SAMPLE = 2_048  # texts tokenized to estimate the tokens of a corpus
PROBE_TEXTS: tuple[str, ...] = (  # lengths from a few words to two sentences, as a corpus mixes them
    "A man is playing a guitar on a small stage in front of a quiet audience, while the rain falls outside.",
    "Stock markets fell sharply after the announcement.",
    "The cat sat on the mat while the dog slept by the fire.",
    "Where is the nearest train station?",
    "Researchers found that the new vaccine reduced infections by half in a trial of ten thousand adults.",
    "I loved it.",
    "The committee will meet again next week to discuss the budget for the coming year.",
    "Two children are running through a field of yellow flowers.",
)
PROBE_BATCHES = 2  # length-sorted batches of the probe, each about EmbedConfig.batch_tokens tokens


# ------------------------------------------------------------------ embedding


@dataclass(frozen=True)
class Throughput:
    """An encoder's measured speed on this machine: real (non-padding) tokens per second."""

    tokens_per_second: float
    probe_tokens: int  # tokens of the probe it was measured on
    probe_seconds: float


def probe_texts(batch_tokens: int) -> list[str]:
    """``PROBE_TEXTS`` repeated to fill about ``PROBE_BATCHES`` batches of ``batch_tokens`` tokens, each copy
    numbered: ``encode_many`` embeds a repeated text once (issue 50), and a probe of 8 distinct texts counted as
    168 timed 10x the real rate."""
    words = sum(len(t.split()) for t in PROBE_TEXTS)  # ~1.3 tokens per word: enough repeats either way
    repeats = max(1, math.ceil(PROBE_BATCHES * max(batch_tokens, 64) / words))
    return [f"{text} ({copy})" if copy else text for copy in range(repeats) for text in PROBE_TEXTS]


def measure_throughput(
    encoder: Encoder, poolings: Sequence[PoolingSpec | str] | None = None, max_length: int = 128
) -> Throughput:
    """Tokens per second of ``encoder`` (on the engine it runs on) for a pass that pools ``poolings`` (default:
    the model's pooling): one warm-up pass over the probe, then one timed pass (uncached), the way
    ``encode_many`` batches a corpus."""
    from isoscope.encode.embed import EmbedConfig, encode_many

    poolings = poolings or [default_pooling(encoder)]

    config = EmbedConfig(max_length=max_length)
    texts = probe_texts(config.batch_tokens)
    n_tokens = token_count(encoder, texts, max_length, sample=None)
    encode_many(encoder, texts[: len(PROBE_TEXTS)], poolings, config=config)  # warm-up: allocations, lazy kernels
    start = time.perf_counter()
    encode_many(encoder, texts, poolings, config=config)
    seconds = max(time.perf_counter() - start, 1e-6)
    return Throughput(n_tokens / seconds, n_tokens, seconds)


def token_count(encoder: Encoder, texts: Sequence[str], max_length: int, *, sample: int | None = TOKEN_SAMPLE) -> int:
    """Tokens ``encode_many`` feeds the model for ``texts`` (special tokens included, truncated at
    ``max_length`` and the model's limit): counted on a seeded sample of ``sample`` texts (None: all), scaled."""
    import numpy as np

    from isoscope.encode.embed import max_tokens
    from isoscope.sampling import sample_indices

    n = len(texts)
    if n == 0:
        return 0
    length = max_tokens(encoder, max_length)  # the model's limit and its recipe's
    rows = sample_indices(n, sample, seed=0)  # (m,)
    ids = encoder.tokenizer([texts[i] for i in rows], truncation=True, max_length=length)["input_ids"]
    lengths = np.fromiter((len(x) for x in ids), np.int64, len(ids))
    return round(float(lengths.mean()) * n)


def embedding_cost(throughput: Throughput, n_tokens: int, *, n_arrays: int = 0, n_rows: int = 0, dim: int = 0) -> Cost:
    """One forward pass over ``n_tokens`` tokens, writing ``n_arrays`` float32 (``n_rows``, ``dim``) arrays."""
    return Cost(n_tokens / max(throughput.tokens_per_second, 1e-9), n_arrays * n_rows * dim * 4)


def embed_texts_cost(
    encoder: Encoder,
    texts: Sequence[str],
    poolings: Sequence[PoolingSpec | str],
    *,
    max_length: int,
    rate: Callable[[bool], Throughput],
    cache: ArrayCache | None = None,
    companions: bool = False,
    tokens: Callable[[], int] | None = None,
) -> Cost:
    """What ``encode_many(encoder, texts, poolings, cache=..., companions=...)`` will cost: ``FREE`` when the cache
    holds every pooling asked for, or when the job is no bigger than a throughput probe; else one pass over the
    distinct texts' tokens (each text is embedded once) at ``rate(hidden)`` (``hidden``: the pass pools hidden
    states) and the arrays it writes. ``tokens``: the distinct texts' token count when the caller keeps it
    (default: ``token_count``)."""
    from isoscope.encode.embed import EmbedConfig, companion_poolings, distinct_texts, uncached_poolings

    config = EmbedConfig(max_length=max_length)
    unique, _ = distinct_texts(texts)
    if len(unique) < len(probe_texts(config.batch_tokens)):
        return FREE
    asked = [resolve_pooling(p, encoder) for p in poolings]
    missing = (
        asked
        if cache is None
        else [p for p in asked if p.name in uncached_poolings(encoder, unique, asked, config=config, cache=cache)]
    )
    if not missing:
        return FREE
    extra = companion_poolings(encoder, len(unique)) if companions and cache is not None else []
    specs = list({s.name: s for s in [*missing, *extra]}.values())
    names = [s.name for s in specs]
    n_tokens = tokens() if tokens is not None else token_count(encoder, unique, max_length)
    written = len(names) if cache is not None else 0
    hidden = any(s.needs_hidden_states for s in specs)
    return embedding_cost(rate(hidden), n_tokens, n_arrays=written, n_rows=len(unique), dim=encoder.hidden_size)


# ------------------------------------------------------------------ int8 models


def _layer_count_keys(config: object) -> list[str]:
    return [key for key in ("num_hidden_layers", "num_layers", "num_decoder_layers", "n_layer") if hasattr(config, key)]


def measure_int8_build(encoder: Encoder) -> float:
    """Seconds to build ``encoder``'s int8 model here (``isoscope.encode.quantize.build_int8_onnx``: export and
    quantise): one- and two-layer copies of its architecture with seeded random weights are built in a temporary
    folder, and the second's extra time is counted once per further layer (the embeddings and the fixed costs
    are in the first)."""
    import copy
    import tempfile
    from pathlib import Path

    import torch
    from transformers import AutoModel

    from isoscope.encode.models import encoder_from_model
    from isoscope.encode.quantize import build_int8_onnx

    seconds = []
    for layers in (1, 2):
        config = copy.deepcopy(encoder.model.config)
        for key in _layer_count_keys(config):
            setattr(config, key, layers)
        with torch.random.fork_rng():
            torch.manual_seed(0)
            model = AutoModel.from_config(config)
        probe = encoder_from_model(model, encoder.tokenizer, f"int8-probe-{layers}")
        with tempfile.TemporaryDirectory(prefix="isoscope-int8-probe-") as folder:
            start = time.perf_counter()
            build_int8_onnx(probe, cache_dir=Path(folder))
            seconds.append(time.perf_counter() - start)
    per_layer = max(seconds[1] - seconds[0], 0.0)
    return seconds[0] + per_layer * max(encoder.num_layers - 1, 0)
