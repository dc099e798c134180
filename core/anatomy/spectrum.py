"""Embedding anatomy: the input embedding's spectrum, what a rank-k input embedding keeps, input vs output.

Chung et al. (2020), "Rethinking embedding coupling in pre-trained language models": a small input
embedding ``E_in`` with a projection to the hidden size (ALBERT, RemBERT) loses little. Here the trained
``V x d`` input embedding ``E`` of the loaded model is shrunk to rank ``k`` by truncated SVD,
``E ~ U_k S_k V_k^T`` (exactly what an ``E_in = k`` table ``U_k S_k`` with the projection ``V_k^T`` can
represent, at ``V k + k d`` parameters), the pairs are re-encoded, and the STS Spearman and the mean Jaccard
overlap of each sentence's 10 nearest neighbours with the full-rank ones are reported as functions of ``k``.

The table's values are swapped for each ``k`` and ALWAYS restored (``try``/``finally``: the original storage
is put back, nothing is copied over it); a lock serialises swaps in this process. Other code that runs the same model *during* a
shrink would see the approximation, so callers that share a model between threads should not run both at
once. Re-encoded vectors are cached only under a fingerprint that includes ``k``.

For a model with a masked-LM head (``BertForMaskedLM``) :func:`compare_input_output` compares the input and
output embeddings: tied or not, cosine of corresponding rows (same size only), their spectra, and whether
tokens keep the same similarity structure in both (Spearman of sampled token-pair cosines).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from isoscope.anatomy.poolings import unique_index
from isoscope.cache import ArrayCache, make_key
from isoscope.data import Pairs
from isoscope.encode.embed import EmbedConfig, ProgressFn, encode
from isoscope.encode.models import Encoder
from isoscope.encode.pooling import Pooling
from isoscope.errors import InputError
from isoscope.evaluate.similarity import sts_scores
from isoscope.geometry.metrics import effective_rank
from isoscope.geometry.pairs import cosine_pairs, l2_normalize, spearman_x100
from isoscope.linalg import eigh_descending
from isoscope.neighbours.exact import knn_table
from isoscope.neighbours.overlap import jaccard_tables

log = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_RANKS",
    "EmbeddingComparison",
    "EmbeddingSpectrum",
    "ShrinkResult",
    "compare_input_output",
    "default_ranks",
    "embedding_spectrum",
    "input_embedding_weight",
    "low_rank",
    "shrink_curve",
    "swapped_input_embedding",
]

DEFAULT_RANKS: tuple[int, ...] = (8, 16, 32, 64, 128)  # plus the full width, see default_ranks
NEIGHBORS = 10
_SWAP_LOCK = threading.Lock()


# ------------------------------------------------------------------ spectrum


def input_embedding_weight(model: torch.nn.Module) -> torch.nn.Parameter:
    """The word-embedding table ``(V, E_in)`` of a transformers model."""
    emb = model.get_input_embeddings()  # type: ignore[operator]
    if emb is None or not isinstance(getattr(emb, "weight", None), torch.Tensor):
        raise InputError(f"{type(model).__name__} has no input embedding table")
    return emb.weight


@dataclass
class EmbeddingSpectrum:
    """Singular values of an embedding table (uncentred, what truncated SVD keeps) and its effective rank."""

    shape: tuple[int, int]
    singular_values: np.ndarray  # (E,) descending, uncentred
    effective_rank: float  # exp(entropy) of the uncentred singular values (Roy & Vetterli, isoscope.geometry.metrics)
    effective_rank_centered: float  # same for the mean-centred table
    energy: np.ndarray  # (E,) cumulative fraction of the squared Frobenius norm kept at rank k = 1..E
    right_vectors: np.ndarray = dataclasses.field(repr=False, default_factory=lambda: np.zeros((0, 0)))  # (E, E)

    def to_dict(self) -> dict[str, object]:
        return {
            "shape": list(self.shape),
            "singular_values": self.singular_values.tolist(),
            "effective_rank": self.effective_rank,
            "effective_rank_centered": self.effective_rank_centered,
            "energy": self.energy.tolist(),
        }


def _gram_spectrum(G: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Singular values and right singular vectors (rows) from a Gram matrix ``W^T W`` of ``n`` rows. -> (E,), (E, E)."""
    eig, vec = eigh_descending(G, n)
    return np.sqrt(eig), vec.T


