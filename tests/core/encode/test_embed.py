"""Embedding engine: order, batching, pooling against direct model calls, T5 paths, tokens and the cache."""

from __future__ import annotations

import dataclasses
import pickle
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from isoscope.cache import ArrayCache
from isoscope.encode.embed import EmbedConfig, encode, encode_many, model_max_tokens, token_vectors
from tests.tiny_models import tiny_t5

TEXTS = [
    "A man is strumming a guitar.",
    "Hi",
    "The quick brown fox jumps over the lazy dog while the farmer watches from a distance, unimpressed.",
    "Stocks fell sharply on Monday after the central bank raised interest rates.",
    "",
    "Cats",
    "A woman is slicing an onion in the kitchen.",
    "Ünïcödé text with émojis 🙂 and symbols ≥ ≤.",
    "Two dogs run across a green field.",
    "Hi",  # duplicate
    "What is the capital of France? Paris, of course.",
]
DISTINCT = len(set(TEXTS))  # the rows of a cache entry of TEXTS
SMALL = EmbedConfig(batch_size=4, batch_tokens=0)  # fixed batches of 4 texts: several padded batches


def _manual(encoder, texts: list[str], max_length: int = 256) -> tuple[torch.Tensor, torch.Tensor, tuple]:
    """A direct padded forward pass: (last hidden (n, t, d), mask (n, t), hidden states)."""
    batch = encoder.tokenizer(texts, padding=True, truncation=True, max_length=max_length, return_tensors="pt")
    with torch.no_grad():
        out = encoder.model(**batch, output_hidden_states=True)
    return out.last_hidden_state, batch["attention_mask"], out.hidden_states


def _st_mean(hidden: torch.Tensor, mask: torch.Tensor) -> np.ndarray:
    """sentence-transformers' Pooling(mean): sum of masked tokens / clamp(mask sum, 1e-9)."""
    m = mask.unsqueeze(-1).expand(hidden.size()).float()
    return (torch.sum(hidden * m, 1) / torch.clamp(m.sum(1), min=1e-9)).numpy()


@pytest.fixture(scope="module")
def reference(encoder) -> np.ndarray:
    """Mean-pooled vectors of TEXTS, one text per forward pass (no padding at all)."""
    return np.stack([_st_mean(*_manual(encoder, [t])[:2])[0] for t in TEXTS])


# ---------------------------------------------------------------- shape, order, batching


def test_output_float32_in_input_order(encoder, reference) -> None:
    out = encode(encoder, TEXTS, "mean", config=SMALL)
    assert out.dtype == np.float32 and out.shape == (len(TEXTS), 384)
    np.testing.assert_allclose(out, reference, atol=1e-5)
    np.testing.assert_allclose(out[1], out[9], atol=1e-5)  # the duplicate (batched with other texts)


def test_reversed_input_gives_reversed_output(encoder) -> None:
    out = encode(encoder, TEXTS, "mean")
    back = encode(encoder, TEXTS[::-1], "mean")
    np.testing.assert_allclose(back[::-1], out, atol=1e-5)


@pytest.mark.parametrize("batch_size", [1, 2, 3, 64])
@pytest.mark.parametrize("batch_tokens", [0, 40, 4096])
def test_batch_size_does_not_change_results(encoder, reference, batch_size: int, batch_tokens: int) -> None:
    out = encode(encoder, TEXTS, "mean", config=EmbedConfig(batch_size=batch_size, batch_tokens=batch_tokens))
    np.testing.assert_allclose(out, reference, atol=1e-5)


def _batch_sizes(encoder, texts: list[str], config: EmbedConfig) -> list[int]:
    """Texts per forward pass, read from the progress callback."""
    done: list[int] = []
    encode(encoder, texts, "mean", config=config, progress=lambda d, t: done.append(d))
    done = done[:-1]  # the final (n, n) report repeats the last batch
    return [b - a for a, b in zip([0, *done[:-1]], done, strict=True)]


