"""Word-frequency bias of token embeddings: norm and neighbourhood density by frequency rank.

Li et al. (2020, BERT-flow, Table 1) showed that in BERT's token embedding space frequent tokens have
small L2 norms and sit close to each other (small distance to their k nearest neighbours), while rare
tokens have large norms and are scattered. Since sentence vectors are built from token vectors, this
frequency signal leaks into sentence similarity. This module reproduces that analysis for any encoder:

1. count token frequencies over a corpus with the model's own tokenizer (special tokens excluded) and
   rank token ids by count (rank 0 = most frequent);
2. take token vectors, either the *static* input embedding matrix (one row per token id that occurs in
   the corpus) or *contextual* vectors of one layer (one point per sampled occurrence, or one averaged
   point per token id);
3. per point: L2 norm and mean L2 distance to its ``k`` nearest points of *other* token ids;
4. per token id: the mean over its points; per frequency-rank bucket (default 0-100, 100-500, 500-5k,
   5k+): the mean over its token ids; Spearman (x100) of norm and of kNN distance with the count;
5. optionally the same after calibration.

Calibration of token vectors (documented choice): the calibrator is *fitted on the token points being
analysed* (a seeded subset of at most ``fit_max`` of them) and applied to all of them. A sentence-level calibrator is fitted on pooled sentence vectors, a
different distribution (and, for the static matrix, a different layer); pushing token vectors through it
would measure the calibrator off its training distribution. Fitting on the token points asks the question
that matters here: once this space is made isotropic, do norm and density still encode frequency?
In ``occurrence`` mode every token id contributes at most ``per_token`` points, so the fit is not
dominated by a few very frequent tokens. Absolute norms change scale under calibration (whitened vectors
have norms near ``sqrt(d)``); compare the ``rel_norm``/``rel_knn_dist`` columns and the correlations.

Caveat of ``mean`` mode: averaging the contextual vectors of a token over many contexts shrinks the
average towards the centre, so frequent tokens get smaller norms *because* they are averaged over more
occurrences. ``occurrence`` mode (the default) computes norms per occurrence and has no such artefact.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from isoscope.errors import InputError
from isoscope.geometry.lexical import spearman_x100
from isoscope.geometry.options import CONTEXTUAL_MODES, SPACES, ContextualMode
from isoscope.sampling import sample_indices

if TYPE_CHECKING:  # torch, transformers and pandas are imported where they are used, not to parse options
    import pandas as pd

    from isoscope.encode.embed import EmbedConfig, ProgressFn
    from isoscope.encode.models import Encoder

log = logging.getLogger(__name__)

__all__ = [
    "CONTEXTUAL_MODES",
    "DEFAULT_EDGES",
    "KNN_BACKENDS",
    "SPACES",
    "FrequencyConfig",
    "FrequencyResult",
    "TokenPoints",
    "assign_buckets",
    "bucket_labels",
    "calibrate_points",
    "contextual_token_points",
    "count_tokens",
    "frequency_analysis",
    "frequency_table",
    "is_calibrated",
    "knn_mean_distance",
    "parse_edges",
    "static_embeddings",
    "static_token_points",
    "token_geometry",
]

DEFAULT_EDGES: tuple[int, ...] = (0, 100, 500, 5000)
_TEXT_CHUNK = 512  # texts per token_vectors call, to bound memory of per-token vectors
_KNN_BLOCK_ENTRIES = 1 << 23  # entries of one (rows, m) distance block (64 MiB in float64)

CalibratorSpec = str | Callable[[], Any] | None


@dataclass
class FrequencyConfig:
    """Settings of one frequency analysis."""

    k: int = 3  # neighbours for the kNN distance
    edges: tuple[int, ...] = DEFAULT_EDGES  # rank bucket edges; the last bucket is open
    layer: int = -1  # hidden state used for contextual vectors (0 = embedding output)
    mode: ContextualMode = "occurrence"  # contextual points: sampled occurrences, or one mean per token id
    per_token: int = 5  # occurrence mode: at most this many sampled occurrences per token id
    fit_max: int = 10_000  # the token calibrator is fitted on at most this many points (seeded subset)
    seed: int = 0


@dataclass
class TokenPoints:
    """Token vectors with the token id of each point (ids repeat in occurrence mode)."""

    token_ids: np.ndarray  # (m,) int64
    vectors: np.ndarray  # (m, d)

    def __post_init__(self) -> None:
        self.token_ids = np.asarray(self.token_ids, np.int64)
        self.vectors = np.asarray(self.vectors)
        if self.vectors.ndim != 2 or self.vectors.shape[0] != self.token_ids.shape[0]:
            raise InputError(
                f"token points need vectors of shape (m, d) and m ids; got {self.vectors.shape} and "
                f"{self.token_ids.shape}"
            )


@dataclass
class FrequencyResult:
    """Tidy outputs: one row per token, per bucket and per (space, stage) correlation."""

    tokens: pd.DataFrame  # space, stage, token_id, token, count, rank, bucket, n_points, norm, knn_dist
    buckets: pd.DataFrame  # space, stage, bucket, rank_lo, rank_hi, n_tokens, occurrences, mean/std ...
    correlations: pd.DataFrame  # space, stage, n_tokens, spearman_norm_count, spearman_knn_count
    counts: pd.DataFrame  # token_id, token, count, rank over the whole corpus
    config: FrequencyConfig = field(default_factory=FrequencyConfig)


# ---------------------------------------------------------------- counting and ranks


def count_tokens(
    tokenizer: Any,
    texts: Iterable[str],
    *,
    max_length: int | None = None,
    batch_size: int = 1000,
    progress: ProgressFn | None = None,
) -> Counter[int]:
    """Occurrences of each token id in ``texts``, tokenized as the model sees them, special tokens excluded.

    ``max_length`` truncates each text to that many tokens *including* the special tokens the model would
    add, so counts match what :func:`isoscope.encode.embed.token_vectors` sees; ``None`` counts every token.
    """
    texts = [str(t) for t in texts]
    special = set(tokenizer.all_special_ids)
    counts: Counter[int] = Counter()
    for start in range(0, len(texts), batch_size):
        chunk = texts[start : start + batch_size]
        if max_length is None:
            enc = tokenizer(chunk, add_special_tokens=False)
        else:
            enc = tokenizer(chunk, add_special_tokens=True, truncation=True, max_length=max_length)
        for ids in enc["input_ids"]:
            counts.update(i for i in ids if i not in special)
        if progress is not None:
            progress(min(start + batch_size, len(texts)), len(texts))
    return counts


def frequency_table(counts: Counter[int] | dict[int, int], tokenizer: Any = None) -> pd.DataFrame:
    """Token ids sorted by count, with their rank: columns ``token_id, token, count, rank``.

    ``rank`` 0 is the most frequent token; ties are broken by token id so ranks are deterministic.
    ``token`` is the tokenizer's string for the id (empty without a tokenizer).
    """
    import pandas as pd

    ids = np.fromiter(counts.keys(), np.int64, len(counts))  # (v,)
    cnt = np.fromiter(counts.values(), np.int64, len(counts))  # (v,)
    if (cnt < 1).any():
        raise InputError("token counts must be positive integers")
    order = np.lexsort((ids, -cnt))  # by count descending, then id ascending
    ids, cnt = ids[order], cnt[order]
    tokens = tokenizer.convert_ids_to_tokens(ids.tolist()) if tokenizer is not None and len(ids) else [""] * len(ids)
    return pd.DataFrame({"token_id": ids, "token": tokens, "count": cnt, "rank": np.arange(len(ids), dtype=np.int64)})


def parse_edges(edges: str | Sequence[int] | None) -> tuple[int, ...]:
    """Bucket edges as a strictly increasing tuple starting at 0 ("100,500,5000" and (0, 100, ...) both work)."""
    if edges is None:
        return DEFAULT_EDGES
    if isinstance(edges, str):
        parts = [p.strip().lower() for p in edges.split(",") if p.strip()]
        try:
            values = [int(float(p[:-1]) * 1000) if p.endswith("k") else int(p) for p in parts]
        except ValueError:
            raise InputError(
                f"rank edges '{edges}' must be integers separated by commas, e.g. 0,100,500,5000"
            ) from None
    else:
        values = [int(v) for v in edges]
    if not values or values[0] != 0:
        values = [0, *values]
    if any(v < 0 for v in values) or any(b <= a for a, b in pairwise(values)):
        raise InputError(f"rank edges must be non-negative and strictly increasing, e.g. 0,100,500,5000; got {values}")
    return tuple(values)


def _fmt_rank(r: int) -> str:
    if r >= 1000 and r % 100 == 0:
        return f"{r / 1000:g}k"
    return str(r)


def bucket_labels(edges: Sequence[int] = DEFAULT_EDGES) -> list[str]:
    """Labels such as ``0-100, 100-500, 500-5k, 5k+`` (each bucket is ``lo <= rank < hi``)."""
    edges = parse_edges(edges)
    labels = [f"{_fmt_rank(lo)}-{_fmt_rank(hi)}" for lo, hi in pairwise(edges)]
    return [*labels, f"{_fmt_rank(edges[-1])}+"]


def assign_buckets(ranks: np.ndarray, edges: Sequence[int] = DEFAULT_EDGES) -> np.ndarray:
    """Bucket index of each rank: ``i`` such that ``edges[i] <= rank < edges[i + 1]`` (last bucket open)."""
    edges = parse_edges(edges)
    ranks = np.asarray(ranks, np.int64)
    if (ranks < 0).any():
        raise InputError("ranks must be >= 0")
    return np.searchsorted(np.asarray(edges), ranks, side="right") - 1  # (n,)


# ---------------------------------------------------------------- geometry of points


KnnBackend = Literal["auto", "faiss", "numpy"]
KNN_BACKENDS: tuple[str, ...] = ("auto", "faiss", "numpy")


def knn_mean_distance(
    X: np.ndarray, k: int = 3, *, groups: np.ndarray | None = None, backend: KnnBackend = "auto"
) -> np.ndarray:
    """Mean L2 distance from each row to its ``k`` nearest rows of a *different* group.

    ``groups`` (one label per row, e.g. the token id) defaults to every row in its own group, which is
    the usual kNN excluding the point itself. Exact brute force either way:

    - ``faiss``: ``IndexFlatL2`` (float32) asked for ``k + g`` neighbours, ``g`` the largest group size;
      at most ``g`` of them share the row's group, so the ``k`` nearest others are among them;
    - ``numpy``: float64 row blocks of ``||x - y||^2 = ||x||^2 + ||y||^2 - 2 x.y`` (clipped at 0) with
      same-group entries masked, so memory stays bounded;
    - ``auto``: faiss when it is installed, else numpy.

    Returns ``(m,)`` float64.
    """
    X = np.asarray(X, np.float64)  # (m, d)
    if X.ndim != 2:
        raise InputError(f"vectors must have shape (m, d); got ndim={X.ndim}")
    if not np.isfinite(X).all():
        raise InputError("token vectors contain NaN or inf")
    if backend not in KNN_BACKENDS:
        raise InputError(f"unknown kNN backend '{backend}'; choose one of {', '.join(KNN_BACKENDS)}")
    m = X.shape[0]
    groups = np.arange(m) if groups is None else np.asarray(groups)
    if groups.shape != (m,):
        raise InputError(f"groups must have one label per row ({m}); got shape {groups.shape}")
    if int(k) < 1:
        raise InputError(f"k must be >= 1; got {k}")
    _, inverse, sizes = np.unique(groups, return_inverse=True, return_counts=True)
    if len(sizes) <= k:
        raise InputError(f"need more than k={k} distinct tokens to find {k} neighbours; got {len(sizes)}")
    if backend in ("auto", "faiss"):
        return _knn_faiss(X, int(k), inverse, int(sizes.max()))
    return _knn_numpy(X, int(k), inverse)


def _knn_faiss(X: np.ndarray, k: int, groups: np.ndarray, max_group: int) -> np.ndarray:
    import faiss

    Xf = np.ascontiguousarray(X, dtype=np.float32)  # (m, d)
    index = faiss.IndexFlatL2(Xf.shape[1])
    index.add(Xf)
    want = min(k + max_group, Xf.shape[0])
    out = np.empty(Xf.shape[0], np.float64)  # (m,)
    step = max(1, _KNN_BLOCK_ENTRIES // (8 * want))
    for start in range(0, Xf.shape[0], step):
        d2, idx = index.search(Xf[start : start + step], want)  # (b, want) squared distances, ascending
        other = (idx >= 0) & (groups[np.clip(idx, 0, None)] != groups[start : start + step, None])  # (b, want)
        d2 = np.where(other, np.maximum(d2.astype(np.float64), 0.0), np.inf)
        nearest = np.sort(d2, axis=1)[:, :k]  # (b, k)
        out[start : start + step] = np.sqrt(nearest).mean(axis=1)
    return out


def _knn_numpy(X: np.ndarray, k: int, groups: np.ndarray) -> np.ndarray:
    m = X.shape[0]
    sq = np.einsum("nd,nd->n", X, X)  # (m,)
    out = np.empty(m, np.float64)  # (m,)
    rows_per_block = max(1, _KNN_BLOCK_ENTRIES // m)
    for start in range(0, m, rows_per_block):
        stop = min(start + rows_per_block, m)
        d2 = sq[start:stop, None] + sq[None, :] - 2.0 * (X[start:stop] @ X.T)  # (b, m)
        np.maximum(d2, 0.0, out=d2)
        d2[groups[start:stop, None] == groups[None, :]] = np.inf
        nearest = np.partition(d2, k - 1, axis=1)[:, :k]  # (b, k)
        out[start:stop] = np.sqrt(nearest).mean(axis=1)
    return out


def token_geometry(
    points: TokenPoints,
    counts: pd.DataFrame | Counter[int] | dict[int, int],
    k: int = 3,
    *,
    edges: Sequence[int] = DEFAULT_EDGES,
) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, float]]:
    """Norm and kNN distance per token id, the bucket table and the Spearman correlations.

    ``counts`` is a :func:`frequency_table` (token_id, token, count, rank); every point's token id must be
    in it. Per point: ``norm = ||v||`` and ``knn = mean of the k smallest ||v - u||`` over points ``u`` of
    other token ids. Per token id: the means over its points. Per bucket: means (and standard deviations)
    over token ids, each token id weighing the same, as in BERT-flow Table 1; ``rel_norm`` and
    ``rel_knn_dist`` divide by the mean over all token ids, so buckets can be compared across spaces and
    calibrations. Correlations are Spearman x100 over token ids of norm (and kNN distance) with count:
    a negative ``spearman_norm_count`` says frequent tokens have *smaller* norms, a negative
    ``spearman_knn_count`` that they sit in *denser* neighbourhoods (the BERT-flow finding).
    ``counts`` may also be a ``Counter`` of token ids (then token strings are empty).

    Returns ``(tokens, buckets, correlations)``.
    """
    import pandas as pd

    edges = parse_edges(edges)
    if not isinstance(counts, pd.DataFrame):
        counts = frequency_table(counts)
    ids = points.token_ids
    table = counts.set_index("token_id")
    missing = ~np.isin(ids, table.index.to_numpy())
    if missing.any():
        raise InputError(f"{int(missing.sum())} token point(s) have ids absent from the frequency table")
    norms = np.linalg.norm(np.asarray(points.vectors, np.float64), axis=1)  # (m,)
    knn = knn_mean_distance(points.vectors, k=k, groups=ids)  # (m,)
    per_point = pd.DataFrame({"token_id": ids, "norm": norms, "knn_dist": knn})
    agg = per_point.groupby("token_id", sort=False).agg(
        n_points=("norm", "size"), norm=("norm", "mean"), knn_dist=("knn_dist", "mean")
    )
    tokens = table.loc[agg.index, ["token", "count", "rank"]].join(agg).reset_index()
    tokens = tokens.sort_values("rank", kind="stable").reset_index(drop=True)
    labels = bucket_labels(edges)
    tokens.insert(4, "bucket", [labels[i] for i in assign_buckets(tokens["rank"].to_numpy(), edges)])
    tokens = tokens[["token_id", "token", "count", "rank", "bucket", "n_points", "norm", "knn_dist"]]
    buckets = _bucket_table(tokens, edges)
    corr = {
        "n_tokens": len(tokens),
        "spearman_norm_count": spearman_x100(tokens["norm"], tokens["count"]),
        "spearman_knn_count": spearman_x100(tokens["knn_dist"], tokens["count"]),
    }
    return tokens, buckets, corr


def _bucket_table(tokens: pd.DataFrame, edges: tuple[int, ...]) -> pd.DataFrame:
    import pandas as pd

    labels = bucket_labels(edges)
    mean_norm, mean_knn = float(tokens["norm"].mean()), float(tokens["knn_dist"].mean())
    rows = []
    for i, label in enumerate(labels):
        sel = tokens[tokens["bucket"] == label]
        norm_mean = float(sel["norm"].mean()) if len(sel) else float("nan")
        knn_mean = float(sel["knn_dist"].mean()) if len(sel) else float("nan")
        rows.append(
            {
                "bucket": label,
                "rank_lo": edges[i],
                "rank_hi": edges[i + 1] if i + 1 < len(edges) else None,
                "n_tokens": len(sel),
                "occurrences": int(sel["count"].sum()),
                "mean_norm": norm_mean,
                "std_norm": float(sel["norm"].std(ddof=0)) if len(sel) else float("nan"),
                "mean_knn_dist": knn_mean,
                "std_knn_dist": float(sel["knn_dist"].std(ddof=0)) if len(sel) else float("nan"),
                "rel_norm": norm_mean / mean_norm if mean_norm > 0 else float("nan"),
                "rel_knn_dist": knn_mean / mean_knn if mean_knn > 0 else float("nan"),
            }
        )
    return pd.DataFrame(rows)


# ---------------------------------------------------------------- token vectors


def static_embeddings(encoder: Encoder) -> np.ndarray:
    """The input (word-piece) embedding matrix, ``(vocab, d)`` float32."""
    return encoder.model.get_input_embeddings().weight.detach().float().cpu().numpy()


def static_token_points(encoder: Encoder, token_ids: Sequence[int] | np.ndarray) -> TokenPoints:
    """Rows of the input embedding matrix for ``token_ids`` (one point per id)."""
    ids = np.asarray(token_ids, np.int64)
    matrix = static_embeddings(encoder)  # (V, d)
    if len(ids) and (ids.min() < 0 or ids.max() >= matrix.shape[0]):
        raise InputError(f"token ids must be in [0, {matrix.shape[0]}) for this model")
    return TokenPoints(ids, matrix[ids])


def contextual_token_points(
    encoder: Encoder,
    texts: Sequence[str],
    *,
    layer: int = -1,
    mode: ContextualMode = "occurrence",
    per_token: int = 5,
    seed: int = 0,
    config: EmbedConfig | None = None,
    progress: ProgressFn | None = None,
) -> TokenPoints:
    """Contextual token vectors of ``layer`` over ``texts`` (special tokens excluded).

    ``occurrence``: up to ``per_token`` occurrences per token id, drawn uniformly at random (seeded)
    among all its occurrences; rare tokens keep all of theirs. ``mean``: one point per token id, the mean
    of its vectors over all occurrences. Texts are processed in chunks so memory stays bounded.
    """
    from isoscope.encode.embed import token_vectors

    if mode not in CONTEXTUAL_MODES:
        raise InputError(f"unknown contextual mode '{mode}'; choose one of {', '.join(CONTEXTUAL_MODES)}")
    if int(per_token) < 1:
        raise InputError(f"per_token must be >= 1; got {per_token}")
    texts = list(texts)
    special = np.asarray(sorted(encoder.tokenizer.all_special_ids), np.int64)
    rng = np.random.default_rng(seed)
    kept_ids = np.empty(0, np.int64)
    kept_keys = np.empty(0, np.float64)
    kept_vecs = np.empty((0, encoder.hidden_size), np.float32)
    sums: dict[int, np.ndarray] = {}
    nums: Counter[int] = Counter()
    for start in range(0, len(texts), _TEXT_CHUNK):
        chunk = texts[start : start + _TEXT_CHUNK]
        tv = token_vectors(encoder, chunk, layer=layer, config=config)
        ids = np.concatenate(tv.token_ids) if chunk else np.empty(0, np.int64)  # (t,)
        vecs = np.concatenate(tv.vectors) if chunk else np.empty((0, encoder.hidden_size), np.float32)  # (t, d)
        real = ~np.isin(ids, special)
        ids, vecs = ids[real].astype(np.int64), vecs[real]
        if mode == "mean":
            _add_means(sums, nums, ids, vecs)
        else:
            kept_ids, kept_keys, kept_vecs = _reservoir(
                (kept_ids, kept_keys, kept_vecs), ids, vecs, rng=rng, per_token=per_token
            )
        if progress is not None:
            progress(min(start + _TEXT_CHUNK, len(texts)), len(texts))
    if mode == "mean":
        tids = np.asarray(sorted(sums), np.int64)
        vectors = np.stack([sums[t] / nums[t] for t in tids.tolist()]) if len(tids) else kept_vecs
        return TokenPoints(tids, vectors.astype(np.float32))
    order = np.lexsort((kept_keys, kept_ids))
    return TokenPoints(kept_ids[order], kept_vecs[order])


def _add_means(sums: dict[int, np.ndarray], nums: Counter[int], ids: np.ndarray, vecs: np.ndarray) -> None:
    """Add one chunk's token vectors ``vecs`` (t, d) of ``ids`` (t,) to the per-id sums and counts."""
    uniq, inv = np.unique(ids, return_inverse=True)
    chunk_sum = np.zeros((len(uniq), vecs.shape[1]), np.float64)  # (u, d)
    np.add.at(chunk_sum, inv, vecs)
    for row, tid in enumerate(uniq.tolist()):
        sums[tid] = sums[tid] + chunk_sum[row] if tid in sums else chunk_sum[row]
    nums.update(ids.tolist())