def embedding_spectrum(weight: torch.Tensor | np.ndarray) -> EmbeddingSpectrum:
    """Spectrum of a tall ``(V, E)`` table from ONE ``E x E`` Gram matrix (float64).

    ``W^T W = V S^2 V^T`` gives the singular values ``S`` and right singular vectors ``V``; the centred Gram
    is ``W^T W - V_rows mu mu^T``. The effective ranks are ``isoscope.geometry.metrics.effective_rank`` of ``diag(s)``,
    which has exactly the singular values ``s``.
    """
    W = _as_float64(weight)  # (V, E)
    if W.ndim != 2 or W.shape[0] < W.shape[1] or W.shape[1] < 1:
        raise InputError(f"expected a (vocabulary, width) table with more rows than columns, got {W.shape}")
    G = W.T @ W  # (E, E)
    s, Vt = _gram_spectrum(G, W.shape[0])
    mu = W.mean(axis=0)  # (E,)
    s_centered, _ = _gram_spectrum(G - W.shape[0] * np.outer(mu, mu), W.shape[0])
    return EmbeddingSpectrum(
        shape=(int(W.shape[0]), int(W.shape[1])),
        singular_values=s,
        effective_rank=effective_rank(np.diag(s), center=False),
        effective_rank_centered=effective_rank(np.diag(s_centered), center=False),
        energy=np.cumsum(s**2) / np.sum(s**2),
        right_vectors=Vt,
    )


def _as_float64(weight: torch.Tensor | np.ndarray) -> np.ndarray:
    if isinstance(weight, torch.Tensor):
        return weight.detach().to("cpu", torch.float64).numpy()
    return np.asarray(weight, np.float64)


# ------------------------------------------------------------------ low rank and swapping


def _check_rank(k: int, max_rank: int) -> int:
    if int(k) != k or not 1 <= int(k) <= max_rank:
        raise InputError(f"rank k must be an integer between 1 and {max_rank} (the embedding width), got {k}")
    return int(k)


def low_rank(weight: torch.Tensor | np.ndarray, k: int, spectrum: EmbeddingSpectrum | None = None) -> np.ndarray:
    """Best rank-``k`` approximation ``U_k S_k V_k^T = W V_k V_k^T`` of a ``(V, E)`` table (Eckart-Young).

    Projecting the rows onto the top-``k`` right singular vectors equals the truncated SVD and needs only
    the ``E x E`` eigendecomposition; at ``k = E`` the projection is the identity. Float64.
    """
    W = _as_float64(weight)  # (V, E)
    spectrum = spectrum or embedding_spectrum(W)
    k = _check_rank(k, W.shape[1])
    Vk = spectrum.right_vectors[:k]  # (k, E)
    return (W @ Vk.T) @ Vk  # (V, E)


@contextmanager
def swapped_input_embedding(model: torch.nn.Module, new_weight: np.ndarray | torch.Tensor) -> Iterator[torch.Tensor]:
    """``with swapped_input_embedding(model, W_k): ...`` runs with the table's values replaced, then restores.

    The original storage is put back even when the body raises; a lock serialises swaps in this process.
    Tied output embeddings share the parameter and see the same swap (and are restored with it).
    """
    param = input_embedding_weight(model)
    new = torch.as_tensor(new_weight).to(param.device, param.dtype)
    if tuple(new.shape) != tuple(param.shape):
        raise ValueError(f"new weight has shape {tuple(new.shape)}, the table is {tuple(param.shape)}")
    with _SWAP_LOCK:
        original = param.data
        param.data = new
        try:
            yield param
        finally:
            param.data = original


