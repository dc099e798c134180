"""Sentence embeddings: batched, length-sorted, dynamically padded forward passes with pooling.

vectors = encode(load_encoder(), ["a sentence", "another"], pooling="mean")  # (2, 384) float32
"""

from __future__ import annotations

import logging
import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import torch

from isoscope.cache import ArrayCache, make_key, text_digest
from isoscope.encode.device import TokenBudget, run_with_backoff
from isoscope.encode.models import Encoder
from isoscope.encode.pooling import MODEL_POOLING, Pooling, PoolingSpec, pool, pooling_specs, resolve_pooling
from isoscope.encode.recipe import prompt_length, resolve_prompt

log = logging.getLogger(__name__)

ProgressFn = Callable[[int, int], None]  # (done, total)
T = TypeVar("T")
R = TypeVar("R")


@dataclass
class EmbedConfig:
    """Settings of one embedding run.

    A batch holds ``batch_size`` texts, or more when they are short: texts are sorted by length and a batch
    grows until it holds about ``batch_tokens`` padded tokens (0 turns this off). Small matrices waste CPU,
    so this is faster on short sentences; a batch never holds more padded tokens than the larger of
    ``batch_tokens`` and ``batch_size`` texts of its longest length. 1024 measured best here (2 cores,
    all-MiniLM-L6-v2, STS-B sentences): 531 sentences/s vs 421 with 4096 and 511 with 0 on 500 short ones,
    438 vs 434 and 417 on 5,385 (bench/encode.py).
    """

    batch_size: int = 64
    max_length: int = 256
    batch_tokens: int = 1024
    prompt_name: str | None = None  # one of the model's prompts (its recipe's ``prompts``), e.g. "query"
    prompt: str | None = None  # a prompt's text as given; None with no name: the model's default prompt, if any

    def prompt_text(self, encoder: Encoder) -> str:
        """The text put before every text of this run (``isoscope.encode.recipe.resolve_prompt``)."""
        card = encoder.recipe.card if encoder.recipe is not None else None
        return resolve_prompt(card, self.prompt_name, self.prompt, model=encoder.name)


def describe_run(encoder: Encoder, pooling: Pooling, config: EmbedConfig | None = None) -> str:
    """What a run computes, in words, for results and pages: ``CLS pooling -> Dense 64->32 (tanh) -> normalise;
    prompt: 'query: '`` for the pooling ``model``, ``mean pooling of the raw last layer; prompt: none`` else."""
    spec = resolve_pooling(pooling, encoder)
    if spec.kind == MODEL_POOLING and encoder.recipe is not None:
        head = f"the model's recipe: {encoder.recipe.describe()}"
    elif spec.kind == "layer":
        head = f"mean pooling of layer {spec.layer} (raw)"
    else:
        head = f"{spec.name} pooling of the raw last layer"
    prompt = (config or EmbedConfig()).prompt_text(encoder)
    return f"{head}; prompt: {prompt!r}" if prompt else f"{head}; prompt: none"


def model_max_tokens(encoder: Encoder) -> int | None:
    """The longest input the model accepts (tokenizer limit, position embeddings), or None if unbounded."""
    limits = [
        v
        for v in (
            getattr(encoder.tokenizer, "model_max_length", None),
            getattr(encoder.model.config, "max_position_embeddings", None),
        )
        if isinstance(v, int) and 0 < v < 1_000_000
    ]
    return min(limits) if limits else None


def max_tokens(encoder: Encoder, max_length: int) -> int:
    """The tokens a text is cut at: ``max_length``, at most the model's limit (``model_max_tokens``: longer inputs
    would overflow the position embeddings) and its recipe's ``max_seq_length``."""
    limit = model_max_tokens(encoder)
    if limit is not None and max_length > limit:
        max_length = limit
    card = encoder.recipe.card if encoder.recipe is not None else None
    if card is not None and card.max_seq_length is not None:
        max_length = min(max_length, card.max_seq_length)
    return max_length