def _reservoir(kept: tuple, ids: np.ndarray, vecs: np.ndarray, *, rng: np.random.Generator, per_token: int) -> tuple:
    """Reservoir by random priority: keep, per id, the ``per_token`` occurrences with the smallest keys, of the
    ``kept`` (ids, keys, vectors) so far and one chunk's ``ids`` (t,) and ``vecs`` (t, d)."""
    kept_ids, kept_keys, kept_vecs = kept
    all_ids = np.concatenate([kept_ids, ids])
    all_keys = np.concatenate([kept_keys, rng.random(len(ids))])
    all_vecs = np.concatenate([kept_vecs, vecs.astype(np.float32)])
    order = np.lexsort((all_keys, all_ids))
    sorted_ids = all_ids[order]
    first = np.searchsorted(sorted_ids, sorted_ids, side="left")  # (t,) start of each id's run
    keep = order[(np.arange(len(order)) - first) < per_token]
    return all_ids[keep], all_keys[keep], all_vecs[keep]


# ---------------------------------------------------------------- calibration


def _new_calibrator(spec: CalibratorSpec) -> Any:
    """A fresh, unfitted calibrator from a method string (``isoscope.calibrate.make_calibrator``) or a factory."""
    if callable(spec):
        return spec()
    from isoscope.calibrate import make_calibrator

    return make_calibrator(str(spec))