# ------------------------------------------------------------------ shrink curve


@dataclass
class ShrinkResult:
    """STS and neighbour overlap as functions of the rank of the input embedding."""

    curve: pd.DataFrame  # k, energy, spearman, pearson, overlap_at_10, embedding_params, full_embedding_params
    spectrum: EmbeddingSpectrum
    full: dict[str, float]  # spearman / pearson with the original table
    n_pairs: int
    n_sentences: int

    def to_dict(self) -> dict[str, object]:
        return {
            "curve": self.curve.to_dict(orient="records"),
            "full": self.full,
            "effective_rank": self.spectrum.effective_rank,
            "effective_rank_centered": self.spectrum.effective_rank_centered,
            "shape": list(self.spectrum.shape),
            "n_pairs": self.n_pairs,
            "n_sentences": self.n_sentences,
        }


def _scores(X: np.ndarray, index: np.ndarray, n: int, gold: np.ndarray | None) -> dict[str, float]:
    if gold is None:
        return {"spearman": float("nan"), "pearson": float("nan")}
    return sts_scores(X[index[:n]], X[index[n:]], gold)


def default_ranks(width: int) -> list[int]:
    """``DEFAULT_RANKS`` below the table width, then the width itself (which must reproduce the model)."""
    return [k for k in DEFAULT_RANKS if k < width] + [int(width)]


def shrink_curve(
    encoder: Encoder,
    pairs: Pairs,
    *,
    ranks: Sequence[int] | None = None,
    pooling: Pooling = None,
    config: EmbedConfig | None = None,
    progress: ProgressFn | None = None,
    cache: ArrayCache | None = None,
    neighbors: int = NEIGHBORS,
) -> ShrinkResult:
    """Re-encode the pairs with the input embedding shrunk to each rank in ``ranks``; see the module docstring.

    ``ranks`` default: :func:`default_ranks` of the table width (8, 16, 32, 64, 128, 384 for MiniLM).

    ``progress(done, total)`` counts sentences over all encodings (the full-rank one plus one per rank).
    Without gold scores Spearman/Pearson are NaN and only the neighbour overlap is reported.
    """
    weight = input_embedding_weight(encoder.model)
    vocab, width = weight.shape
    ranks = [_check_rank(k, width) for k in dict.fromkeys(default_ranks(width) if ranks is None else ranks)]
    if not ranks:
        raise InputError(f"give at least one rank between 1 and {width}")
    texts, index = unique_index(pairs.texts)
    n = len(pairs)
    gold = None if pairs.scores is None else np.asarray(pairs.scores, np.float64)
    total = len(texts) * (len(ranks) + 1)

    def step(offset: int) -> ProgressFn | None:
        return None if progress is None else (lambda done, _: progress(offset + done, total))

    full = encode(encoder, texts, pooling, config=config, progress=step(0), cache=cache)  # (u, d)
    full_scores = _scores(full, index, n, gold)
    W = _as_float64(weight)  # (V, E), a copy: the table itself is swapped below
    spectrum = embedding_spectrum(W)
    full_neighbours = knn_table(full, neighbors)[0]  # (u, neighbors), once for every rank
    rows = []
    for i, k in enumerate(ranks, 1):
        approx = low_rank(W, k, spectrum)  # (V, E)
        shrunk_encoder = dataclasses.replace(encoder, fingerprint=_rank_fingerprint(encoder.fingerprint, k))
        with swapped_input_embedding(encoder.model, approx):
            X = encode(
                shrunk_encoder, texts, pooling, config=config, progress=step(i * len(texts)), cache=cache
            )  # (u, d)
        rows.append(
            {
                "k": k,
                "energy": float(spectrum.energy[k - 1]),
                **_scores(X, index, n, gold),
                f"overlap_at_{neighbors}": float(jaccard_tables(full_neighbours, knn_table(X, neighbors)[0])[1].mean()),
                "embedding_params": int(vocab * k + k * width),
                "full_embedding_params": int(vocab * width),
            }
        )
        log.info("shrink k=%d: %s", k, rows[-1])
    return ShrinkResult(pd.DataFrame(rows), spectrum, full_scores, n, len(texts))