TOKENIZE_TEXTS = 4096  # texts tokenized per call: a prompt is copied before this many texts at most at once


def _tokenize(encoder: Encoder, texts: Sequence[str], limit: int, prompt: str = "") -> list:
    """The token ids of each text, cut at ``limit`` (``prompt`` before every text; the model's own recipe's
    lowercasing, as sentence-transformers runs it), unpadded."""
    card = encoder.recipe.card if encoder.recipe is not None else None
    ids: list = []
    for start in range(0, len(texts), TOKENIZE_TEXTS):
        items = [prompt + t for t in texts[start : start + TOKENIZE_TEXTS]]
        if card is not None and card.do_lower_case:
            items = [t.lower() for t in items]
        ids += encoder.tokenizer(items, truncation=True, max_length=limit, padding=False)["input_ids"]
    return ids


def _tokenize_sorted(
    encoder: Encoder, texts: Sequence[str], max_length: int, prompt: str = ""
) -> tuple[list, np.ndarray]:
    """Tokenize once without padding (``_tokenize`` at ``max_tokens``); return encodings and the order
    longest-first."""
    ids = _tokenize(encoder, texts, max_tokens(encoder, max_length), prompt)
    order = np.argsort([-len(x) for x in ids], kind="stable") if ids else np.zeros(0, np.int64)
    return ids, order