def is_calibrated(spec: CalibratorSpec) -> bool:
    """False for ``None``, empty or ``"none"``."""
    return spec is not None and not (isinstance(spec, str) and spec.strip().lower() in ("", "none"))


def calibrate_points(
    points: TokenPoints, calibrator: CalibratorSpec, *, fit_max: int | None = None, seed: int = 0
) -> TokenPoints:
    """Fit a fresh calibrator on the token points and return all of them transformed (see module docs).

    With more than ``fit_max`` points the calibrator is fitted on a seeded uniform subset of ``fit_max``
    of them (a 10k-point fit pins down a covariance in a few hundred dimensions well, and keeps a flow's
    training time bounded); every point is transformed.
    """
    cal = _new_calibrator(calibrator)
    X = np.asarray(points.vectors, np.float32)  # (m, d)
    fit_on = X
    if fit_max is not None and len(X) > fit_max:
        if int(fit_max) < 2:
            raise InputError(f"fit_max must be >= 2; got {fit_max}")
        fit_on = X[sample_indices(len(X), fit_max, seed)]  # (fit_max, d)
    log.info(
        "frequency: fitting %s on %d of %d token points", getattr(cal, "method", "calibrator"), len(fit_on), len(X)
    )
    Z = np.asarray(cal.fit(fit_on).transform(X), np.float64)  # (m, d')
    return TokenPoints(points.token_ids, Z)