def _rank_fingerprint(fingerprint: str, k: int) -> str:
    """Cache identity of the model with a rank-k input embedding."""
    return f"{fingerprint}:svd-rank-{k}:{make_key('svd', fingerprint, k)[:8]}"


# ------------------------------------------------------------------ input vs output embedding


@dataclass
class EmbeddingComparison:
    """Input vs output embedding of a masked-LM model."""

    tied: bool
    input_shape: tuple[int, int]
    output_shape: tuple[int, int]
    row_cosine: np.ndarray | None  # (V,) cosine of row i of input and output (NaN for an all-zero row);
    # None when the widths differ
    input_spectrum: EmbeddingSpectrum
    output_spectrum: EmbeddingSpectrum
    structure_spearman: float  # Spearman (x100) of token-pair cosines in input vs output space (sampled)

    def to_dict(self) -> dict[str, object]:
        cos = self.row_cosine
        return {
            "tied": self.tied,
            "input_shape": list(self.input_shape),
            "output_shape": list(self.output_shape),
            "row_cosine_mean": None if cos is None else float(np.nanmean(cos)),
            "row_cosine_median": None if cos is None else float(np.nanmedian(cos)),
            "input_effective_rank": self.input_spectrum.effective_rank,
            "output_effective_rank": self.output_spectrum.effective_rank,
            "structure_spearman": self.structure_spearman,
        }


def output_embedding_weight(model: torch.nn.Module) -> torch.Tensor | None:
    """The output embedding ``(V, E_out)`` of a model with an LM head, else None."""
    get = getattr(model, "get_output_embeddings", None)
    out = get() if callable(get) else None
    weight = getattr(out, "weight", None)
    return weight if isinstance(weight, torch.Tensor) else None


def compare_input_output(model: torch.nn.Module, n_tokens: int = 2000, seed: int = 0) -> EmbeddingComparison | None:
    """Compare input and output embeddings; None when the model has no output embedding (no LM head)."""
    w_in = input_embedding_weight(model)
    w_out = output_embedding_weight(model)
    if w_out is None:
        return None
    if w_in.shape[0] != w_out.shape[0]:
        raise InputError(f"input ({w_in.shape[0]}) and output ({w_out.shape[0]}) vocabularies differ")
    tied = w_in is w_out or w_in.data_ptr() == w_out.data_ptr()
    A, B = _as_float64(w_in), _as_float64(w_out)  # (V, E_in), (V, E_out)
    row_cosine = None
    if A.shape == B.shape:
        row_cosine = cosine_pairs(A, B)  # (V,)
        zero = (np.linalg.norm(A, axis=1) == 0) | (np.linalg.norm(B, axis=1) == 0)  # e.g. the padding row
        row_cosine[zero] = np.nan
    rng = np.random.default_rng(seed)
    sample = rng.choice(A.shape[0], size=min(n_tokens, A.shape[0]), replace=False)  # (m,)
    iu = np.triu_indices(len(sample), k=1)
    cos_a = (l2_normalize(A[sample]) @ l2_normalize(A[sample]).T)[iu]  # (m (m - 1) / 2,)
    cos_b = (l2_normalize(B[sample]) @ l2_normalize(B[sample]).T)[iu]
    structure = spearman_x100(cos_a, cos_b)
    return EmbeddingComparison(
        tied=bool(tied),
        input_shape=(int(A.shape[0]), int(A.shape[1])),
        output_shape=(int(B.shape[0]), int(B.shape[1])),
        row_cosine=row_cosine,
        input_spectrum=embedding_spectrum(A),
        output_spectrum=embedding_spectrum(B),
        structure_spearman=structure,
    )
