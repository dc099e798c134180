"""Centred kernel alignment (CKA): how similar two representations of the same texts are.

- Linear CKA (Kornblith et al. 2019, "Similarity of Neural Network Representations Revisited"): with the
  column-centred features ``X`` (n, p) and ``Y`` (n, q),
  ``CKA = ||Y^T X||_F^2 / (||X^T X||_F ||Y^T Y||_F)``. It is 1 for ``Y = X Q s + t`` (orthogonal ``Q``,
  scale ``s``, shift ``t``), symmetric, and does not need ``p == q``.
- Debiased CKA: the same ratio with the unbiased HSIC estimator of Song et al. (2012) in place of the biased
  one (as used by Nguyen, Raghu & Kornblith 2021 and in Kornblith's reference code). The biased estimator
  of two *independent* representations is far from 0 when ``n`` is not much larger than the dimensions;
  the debiased one is ~0 (and may be slightly negative).

Both are computed in feature space, never with an (n, n) Gram matrix. For linear kernels ``K = X X^T``
the unbiased estimator needs only ``||X^T Y||_F^2``, the squared row norms ``k_i = |x_i|^2``,
``l_i = |y_i|^2`` and their sums (Kornblith's ``feature_space_linear_cka(debiased=True)``)::

    HSIC_u(X, Y) ~ ||X^T Y||^2 - n / (n - 2) * sum_i k_i l_i + sum(k) sum(l) / ((n - 1) (n - 2))

(the common factor ``1 / (n (n - 3))`` cancels in the ratio). So this is exact for every row (no
sample), costs O(n p q) and holds one (p, q) Gram in memory: 100,000 x 384 vectors are fine. Rows are
centred and multiplied in float64, ``ROW_BLOCK`` rows at a time, so float32 inputs are never copied whole.

A layer x layer matrix (``cka_matrix``) stacks every layer's centred features and computes all the cross
Grams with one matrix product per row block.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from isoscope.errors import InputError

log = logging.getLogger(__name__)

ROW_BLOCK = 2048  # rows centred in float64 at a time (14 layers x 384 dims: 88 MB per block)
MIN_ROWS_DEBIASED = 4  # the unbiased HSIC estimator divides by n (n - 3)
CKA_KINDS: tuple[str, ...] = ("linear", "debiased")
CKA_DESCRIPTIONS: dict[str, str] = {  # the one glossary of the two estimators (Compare spaces shows it)
    "linear": "linear CKA: 1 = the same representation up to rotation, reflection and scale; reads high for "
    "unrelated spaces when the texts are few next to the dimensions",
    "debiased": "linear CKA with the unbiased HSIC estimator: ~0 for unrelated spaces even with few texts (may "
    "be slightly negative)",
}


def _check(mats: Sequence[np.ndarray], name: str) -> list[np.ndarray]:
    """2-D finite numeric arrays with the same row count; returned as they are (no float64 copy)."""
    out = []
    for m in mats:
        a = np.asarray(m)
        if a.ndim != 2 or not np.issubdtype(a.dtype, np.number) or a.shape[1] < 1:
            raise InputError(f"{name} must be 2-D numeric arrays (texts, dimensions), got shape {a.shape}")
        if not np.isfinite(a).all():
            raise InputError(f"{name} contain NaN or infinite values; drop or fix those rows first")
        out.append(a)
    if not out:
        raise InputError(f"{name}: give at least one representation")
    return out


@dataclass(frozen=True)
class CKAMatrix:
    """CKA between every representation of A (rows) and of B (columns), of the same ``n`` texts."""

    linear: np.ndarray  # (m_a, m_b) float64 in [0, 1]; NaN where a representation is constant
    debiased: np.ndarray  # (m_a, m_b) float64, ~0 for independent representations; NaN when undefined
    n: int


def _means_and_norms(mats: Sequence[np.ndarray]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Column means (d_i,) of each matrix in float64, and room for its centred squared row norms (n,)."""
    means = [np.mean(m, axis=0, dtype=np.float64) for m in mats]  # (d_i,) each
    sq = [np.empty(len(m), np.float64) for m in mats]  # (n,) each
    return means, sq


def _centred_block(mats: Sequence[np.ndarray], means: Sequence[np.ndarray], rows: slice) -> list[np.ndarray]:
    return [np.asarray(m[rows], np.float64) - mu for m, mu in zip(mats, means, strict=True)]  # (b, d_i) each


def _frob2_blocks(G: np.ndarray, dims_a: Sequence[int], dims_b: Sequence[int]) -> np.ndarray:
    """Squared Frobenius norm of each (d_i, d_j) block of a stacked Gram G (sum d_a, sum d_b). (m_a, m_b)."""
    ea, eb = np.cumsum([0, *dims_a]), np.cumsum([0, *dims_b])
    out = np.empty((len(dims_a), len(dims_b)), np.float64)
    for i in range(len(dims_a)):
        for j in range(len(dims_b)):
            block = G[ea[i] : ea[i + 1], eb[j] : eb[j + 1]]
            out[i, j] = float(np.einsum("ij,ij->", block, block))
    return out