# ---------------------------------------------------------------- whole analysis


def frequency_analysis(
    encoder: Encoder,
    texts: Sequence[str],
    *,
    spaces: Sequence[str] = SPACES,
    calibrator: CalibratorSpec = None,
    config: FrequencyConfig | None = None,
    embed_config: EmbedConfig | None = None,
    progress: ProgressFn | None = None,
) -> FrequencyResult:
    """BERT-flow Table 1 for ``encoder`` over ``texts``: per space (static, contextual) and stage (raw,
    calibrated when ``calibrator`` is given), the per-token frame, the bucket table and the correlations.

    ``calibrator`` is a method string for ``isoscope.calibrate.make_calibrator`` (e.g. ``flow``,
    ``whitening``) or a factory returning an object with ``fit(X)`` / ``transform(X)``; a fresh one is
    fitted per space on that space's token points. ``progress`` reports texts done of the contextual pass.
    """
    import pandas as pd

    from isoscope.encode.embed import EmbedConfig

    config = config or FrequencyConfig()
    embed_config = embed_config or EmbedConfig()
    texts, counts = _counted(encoder, texts, spaces, k=config.k, max_length=embed_config.max_length)
    stages = ["raw", "calibrated"] if is_calibrated(calibrator) else ["raw"]
    tokens_parts, bucket_parts, corr_rows = [], [], []
    for space in spaces:
        points = _space_points(
            space, encoder, texts, counts, config=config, embed_config=embed_config, progress=progress
        )
        for stage in stages:
            pts = (
                points
                if stage == "raw"
                else calibrate_points(points, calibrator, fit_max=config.fit_max, seed=config.seed)
            )
            tok, buck, corr = token_geometry(pts, counts, k=config.k, edges=config.edges)
            for frame in (tok, buck):
                frame.insert(0, "stage", stage)
                frame.insert(0, "space", space)
            tokens_parts.append(tok)
            bucket_parts.append(buck)
            corr_rows.append({"space": space, "stage": stage, **corr})
    return FrequencyResult(
        tokens=pd.concat(tokens_parts, ignore_index=True),
        buckets=pd.concat(bucket_parts, ignore_index=True),
        correlations=pd.DataFrame(corr_rows),
        counts=counts,
        config=config,
    )