def test_short_texts_share_bigger_batches(encoder) -> None:
    texts = [f"word{i}" for i in range(40)]  # 3-5 tokens each
    lengths = [len(encoder.tokenizer(t)["input_ids"]) for t in texts]
    t = max(lengths)
    assert _batch_sizes(encoder, texts, EmbedConfig(batch_size=4, batch_tokens=0)) == [4] * 10
    sizes = _batch_sizes(encoder, texts, EmbedConfig(batch_size=4, batch_tokens=48))
    assert sizes[0] == 48 // t > 4 and sum(sizes) == 40
    assert all(s >= 4 for s in sizes[:-1])


def test_long_texts_keep_batch_size(encoder) -> None:
    texts = [" ".join(["word"] * (60 + i)) for i in range(10)]  # > 60 tokens each
    assert _batch_sizes(encoder, texts, EmbedConfig(batch_size=3, batch_tokens=100)) == [3, 3, 3, 1]


def test_mean_equals_sentence_transformers_masked_mean(encoder) -> None:
    hidden, mask, _ = _manual(encoder, TEXTS)  # one padded batch in input order
    np.testing.assert_allclose(encode(encoder, TEXTS, "mean"), _st_mean(hidden, mask), atol=1e-5)


def test_hidden_state_poolings_equal_direct_model_call(encoder) -> None:
    hidden, mask, hs = _manual(encoder, TEXTS)
    m = mask.unsqueeze(-1).float()

    def mmean(h: torch.Tensor) -> np.ndarray:
        return ((h * m).sum(1) / m.sum(1)).numpy()

    expected = {
        "cls": hidden[:, 0].numpy(),
        "max": hidden.masked_fill(m == 0, -1e9).max(1).values.numpy(),
        "last2avg": mmean((hs[-1] + hs[-2]) / 2),
        "first_last_avg": mmean((hs[1] + hs[-1]) / 2),
        "layer:0": mmean(hs[0]),
        "layer:3": mmean(hs[3]),
        "layer:6": mmean(hs[6]),
    }
    got = encode_many(encoder, TEXTS, list(expected), config=EmbedConfig(batch_size=3))
    assert list(got) == list(expected)
    for name, vec in expected.items():
        np.testing.assert_allclose(got[name], vec, atol=1e-5, err_msg=name)
    np.testing.assert_allclose(got["layer:6"], encode(encoder, TEXTS, "mean"), atol=1e-5)


def test_encode_many_equals_separate_encode_calls(encoder) -> None:
    modes = ["mean", "cls", "max", "last2avg", "first_last_avg", "layer:2"]
    many = encode_many(encoder, TEXTS, modes, config=EmbedConfig(batch_size=5))
    for mode in modes:
        single = encode(encoder, TEXTS, mode, config=EmbedConfig(batch_size=5))
        assert many[mode].dtype == np.float32
        np.testing.assert_allclose(many[mode], single, atol=1e-6, err_msg=mode)


def test_max_length_truncates(encoder) -> None:
    long = TEXTS[2]
    short = encode(encoder, [long], "mean", config=EmbedConfig(max_length=8))
    hidden, mask, _ = _manual(encoder, [long], max_length=8)
    assert mask.shape[1] == 8
    np.testing.assert_allclose(short, _st_mean(hidden, mask), atol=1e-5)
    assert not np.allclose(short, encode(encoder, [long], "mean"), atol=1e-3)


def test_max_length_above_the_model_limit_is_clamped(encoder) -> None:
    assert model_max_tokens(encoder) == 512
    text = "word " * 700
    over = encode(encoder, [text, "short"], "mean", config=EmbedConfig(max_length=2000))
    at_limit = encode(encoder, [text, "short"], "mean", config=EmbedConfig(max_length=512))
    np.testing.assert_allclose(over, at_limit, atol=1e-6)


