"""Eigendecompositions shared by calibration, projection and the metrics (float64 throughout).

- ``covariance_eigh``: mean, eigenvalues (descending) and sign-fixed eigenvectors of the sample covariance;
  whitening, all-but-the-top and PCA are built on it.
- ``AffineMap``: ``y = x @ W + b`` in float64, the exact form of every linear fitted map (calibrators, adapters),
  which a Dense layer, a FAISS ``LinearTransform`` or a graph's matmul carries out of Isoscope;
- ``gram_eigenvalues``: the non-zero spectrum of ``M^T M`` from the smaller Gram matrix, with eigenvalues
  at round-off level set to exactly 0.

Round-off: LAPACK's symmetric eigensolvers are backward stable, so an eigenvalue of a Gram matrix ``G`` is
exact to about ``c * eps * ||G||`` (``eps`` = 2.2e-16 in float64). Eigenvalues below ``max(n, d) * eps *
lambda_max`` (the threshold numpy's ``matrix_rank`` uses, applied to squared singular values) cannot be told
from 0; reporting ``sqrt`` of them would turn a true 0 into ~1e-8 * s_max, different on every CPU.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

EPS = float(np.finfo(np.float64).eps)


def sign_fixed(vectors: np.ndarray) -> np.ndarray:
    """Columns of ``vectors`` (d, k) flipped so that each one's largest-magnitude entry is positive.

    Eigenvectors are defined up to sign; this is scikit-learn's ``svd_flip`` convention, so results are the
    same whichever sign an eigensolver returns.
    """
    top = np.argmax(np.abs(vectors), axis=0)  # (k,)
    signs = np.sign(vectors[top, np.arange(vectors.shape[1])])
    signs[signs == 0] = 1.0
    return vectors * signs


def roundoff_threshold(largest: float, n: int, d: int) -> float:
    """Eigenvalues of an (n, d) matrix's Gram below this are round-off: ``max(n, d) * eps * largest``."""
    return max(n, d) * EPS * max(float(largest), 0.0)


@dataclass(frozen=True)
class CovarianceEigh:
    """Sample covariance ``Xc^T Xc / (n - ddof)`` of ``X`` (n, d), decomposed."""

    mean: np.ndarray  # (d,)
    eigenvalues: np.ndarray  # (d,) descending, >= 0 (round-off level set to 0)
    vectors: np.ndarray  # (d, d) eigenvectors as columns, sign-fixed


def covariance_eigh(X: np.ndarray, ddof: int = 1) -> CovarianceEigh:
    """Eigendecomposition of the sample covariance of ``X`` (n, d), centred before the product (no
    cancellation for clouds far from the origin). Eigenvalues descending; vectors sign-fixed."""
    X = np.asarray(X, np.float64)
    n = X.shape[0]
    mu = X.mean(axis=0)  # (d,)
    Xc = X - mu  # (n, d)
    lam, vecs = eigh_descending(Xc.T @ Xc / max(n - ddof, 1), n)  # (d,), (d, d)
    return CovarianceEigh(mu, lam, sign_fixed(vecs))


def eigh_descending(gram: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues (descending, round-off level set to 0) and eigenvectors (columns) of a symmetric PSD
    Gram matrix (d, d) of ``n`` rows."""
    lam, vecs = np.linalg.eigh(gram)  # ascending
    lam, vecs = lam[::-1], vecs[:, ::-1]
    if lam.size:
        lam = np.where(lam < roundoff_threshold(lam[0], n, gram.shape[0]), 0.0, lam)
    return lam, vecs


def gram_eigenvalues(M: np.ndarray) -> np.ndarray:
    """Eigenvalues of ``M^T M`` (= squared singular values of M), descending, length ``min(n, d)``.

    Computed on the smaller of ``M^T M`` (d, d) and ``M M^T`` (n, n), which share their non-zero
    eigenvalues, so the cost is ``O(n d min(n, d))``. Values at round-off level are exactly 0.
    """
    n, d = M.shape
    gram = M.T @ M if n >= d else M @ M.T  # (d, d) or (n, n)
    eig = np.linalg.eigvalsh(gram)[::-1]  # (min(n, d),)
    if eig.size == 0:
        return eig
    return np.where(eig < roundoff_threshold(eig[0], n, d), 0.0, eig)


@dataclass(frozen=True)
class AffineMap:
    """``y = x @ weight + bias``: weight (d_in, d_out), bias (d_out,), both float64."""

    weight: np.ndarray  # (d_in, d_out)
    bias: np.ndarray  # (d_out,)

    @classmethod
    def identity(cls, d: int) -> AffineMap:
        return cls(np.eye(d), np.zeros(d))

    @property
    def d_in(self) -> int:
        return int(self.weight.shape[0])

    @property
    def d_out(self) -> int:
        return int(self.weight.shape[1])

    def apply(self, X: np.ndarray) -> np.ndarray:
        """(n, d_in) -> (n, d_out) float32, computed in float64."""
        return (np.asarray(X, np.float64) @ self.weight + self.bias).astype(np.float32)

    @property
    def centre(self) -> np.ndarray:
        """c (d_in,) with ``x @ W + b = (x - c) @ W + r`` and r small: the least-squares solution of ``c W = -b``.
        Subtracting c first keeps float32 arithmetic accurate on vectors in a narrow cone (x close to the mean),
        where ``x @ W`` and ``b`` nearly cancel."""
        c, *_ = np.linalg.lstsq(self.weight.T, -self.bias, rcond=None)  # (d_in,)
        return c

    def then(self, other: AffineMap) -> AffineMap:
        """This map followed by ``other``: ``(x W1 + b1) W2 + b2``."""
        return AffineMap(self.weight @ other.weight, self.bias @ other.weight + other.bias)