def _counted(encoder: Encoder, texts: Sequence[str], spaces: Sequence[str], *, k: int, max_length: int):
    """The non-blank texts and their token frequency table, after checking the spaces and the corpus's size."""
    bad = [s for s in spaces if s not in SPACES]
    if bad or not spaces:
        raise InputError(f"unknown token space(s) {bad or spaces}; choose from {', '.join(SPACES)}")
    texts = [t for t in texts if str(t).strip()]
    if not texts:
        raise InputError("no texts to count tokens in; give a non-empty corpus")
    counts = frequency_table(count_tokens(encoder.tokenizer, texts, max_length=max_length), encoder.tokenizer)
    if len(counts) <= k:
        raise InputError(f"the corpus has {len(counts)} distinct token(s); need more than k={k}")
    log.info("frequency: %d texts, %d distinct tokens", len(texts), len(counts))
    return texts, counts


def _space_points(space: str, encoder: Encoder, texts: list[str], counts, *, config, embed_config, progress):
    """The token points of one space: static (the input embedding matrix) or contextual."""
    if space == "static":
        return static_token_points(encoder, counts["token_id"].to_numpy())
    return contextual_token_points(
        encoder,
        texts,
        layer=config.layer,
        mode=config.mode,
        per_token=config.per_token,
        seed=config.seed,
        config=embed_config,
        progress=progress,
    )