def _stacked_grams(
    as_: Sequence[np.ndarray], bs: Sequence[np.ndarray], same: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[np.ndarray], list[np.ndarray]]:
    """One blocked pass over the rows.

    Returns ||A_i^T B_j||^2 (m_a, m_b), ||A_i^T A_i||^2 (m_a,), ||B_j^T B_j||^2 (m_b,) of the centred
    matrices and their squared row norms (n,) each.
    """
    n = len(as_[0])
    mean_a, sq_a = _means_and_norms(as_)
    mean_b, sq_b = (mean_a, sq_a) if same else _means_and_norms(bs)
    dims_a, dims_b = [m.shape[1] for m in as_], [m.shape[1] for m in bs]
    cross = np.zeros((sum(dims_a), sum(dims_b)), np.float64)  # stacked A^T B
    self_a = [np.zeros((d, d), np.float64) for d in dims_a]
    self_b = [np.zeros((d, d), np.float64) for d in dims_b]
    for start in range(0, n, ROW_BLOCK):
        rows = slice(start, min(start + ROW_BLOCK, n))
        ca = _centred_block(as_, mean_a, rows)  # (b, d_i) each
        cb = ca if same else _centred_block(bs, mean_b, rows)
        za = np.hstack(ca)  # (b, sum d_a)
        cross += za.T @ (za if same else np.hstack(cb))
        for i, c in enumerate(ca):
            sq_a[i][rows] = np.einsum("ij,ij->i", c, c)
            if not same:
                self_a[i] += c.T @ c
        if not same:
            for j, c in enumerate(cb):
                sq_b[j][rows] = np.einsum("ij,ij->i", c, c)
                self_b[j] += c.T @ c
    xy = _frob2_blocks(cross, dims_a, dims_b)  # (m_a, m_b)
    if same:
        xx = np.diag(xy).copy()
        return xy, xx, xx, sq_a, sq_a
    xx = np.array([float(np.einsum("ij,ij->", g, g)) for g in self_a])
    yy = np.array([float(np.einsum("ij,ij->", g, g)) for g in self_b])
    return xy, xx, yy, sq_a, sq_b


def _ratio(num: np.ndarray, da: np.ndarray, db: np.ndarray) -> np.ndarray:
    """num / sqrt(da db) with NaN where a denominator is not positive (a constant representation)."""
    den = np.sqrt(np.clip(np.outer(da, db), 0.0, None))  # (m_a, m_b)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = num / den
    return np.where((da[:, None] > 0) & (db[None, :] > 0), out, np.nan)


def _debiased_hsic(frob2: np.ndarray, ka: np.ndarray, kb: np.ndarray, n: int) -> np.ndarray:
    """n (n - 3) times the unbiased HSIC of centred linear kernels, from ``||A_i^T B_j||^2`` (m_a, m_b) and the
    squared row norms ``ka`` (m_a, n), ``kb`` (m_b, n). (m_a, m_b)"""
    sa, sb = ka.sum(axis=1), kb.sum(axis=1)  # (m_a,), (m_b,)
    return frob2 - n / (n - 2) * (ka @ kb.T) + np.outer(sa, sb) / ((n - 1) * (n - 2))


def cka_matrix(as_: Sequence[np.ndarray], bs: Sequence[np.ndarray] | None = None) -> CKAMatrix:
    """Linear and debiased CKA of every representation in ``as_`` (each (n, d_i)) against every one in ``bs``
    (each (n, e_j); default: ``as_`` itself, which halves the work and gives a unit diagonal)."""
    same = bs is None
    as_ = _check(as_, "representations of A")
    bs = as_ if same else _check(bs, "representations of B")
    n = len(as_[0])
    if any(len(m) != n for m in [*as_, *bs]):
        raise InputError(f"every representation must hold the same texts; got row counts {[len(m) for m in as_]}")
    if n < 2:
        raise InputError(f"CKA needs at least 2 texts, got {n}")
    xy, xx, yy, sq_a, sq_b = _stacked_grams(as_, bs, same)  # (m_a, m_b), (m_a,), (m_b,)
    linear = _ratio(xy, xx, yy)
    if n < MIN_ROWS_DEBIASED:
        debiased = np.full_like(linear, np.nan)
    else:
        ka, kb = np.vstack(sq_a), np.vstack(sq_b)  # (m_a, n), (m_b, n)
        h_xy = _debiased_hsic(xy, ka, kb, n)  # (m_a, m_b)
        h_xx = np.diag(_debiased_hsic(np.diag(xx), ka, ka, n)) if not same else np.diag(h_xy).copy()
        h_yy = np.diag(_debiased_hsic(np.diag(yy), kb, kb, n)) if not same else h_xx
        debiased = _ratio(h_xy, h_xx, h_yy)
    if same:  # exactly symmetric with a unit diagonal where defined (round-off would leave ~1e-16)
        linear = (linear + linear.T) / 2
        debiased = (debiased + debiased.T) / 2
        for m in (linear, debiased):
            d = np.diag(m)
            np.fill_diagonal(m, np.where(np.isnan(d), np.nan, 1.0))
    if np.isnan(linear).any():
        log.warning("CKA is undefined for a constant representation (all texts map to one vector): NaN")
    return CKAMatrix(linear=linear, debiased=debiased, n=n)


def linear_cka(X: np.ndarray, Y: np.ndarray) -> float:
    """Linear CKA of X (n, p) and Y (n, q) in [0, 1]; NaN when either is constant."""
    return float(cka_matrix([X], [Y]).linear[0, 0])


def debiased_cka(X: np.ndarray, Y: np.ndarray) -> float:
    """Debiased linear CKA of X (n, p) and Y (n, q) (unbiased HSIC, all rows); NaN when undefined (n < 4)."""
    return float(cka_matrix([X], [Y]).debiased[0, 0])