def _batches(ids: list, order: np.ndarray, config: EmbedConfig, pad_id: int, budget: TokenBudget | None = None):
    """Yield (index array, input_ids (b, t), attention_mask (b, t)) with padding to the batch's longest.

    ``order`` is longest-first, so the first text of a batch sets its padded length ``t``; the batch takes
    ``max(batch_size, batch_tokens // t)`` texts, fewer once ``budget`` (lowered by each out-of-memory error,
    ``isoscope.encode.device``) is smaller; it is read as each batch is built.
    """
    start = 0
    while start < len(order):
        t = max(len(ids[order[start]]), 1)
        size = max(config.batch_size, config.batch_tokens // t)
        if budget is not None:
            size = budget.rows(t, size)
        idx = order[start : start + size]
        start += len(idx)
        lengths = np.fromiter((len(ids[i]) for i in idx), np.int64, len(idx))  # (b,)
        flat = np.fromiter((tok for i in idx for tok in ids[i]), np.int64, int(lengths.sum()))
        mask_np = np.arange(t)[None, :] < lengths[:, None]  # (b, t) bool, real tokens first
        input_np = np.full((len(idx), t), pad_id, np.int64)  # (b, t)
        input_np[mask_np] = flat  # row-major fill keeps each text's tokens in order
        yield idx, torch.from_numpy(input_np), torch.from_numpy(mask_np.astype(np.int64))


def ordered_map(fn: Callable[[T], R], items: Iterable[T], workers: int) -> Iterator[R]:
    """``map(fn, items)`` on ``workers`` threads, results in input order, at most ``2 * workers`` items in flight.

    ONNX Runtime encoders run several batches at once, each on one thread (``concurrent_batches``, see
    ``isoscope.encode.onnx_runtime``); torch encoders have none and run one batch at a time on all their threads.
    """
    if workers <= 1:
        yield from map(fn, items)
        return
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(workers, thread_name_prefix="isoscope-embed") as pool:
        pending: deque = deque()
        for item in items:
            pending.append(pool.submit(fn, item))
            if len(pending) >= 2 * workers:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


def concurrent_batches(encoder: Encoder) -> int:
    """How many batches ``encoder`` runs at once (1 for torch models)."""
    return max(1, int(getattr(encoder.model, "concurrent_batches", 1)))


def _forward(
    encoder: Encoder, specs: Sequence[PoolingSpec], input_ids: torch.Tensor, mask: torch.Tensor, prompt_length: int = 0
) -> dict[str, torch.Tensor]:
    """One forward pass, every requested pooling from it (``model``: the model's own recipe on the last layer,
    ``prompt_length`` tokens left out where its pooling says so). Returns name -> (b, d)."""
    need_hs = any(s.needs_hidden_states for s in specs)
    model = encoder.model
    input_ids, mask = input_ids.to(encoder.device), mask.to(encoder.device)  # the model's device
    if encoder.is_encoder_decoder:
        enc_out = model.get_encoder()(input_ids=input_ids, attention_mask=mask, output_hidden_states=need_hs)
    else:
        enc_out = model(input_ids=input_ids, attention_mask=mask, output_hidden_states=need_hs)
    decoder_first = None
    if any(s.needs_decoder for s in specs):
        start = model.config.decoder_start_token_id
        dec_in = torch.full(
            (input_ids.shape[0], 1), start if start is not None else 0, dtype=torch.long, device=input_ids.device
        )
        dec_out = model.get_decoder()(
            input_ids=dec_in,
            encoder_hidden_states=enc_out.last_hidden_state,
            encoder_attention_mask=mask,
        )
        decoder_first = dec_out.last_hidden_state[:, 0].float()  # (b, d)
    # poolings and the recipe's head run in float32 whatever the dtype of the layers (bf16 sums lose digits)
    hs = tuple(h.float() for h in enc_out.hidden_states) if need_hs else None
    last = enc_out.last_hidden_state.float()  # (b, t, d)
    return {
        s.name: encoder.recipe.apply(last, mask, prompt_length)
        if s.kind == MODEL_POOLING
        else pool(s, last, mask, hidden_states=hs, decoder_first=decoder_first)
        for s in specs
    }


def _check_config(config: EmbedConfig) -> None:
    if config.batch_size < 1 or config.max_length < 2 or config.batch_tokens < 0:
        raise ValueError("batch_size must be >= 1, max_length >= 2 and batch_tokens >= 0")


def encode_many(
    encoder: Encoder,
    texts: Sequence[str],
    poolings: Sequence[PoolingSpec | str],
    *,
    config: EmbedConfig | None = None,
    progress: ProgressFn | None = None,
    cache: ArrayCache | None = None,
    companions: bool = False,
) -> dict[str, np.ndarray]:
    """Embed ``texts`` once and pool them every requested way. Returns name -> (n, d) float32.

    Each distinct text is embedded once (``distinct_texts``) and its row copied to every place it occurs;
    sentences are sorted by length so each batch pads only to its own longest sentence; results come
    back in input order. With a cache, arrays already computed are read instead (one entry per pooling, a row
    per distinct text, named by ``CachedTexts``: the command line, the app and the notebook read and write the
    same entries), and a process computing these texts makes another that asks for them wait and read
    (``ArrayCache.lock``). With ``companions`` (the dashboard, ``isoscope embed`` and ``isoscope.embed``, where
    one moves between poolings) the pass also caches every ``companion_poolings``, so that the next pooling or
    layer of the same texts is read, not computed. ``progress(done, n)`` counts the texts of ``texts``.
    """
    config = config or EmbedConfig()
    _check_config(config)
    specs = [resolve_pooling(p, encoder) for p in poolings]
    n = len(texts)
    unique, rows = distinct_texts(texts)  # (u,) texts and (n,) rows: the model sees each text once
    weights = None if rows is None else np.bincount(rows, minlength=len(unique))  # (u,) occurrences of each
    named = None if cache is None or not unique else CachedTexts.of(encoder, unique, config=config, cache=cache)
    out = {} if named is None else _read_cached(cache, encoder, specs, named, len(unique))
    todo = [s for s in specs if s.name not in out]
    if todo and not unique:
        out.update({s.name: np.zeros((0, encoder.output_dim(s)), np.float32) for s in todo})
    elif todo and named is None:
        out.update(_encode_uncached(encoder, unique, todo, config, progress, weights))
    elif todo:
        with cache.lock(named.key(encoder, "pass")):
            run = _Pass(encoder, unique, config, progress, weights)
            out.update(_encode_once(run, todo, cache, named, companions))
    if progress is not None:
        progress(n, n)
    return {s.name: out[s.name] if rows is None else out[s.name][rows] for s in specs}  # (n, d) each


def distinct_texts(texts: Sequence[str]) -> tuple[list[str], np.ndarray | None]:
    """Each distinct text of ``texts`` once, sorted, and the (n,) row of each text among them (None when they are
    ``texts`` itself: sorted, no repeats). ``isoscope sts`` on STS-B's 9,927 pairs embeds their 6,077 distinct
    sentences, not 19,854; and a list names the same cache entries in any order, with any repeats: the app's
    distinct sentences of a pairs file read what ``isoscope sts`` wrote."""
    unique = sorted(set(texts))
    if len(unique) == len(texts) and all(a == b for a, b in zip(unique, texts, strict=True)):
        return unique, None
    row = {t: i for i, t in enumerate(unique)}
    return unique, np.fromiter((row[t] for t in texts), np.int64, len(texts))  # (n,)


COMPANION_BYTES = 128 * 2**20  # what a pass may write besides what was asked: 17 arrays of the demo at d = 384


def companion_poolings(encoder: Encoder, n: int) -> list[PoolingSpec]:
    """What one forward pass over ``n`` texts also pools and caches, so that a later request for another pooling
    of the same texts is a cache hit: every named pooling of an fp32 encoder (not ``encdec_first``, which runs
    the decoder), then every ``layer:K``, while their (n, d) float32 arrays fit in ``COMPANION_BYTES``. None for
    other precisions (their exports hold only the outputs asked for)."""
    if encoder.precision != "fp32":
        return []
    one = n * encoder.hidden_size * 4
    every = pooling_specs(encoder.num_layers, encoder.is_encoder_decoder, encoder.has_recipe)
    specs = [s for s in every if not s.needs_decoder]
    fits = max(0, COMPANION_BYTES // max(one, 1))
    return specs[:fits]


LENGTHS_FOLDER = "lengths"  # under the embedding cache: the longest text's tokens of each list of texts


@dataclass(frozen=True)
class CachedTexts:
    """What names a list of distinct texts' entries in the embedding cache, besides the model and the pooling:
    the texts (``text_digest``), the prompt, and the length they are cut to (``cut``: None when no text is cut).

    The cut, not the run's ``max_length``: two runs whose max lengths both exceed the longest text compute the
    same vectors, so the app (128 tokens) and ``isoscope embed`` (256) share the entries of short sentences.
    The longest text's tokens are kept next to the entries (``LENGTHS_FOLDER``, one small entry per model,
    prompt and texts), so finding the entries of texts seen before tokenizes nothing.
    """

    digest: str
    prompt: str
    cut: int | None

    @classmethod
    def of(cls, encoder: Encoder, texts: Sequence[str], *, config: EmbedConfig, cache: ArrayCache) -> CachedTexts:
        """The name of ``texts`` (distinct) embedded with ``config``."""
        digest, prompt = text_digest(texts), config.prompt_text(encoder)
        limit = max_tokens(encoder, config.max_length)
        cap = max_tokens(encoder, sys.maxsize)  # the most any run keeps (this run's limit for an unbounded model)
        cap = limit if cap == sys.maxsize else cap
        recipe = encoder.recipe.digest if encoder.recipe is not None else ""
        lengths = ArrayCache(cache.root / LENGTHS_FOLDER)
        key = make_key("longest", encoder.fingerprint, recipe, prompt, cap, digest)
        found = lengths.get(key)
        if found is not None and found.shape == (1,):
            longest = int(found[0])
        else:
            longest = max((len(ids) for ids in _tokenize(encoder, texts, cap, prompt)), default=0)
            lengths.put(key, np.array([longest], np.int64))
        return cls(digest, prompt, limit if longest >= limit else None)

    def key(self, encoder: Encoder, name: str) -> str:
        """The key of pooling ``name``'s entry (``model`` with its recipe's digest, so a changed Dense layer is
        recomputed); ``pass`` names the lock of a pass over these texts."""
        if name == MODEL_POOLING and encoder.recipe is not None:
            name = f"{name}@{encoder.recipe.digest}"
        cut = "whole" if self.cut is None else self.cut
        return make_key("emb", encoder.fingerprint, name, cut, self.digest, *([self.prompt] if self.prompt else []))


def uncached_poolings(
    encoder: Encoder,
    texts: Sequence[str],
    poolings: Sequence[PoolingSpec | str],
    *,
    config: EmbedConfig,
    cache: ArrayCache,
) -> list[str]:
    """The names among ``poolings`` whose arrays for ``texts`` the cache does not hold: what ``encode_many``
    would compute (a cheap look at the entries' files; a damaged one is found, and recomputed, on reading)."""
    unique, _ = distinct_texts(texts)
    names = [resolve_pooling(p, encoder).name for p in poolings]
    if not unique:
        return names
    named = CachedTexts.of(encoder, unique, config=config, cache=cache)
    return [name for name in names if not cache.has(named.key(encoder, name))]


def _read_cached(
    cache: ArrayCache, encoder: Encoder, specs: Sequence[PoolingSpec], named: CachedTexts, n: int
) -> dict[str, np.ndarray]:
    """name -> (n, d) float32 of the entries the cache holds and verifies (a damaged one is dropped)."""
    out = {}
    for s in specs:
        hit = cache.get(named.key(encoder, s.name), expected_rows=n, expected_cols=encoder.output_dim(s))
        if hit is not None:
            out[s.name] = hit.astype(np.float32, copy=False)
    return out


@dataclass(frozen=True)
class _Pass:
    """A forward pass over distinct ``texts``; ``weights`` (u,): how often each occurs in what the caller asked."""

    encoder: Encoder
    texts: list[str]
    config: EmbedConfig
    progress: ProgressFn | None
    weights: np.ndarray | None


def _encode_once(
    run: _Pass, todo: list[PoolingSpec], cache: ArrayCache, named: CachedTexts, companions: bool
) -> dict[str, np.ndarray]:
    """Under the pass's lock: what another process computed meanwhile is read, the rest computed in one pass
    (with the companions not cached yet, or damaged), and all of it cached."""
    encoder, n = run.encoder, len(run.texts)
    out = _read_cached(cache, encoder, todo, named, n)
    missing = [s for s in todo if s.name not in out]
    if not missing:
        return out
    extra = [c for c in companion_poolings(encoder, n) if companions and c not in todo]
    held = _read_cached(cache, encoder, extra, named, n)
    extra = [c for c in extra if c.name not in held]
    computed = _encode_uncached(encoder, run.texts, missing + extra, run.config, run.progress, run.weights)
    for s in missing + extra:
        cache.put(named.key(encoder, s.name), computed[s.name])
    out.update({s.name: computed[s.name] for s in missing})
    return out


def _encode_uncached(
    encoder: Encoder,
    texts: Sequence[str],
    specs: Sequence[PoolingSpec],
    config: EmbedConfig,
    progress: ProgressFn | None,
    weights: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """Every pooling of ``specs`` of ``texts``, name -> (n, d); ``progress(done, total)`` counts texts, each
    ``weights[i]`` times when given (the occurrences of each distinct text in what the caller asked)."""
    n = len(texts)
    weights = np.ones(n, np.int64) if weights is None else weights  # (n,)
    total = int(weights.sum())
    prompt = config.prompt_text(encoder)
    # the prompt tokenized once, and refused when it leaves no room for the text, before the texts are
    prompt_tokens = prompt_length(encoder.tokenizer, prompt, max_tokens(encoder, config.max_length))
    ids, order = _tokenize_sorted(encoder, texts, config.max_length, prompt)
    pad_id = encoder.tokenizer.pad_token_id or 0
    result = {s.name: np.empty((n, 0), np.float32) for s in specs}
    budget = TokenBudget()  # lowered by each out-of-memory error; later batches are built within it

    def forward(input_ids: torch.Tensor, mask: torch.Tensor) -> dict[str, torch.Tensor]:
        return _forward(encoder, specs, input_ids, mask, prompt_tokens)

    def run(batch: tuple[np.ndarray, torch.Tensor, torch.Tensor]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        idx, input_ids, mask = batch
        with torch.inference_mode():  # thread-local: set in the thread that runs the batch
            pooled = run_with_backoff(forward, input_ids, mask, budget=budget, device=torch.device(encoder.device))
            return idx, {name: vec.float().cpu().numpy() for name, vec in pooled.items()}  # name -> (b, d)

    done = 0
    batches = _batches(ids, order, config, pad_id, budget)
    for idx, pooled in ordered_map(run, batches, concurrent_batches(encoder)):
        for name, vec in pooled.items():
            if result[name].shape[1] == 0:
                result[name] = np.empty((n, vec.shape[1]), np.float32)  # (n, d)
            result[name][idx] = vec
        done += int(weights[idx].sum())
        if progress is not None:
            progress(done, total)
    return result


def encode(
    encoder: Encoder,
    texts: Sequence[str],
    pooling: Pooling = None,
    *,
    config: EmbedConfig | None = None,
    progress: ProgressFn | None = None,
    cache: ArrayCache | None = None,
    companions: bool = False,
) -> np.ndarray:
    """Embed ``texts`` with one pooling (default: the model's, ``isoscope.encode.pooling.default_pooling``).
    Returns float32 (n, d). ``companions``: as ``encode_many``'s."""
    spec = resolve_pooling(pooling, encoder)
    run = encode_many(encoder, texts, [spec], config=config, progress=progress, cache=cache, companions=companions)
    return run[spec.name]


@dataclass
class TokenVectors:
    """Contextual vectors of the real tokens of each text."""

    token_ids: list[np.ndarray]  # per text: (t_i,)
    vectors: list[np.ndarray]  # per text: (t_i, d)


def token_vectors(
    encoder: Encoder,
    texts: Sequence[str],
    layer: int = -1,
    *,
    config: EmbedConfig | None = None,
    progress: ProgressFn | None = None,
) -> TokenVectors:
    """Per-token contextual vectors (of ``layer`` of the encoder's hidden states) with their token ids."""
    config = config or EmbedConfig()
    _check_config(config)
    ids, order = _tokenize_sorted(encoder, texts, config.max_length)
    pad_id = encoder.tokenizer.pad_token_id or 0
    n = len(texts)
    out_ids: list[np.ndarray] = [np.empty(0, np.int64)] * n
    out_vecs: list[np.ndarray] = [np.empty((0, encoder.hidden_size), np.float32)] * n
    done = 0
    model = encoder.model
    body = model.get_encoder() if encoder.is_encoder_decoder else model

    budget = TokenBudget()
    device = torch.device(encoder.device)

    def forward(input_ids: torch.Tensor, mask: torch.Tensor) -> dict[str, torch.Tensor]:
        out = body(input_ids=input_ids.to(device), attention_mask=mask.to(device), output_hidden_states=True)
        return {"h": out.hidden_states[layer].float()}  # (b, t, d)

    def run(
        batch: tuple[np.ndarray, torch.Tensor, torch.Tensor],
    ) -> tuple[np.ndarray, torch.Tensor, torch.Tensor, np.ndarray]:
        idx, input_ids, mask = batch
        with torch.inference_mode():
            h = run_with_backoff(forward, input_ids, mask, budget=budget, device=device, trim=False)["h"]
            return idx, input_ids, mask, h.cpu().numpy()  # (b, t, d)

    batches = _batches(ids, order, config, pad_id, budget)
    for idx, input_ids, mask, h in ordered_map(run, batches, concurrent_batches(encoder)):
        for row, i in enumerate(idx):
            t = int(mask[row].sum())
            out_ids[i] = input_ids[row, :t].numpy()
            out_vecs[i] = h[row, :t]
        done += len(idx)
        if progress is not None:
            progress(done, n)
    return TokenVectors(out_ids, out_vecs)