def test_progress_callback(encoder) -> None:
    calls: list[tuple[int, int]] = []
    encode(encoder, TEXTS, "mean", config=SMALL, progress=lambda d, t: calls.append((d, t)))
    n = len(TEXTS)
    assert calls[-1] == (n, n)
    assert all(t == n for _, t in calls)
    done = [d for d, _ in calls]
    assert done == sorted(done) and done[0] == 4
    # 10 distinct texts in batches of 4, 4 and 2; the batch holding "Hi" counts it twice (it occurs twice)
    steps = np.diff([0, *done[:-1]])
    assert sorted((steps - [4, 4, 2]).tolist()) == [0, 0, 1], steps


def test_empty_list(encoder) -> None:
    calls: list[tuple[int, int]] = []
    out = encode(encoder, [], "mean", progress=lambda d, t: calls.append((d, t)))
    assert out.shape == (0, 384) and out.dtype == np.float32
    assert calls == [(0, 0)]
    many = encode_many(encoder, [], ["cls", "mean"])
    assert {k: v.shape for k, v in many.items()} == {"cls": (0, 384), "mean": (0, 384)}


def test_bad_options(encoder) -> None:
    with pytest.raises(ValueError, match="batch_size"):
        encode(encoder, TEXTS, "mean", config=EmbedConfig(batch_size=0))
    with pytest.raises(ValueError, match="max_length"):
        encode(encoder, TEXTS, "mean", config=EmbedConfig(max_length=1))
    with pytest.raises(ValueError, match="batch_tokens"):
        encode(encoder, TEXTS, "mean", config=EmbedConfig(batch_tokens=-1))
    with pytest.raises(ValueError, match="batch_size"):
        token_vectors(encoder, TEXTS, config=EmbedConfig(batch_size=0))
    with pytest.raises(ValueError, match="choose one of"):
        encode(encoder, TEXTS, "median")
    with pytest.raises(ValueError, match="encoder-decoder"):
        encode(encoder, TEXTS, "encdec_first")


# ---------------------------------------------------------------- token vectors


def test_token_vectors(encoder) -> None:
    tv = token_vectors(encoder, TEXTS, config=EmbedConfig(batch_size=3))
    assert len(tv.token_ids) == len(tv.vectors) == len(TEXTS)
    mean = encode(encoder, TEXTS, "mean")
    for i, text in enumerate(TEXTS):
        ids = encoder.tokenizer(text, truncation=True, max_length=256)["input_ids"]
        assert tv.token_ids[i].tolist() == ids
        assert tv.vectors[i].shape == (len(ids), 384) and tv.vectors[i].dtype == np.float32
        np.testing.assert_allclose(tv.vectors[i].mean(0), mean[i], atol=1e-5)


def test_token_vectors_layer(encoder) -> None:
    text = ["The cat sat on the mat."]
    _, _, hs = _manual(encoder, text)
    layer0 = token_vectors(encoder, text, layer=0)
    np.testing.assert_allclose(layer0.vectors[0], hs[0][0].numpy(), atol=1e-5)
    layer3 = token_vectors(encoder, text, layer=3)
    np.testing.assert_allclose(layer3.vectors[0], hs[3][0].numpy(), atol=1e-5)


def test_token_vectors_empty_and_progress(encoder) -> None:
    empty = token_vectors(encoder, [])
    assert empty.token_ids == [] and empty.vectors == []
    calls: list[tuple[int, int]] = []
    token_vectors(
        encoder, TEXTS[:5], config=EmbedConfig(batch_size=2, batch_tokens=0), progress=lambda d, t: calls.append((d, t))
    )
    assert calls == [(2, 5), (4, 5), (5, 5)]


# ---------------------------------------------------------------- T5 (tiny, random, from a config)


@pytest.fixture(scope="module")
def t5():
    """A tiny random T5Model using the MiniLM WordPiece tokenizer (ids < 30522, pad 0 = decoder start)."""
    return tiny_t5(0, vocab_size=30522, d_model=16, d_kv=4, num_heads=2, d_ff=32, dropout_rate=0.0)


def _t5_manual(t5, texts: list[str]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Encoder output (n, t, d), mask (n, t), and the decoder output at the start token (n, d)."""
    batch = t5.tokenizer(texts, padding=True, truncation=True, max_length=256, return_tensors="pt")
    start = torch.zeros((len(texts), 1), dtype=torch.long)  # decoder_start_token_id = 0
    with torch.no_grad():
        out = t5.model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], decoder_input_ids=start)
    return out.encoder_last_hidden_state, batch["attention_mask"], out.last_hidden_state[:, 0]


def test_t5_encoder_properties(t5) -> None:
    assert t5.is_encoder_decoder and (t5.hidden_size, t5.num_layers) == (16, 2)


def test_t5_poolings_equal_direct_model_call(t5) -> None:
    enc, mask, dec_first = _t5_manual(t5, TEXTS)
    m = mask.unsqueeze(-1).float()
    got = encode_many(t5, TEXTS, ["enc_first", "enc_mean", "encdec_first", "cls"], config=EmbedConfig(batch_size=3))
    np.testing.assert_allclose(got["enc_first"], enc[:, 0].numpy(), atol=1e-5)
    np.testing.assert_allclose(got["enc_mean"], ((enc * m).sum(1) / m.sum(1)).numpy(), atol=1e-5)
    np.testing.assert_allclose(got["encdec_first"], dec_first.numpy(), atol=1e-5)
    np.testing.assert_allclose(got["cls"], got["enc_first"])
    for name, vec in got.items():
        assert vec.shape == (len(TEXTS), 16) and vec.dtype == np.float32, name
    assert not np.allclose(got["encdec_first"], got["enc_first"], atol=1e-3)


def test_t5_encdec_first_one_by_one(t5) -> None:
    """The decoder run on the start token alone, per text without padding, matches the batched path."""
    batched = encode(t5, TEXTS, "encdec_first", config=SMALL)
    for i, text in enumerate(TEXTS):
        ids = torch.tensor([t5.tokenizer(text)["input_ids"]])
        with torch.no_grad():
            enc = t5.model.encoder(input_ids=ids).last_hidden_state
            dec = t5.model.decoder(input_ids=torch.zeros((1, 1), dtype=torch.long), encoder_hidden_states=enc)
        np.testing.assert_allclose(batched[i], dec.last_hidden_state[0, 0].numpy(), atol=1e-5)


def test_t5_layer_pooling_and_tokens(t5) -> None:
    out = encode(t5, TEXTS, "layer:2")
    np.testing.assert_allclose(out, encode(t5, TEXTS, "enc_mean"), atol=1e-5)  # last encoder layer
    tv = token_vectors(t5, TEXTS[:3])
    assert tv.vectors[0].shape == (len(t5.tokenizer(TEXTS[0])["input_ids"]), 16)


# ---------------------------------------------------------------- cache


def _counting():
    calls: list[tuple[int, int]] = []
    return calls, lambda d, t: calls.append((d, t))


def test_cache_second_call_is_a_hit(encoder, tmp_cache: ArrayCache) -> None:
    calls, progress = _counting()
    first = encode(encoder, TEXTS, "mean", config=SMALL, progress=progress, cache=tmp_cache)
    assert len(calls) > 1  # computed batch by batch
    files = list(tmp_cache.root.glob("*.npy"))
    assert len(files) == 1
    mtime = files[0].stat().st_mtime_ns

    calls.clear()
    second = encode(encoder, TEXTS, "mean", config=SMALL, progress=progress, cache=tmp_cache)
    assert calls == [(len(TEXTS), len(TEXTS))]  # no batch was run
    np.testing.assert_array_equal(first, second)
    assert files[0].stat().st_mtime_ns == mtime

    # proof that the file is what is read: replace its content with a marker array (written through the
    # cache, so its checksum is valid): a row per distinct text, the repeated "Hi" read twice from its one row
    marker = np.arange(len(set(TEXTS)), dtype=np.float32)[:, None] * np.ones((1, first.shape[1]), np.float32)
    tmp_cache.put(files[0].stem, marker)
    got = encode(encoder, TEXTS, "mean", cache=tmp_cache)
    np.testing.assert_array_equal(got[:, 0], [sorted(set(TEXTS)).index(t) for t in TEXTS])  # the rows, sorted


def test_cache_key_depends_on_texts_pooling_and_max_length(encoder, tmp_cache: ArrayCache) -> None:
    encode(encoder, TEXTS[:3], "mean", cache=tmp_cache)
    encode(encoder, TEXTS[:3], "cls", cache=tmp_cache)
    encode(encoder, TEXTS[:3], "mean", config=EmbedConfig(max_length=16), cache=tmp_cache)
    encode(encoder, TEXTS[1:4], "mean", cache=tmp_cache)
    encode(encoder, TEXTS[:3], "mean", config=EmbedConfig(batch_size=2), cache=tmp_cache)  # same key as the first
    assert len(list(tmp_cache.root.glob("*.npy"))) == 4


def test_encode_many_mixes_hits_and_misses(encoder, tmp_cache: ArrayCache) -> None:
    encode(encoder, TEXTS, "mean", cache=tmp_cache)
    calls, progress = _counting()
    got = encode_many(encoder, TEXTS, ["mean", "cls"], config=SMALL, progress=progress, cache=tmp_cache)
    assert len(calls) > 1  # cls had to be computed
    # other batches (SMALL vs the default) pad and split the sums differently: float32 round-off through
    # 6 layers of 384-wide sums is a few hundred ulps of these O(1) values, hence 1e-5 as elsewhere here
    np.testing.assert_allclose(got["cls"], encode(encoder, TEXTS, "cls"), atol=1e-5)
    calls.clear()
    encode_many(encoder, TEXTS, ["cls", "mean"], config=SMALL, progress=progress, cache=tmp_cache)
    assert calls == [(len(TEXTS), len(TEXTS))]


def _write_pickled(path: Path) -> None:
    tmp = path.with_name("pickled.npy")
    np.save(tmp, np.array([{"payload": 1}], dtype=object), allow_pickle=True)
    tmp.replace(path)


CORRUPT = {
    "truncated": lambda p: p.write_bytes(p.read_bytes()[:100]),
    "wrong_rows": lambda p: np.save(p, np.ones((3, 384), np.float32)),
    "wrong_cols": lambda p: np.save(p, np.ones((DISTINCT, 10), np.float32)),
    "pickled_object_array": _write_pickled,
    "raw_pickle": lambda p: p.write_bytes(pickle.dumps({"payload": 1})),
    "nan": lambda p: np.save(p, np.full((DISTINCT, 384), np.nan, np.float32)),
}


@pytest.mark.parametrize("kind", sorted(CORRUPT))
def test_corrupt_cache_file_is_dropped_and_recomputed(encoder, tmp_cache: ArrayCache, kind: str) -> None:
    good = encode(encoder, TEXTS, "mean", config=SMALL, cache=tmp_cache)
    (path,) = tmp_cache.root.glob("*.npy")
    CORRUPT[kind](path)
    calls, progress = _counting()
    again = encode(encoder, TEXTS, "mean", config=SMALL, progress=progress, cache=tmp_cache)
    assert len(calls) > 1  # recomputed, not read
    np.testing.assert_allclose(again, good, atol=1e-6)
    assert again.dtype == np.float32
    first = [TEXTS.index(t) for t in sorted(set(TEXTS))]  # an entry holds a row per distinct text, sorted
    np.testing.assert_array_equal(np.load(path, allow_pickle=False), again[first])  # the bad file was replaced


def test_float64_cache_file_comes_back_float32(encoder, tmp_cache: ArrayCache) -> None:
    good = encode(encoder, TEXTS, "mean", cache=tmp_cache)
    (path,) = tmp_cache.root.glob("*.npy")
    np.save(path, np.load(path).astype(np.float64))
    again = encode(encoder, TEXTS, "mean", cache=tmp_cache)
    assert again.dtype == np.float32
    np.testing.assert_array_equal(again, good)


def test_unwritable_cache_does_not_break_encoding(encoder, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    out = encode(encoder, TEXTS[:2], "mean", cache=ArrayCache(blocker / "sub"))
    assert out.shape == (2, 384)


def test_companions_cache_every_pooling_of_the_same_pass(encoder, tmp_cache: ArrayCache) -> None:
    """The dashboard's way: one pass for 'mean' also caches cls, max, ... and every layer, so moving to another
    pooling of the same texts runs no batch, and gives what a pass of its own gives."""
    calls, progress = _counting()
    encode_many(encoder, TEXTS, ["mean"], config=SMALL, progress=progress, cache=tmp_cache, companions=True)
    assert len(calls) > 1
    calls.clear()
    others = ["cls", "max", "layer:0", f"layer:{encoder.num_layers}", "first_last_avg"]
    got = encode_many(encoder, TEXTS, others, config=SMALL, progress=progress, cache=tmp_cache, companions=True)
    assert calls == [(len(TEXTS), len(TEXTS))]  # every one read from the cache
    own = encode_many(encoder, TEXTS, others, config=SMALL)  # the same batches, no cache: the same arithmetic
    for name in others:
        np.testing.assert_array_equal(got[name], own[name])


def test_companions_fit_a_byte_budget_and_skip_other_precisions(encoder) -> None:
    from isoscope.encode import embed

    every = [s.name for s in embed.companion_poolings(encoder, 10)]
    assert every[:6] == ["model", "cls", "mean", "max", "last2avg", "first_last_avg"]  # the recipe first
    assert every[-1] == f"layer:{encoder.num_layers}"
    one = 4 * encoder.hidden_size  # bytes of one float32 row
    n = embed.COMPANION_BYTES // (3 * one)  # room for three arrays of n rows
    assert len(embed.companion_poolings(encoder, n)) == 3
    assert embed.companion_poolings(encoder, 100 * n) == []
    int8 = dataclasses.replace(encoder, precision="int8")
    assert embed.companion_poolings(int8, 10) == []


def test_a_second_caller_waits_for_the_pass_and_reads_it(encoder, tmp_cache: ArrayCache) -> None:
    """Two callers (two xdist workers, two app processes) asking for the same cold texts: the second waits on
    the cache's lock while the first computes, then reads what it wrote instead of computing it again."""
    import threading

    texts = [f"{t} (take {i})" for i in range(12) for t in TEXTS]  # (132,) several batches of 4
    started = threading.Event()
    first_calls: list[tuple[int, int]] = []

    def first_progress(done: int, total: int) -> None:
        first_calls.append((done, total))
        started.set()
        time.sleep(0.01)  # keeps the pass going while the second caller arrives

    out: dict[str, np.ndarray] = {}
    a = threading.Thread(
        target=lambda: out.update(
            a=encode_many(encoder, texts, ["mean"], config=SMALL, progress=first_progress, cache=tmp_cache)["mean"]
        )
    )
    a.start()
    assert started.wait(60)
    second_calls, second_progress = _counting()
    b = encode_many(encoder, texts, ["mean"], config=SMALL, progress=second_progress, cache=ArrayCache(tmp_cache.root))[
        "mean"
    ]
    a.join()
    assert len(first_calls) > 2 and second_calls == [(len(texts), len(texts))]  # the second ran no batch
    np.testing.assert_array_equal(b, out["a"])


# ---------------------------------------------------------------- each distinct text once; the entries' names


class ForwardRows:
    """The rows (texts) of every forward pass through ``model``, counted by a forward hook on the real module."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.rows: list[int] = []
        self.handle = model.register_forward_hook(self.record, with_kwargs=True)

    def record(self, module, args, kwargs, output) -> None:
        ids = kwargs.get("input_ids", args[0] if args else None)
        self.rows.append(int(ids.shape[0]))

    def __enter__(self) -> ForwardRows:
        return self

    def __exit__(self, *exc: object) -> None:
        self.handle.remove()


def test_each_distinct_text_reaches_the_forward_pass_once(encoder, tmp_cache: ArrayCache) -> None:
    """Pairs repeat their sentences (``isoscope sts`` on STS-B: 19,854 texts, 6,077 distinct): the model embeds
    each distinct text once, every occurrence gets its row, and the cache holds a row per distinct text, which
    the distinct texts in any order read."""
    distinct = list(dict.fromkeys(TEXTS))
    texts = [*TEXTS, *reversed(TEXTS), TEXTS[2]]  # every text two or more times
    with ForwardRows(encoder.model) as seen:
        got = encode_many(encoder, texts, ["mean", "cls"], config=SMALL)
    assert sum(seen.rows) == len(distinct) < len(texts)
    own = encode_many(encoder, distinct, ["mean", "cls"], config=SMALL)  # the same batches: the same arithmetic
    for name in ("mean", "cls"):
        np.testing.assert_array_equal(got[name], own[name][[distinct.index(t) for t in texts]])
    with ForwardRows(encoder.model) as seen:
        encode(encoder, texts, "mean", config=SMALL, cache=tmp_cache)
    assert sum(seen.rows) == len(distinct)
    (entry,) = tmp_cache.root.glob("*.npy")
    assert np.load(entry).shape == (len(distinct), encoder.hidden_size)
    with ForwardRows(encoder.model) as seen:  # the distinct texts alone are the same entry
        np.testing.assert_array_equal(encode(encoder, distinct, "mean", cache=tmp_cache), own["mean"])
    assert seen.rows == []


def test_entries_are_named_by_the_cut_not_the_max_length(encoder, tmp_cache: ArrayCache) -> None:
    """Two max lengths above the longest text compute the same vectors: the second reads the first's entry (the
    app's 128 tokens and the command line's 256, on short sentences). Where a text is cut, each max length has
    its own entry."""
    short = TEXTS[:2]  # under 16 tokens
    longest = max(len(ids) for ids in encoder.tokenizer(TEXTS)["input_ids"])
    assert longest < 128
    first = encode(encoder, TEXTS, "mean", config=EmbedConfig(max_length=128), cache=tmp_cache)
    with ForwardRows(encoder.model) as seen:
        again = encode(encoder, TEXTS, "mean", config=EmbedConfig(max_length=256), cache=tmp_cache)
        np.testing.assert_array_equal(again, first)
        encode(encoder, TEXTS, "mean", config=EmbedConfig(max_length=longest + 1), cache=tmp_cache)
    assert seen.rows == []
    with ForwardRows(encoder.model) as seen:  # the longest text fills the limit: cut, or maybe: its own entry
        at_limit = encode(encoder, TEXTS, "mean", config=EmbedConfig(max_length=longest), cache=tmp_cache)
        cut = encode(encoder, TEXTS, "mean", config=EmbedConfig(max_length=16), cache=tmp_cache)
        encode(encoder, short, "mean", config=EmbedConfig(max_length=16), cache=tmp_cache)
    assert len(seen.rows) == 3
    np.testing.assert_allclose(at_limit, first, atol=1e-5)  # nothing was cut at its own length
    assert not np.allclose(cut, first, atol=1e-3)
    with ForwardRows(encoder.model) as seen:
        np.testing.assert_array_equal(encode(encoder, TEXTS, "mean", config=EmbedConfig(max_length=16)), cut)
        encode(encoder, short, "mean", config=EmbedConfig(max_length=64), cache=tmp_cache)
    assert len(seen.rows) > 0 and sum(seen.rows) == len(set(TEXTS))  # no cache, then a hit for the short ones
    assert len(list(tmp_cache.root.glob("*.npy"))) == 4  # whole, cut at the longest, cut at 16, the short ones
