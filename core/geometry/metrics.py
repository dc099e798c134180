"""Geometry metrics for sentence-embedding spaces.

Every public function takes an ``(n, d)`` array of ``n`` embeddings in ``d`` dimensions and works in
float64 internally. Bad input raises :class:`isoscope.errors.InputError` (a ``ValueError``) with a one-line
message saying what to fix. Metrics that depend on the covariance spectrum (IsoScore, effective rank,
explained variance) share one eigendecomposition of the ``(d, d)`` centred covariance, so
:func:`all_metrics` never builds an ``(n, n)`` matrix for large ``n``.

References
----------
- Ethayarajh (2019), "How Contextual are Contextualized Word Representations?" (average cosine).
- Mu & Viswanath (2018), "All-but-the-Top: Simple and Effective Postprocessing for Word
  Representations" (partition isotropy).
- Rudman, Gillman, Rayne & Eickhoff (2022), "IsoScore: Measuring the Uniformity of Embedding Space
  Utilization" (IsoScore).
- Roy & Vetterli (2007), "The effective rank: A measure of effective dimensionality" (effective rank).
- Wang & Isola (2020), "Understanding Contrastive Representation Learning through Alignment and
  Uniformity on the Hypersphere" (alignment, uniformity).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import numpy as np
from scipy.special import logsumexp

from isoscope.errors import InputError
from isoscope.linalg import gram_eigenvalues

logger = logging.getLogger(__name__)

__all__ = [
    "alignment",
    "all_metrics",
    "avg_cosine",
    "cosine_histogram_sample",
    "effective_rank",
    "explained_variance",
    "isoscore",
    "partition_isotropy",
    "per_layer_metrics",
    "singular_values",
    "uniformity",
]

# Rows per block when evaluating pairwise quantities, to bound peak memory.
_PAIR_CHUNK = 65_536
_ROW_BLOCK = 512


# --------------------------------------------------------------------------------------------------
# Input validation and shared helpers
# --------------------------------------------------------------------------------------------------


def _as_matrix(X: object, name: str = "X", min_rows: int = 2) -> np.ndarray:
    """Validate ``X`` and return it as a float64 ``(n, d)`` array.

    Raises ``ValueError`` if ``X`` is not numeric, not 2-D, has fewer than ``min_rows`` rows, has no
    columns, or contains NaN/inf.
    """
    try:
        arr = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name} must be a numeric array of shape (n, d); could not convert: {exc}") from exc
    if arr.ndim != 2:
        raise InputError(f"{name} must be 2-D with shape (n, d); got ndim={arr.ndim} — reshape it to (n, d)")
    if arr.shape[0] < min_rows:
        raise InputError(f"{name} needs at least {min_rows} rows; got {arr.shape[0]} — pass more embeddings")
    if arr.shape[1] < 1:
        raise InputError(f"{name} needs at least 1 column; got shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise InputError(f"{name} contains NaN or inf — drop or fix those rows before computing metrics")
    return arr


def _unit_rows(X: np.ndarray, name: str = "X") -> np.ndarray:
    """Return ``X`` with each row scaled to unit L2 norm, ``u_i = x_i / ||x_i||``.

    Raises ``ValueError`` if any row is all zeros (its direction, hence its cosine, is undefined).
    """
    norms = np.linalg.norm(X, axis=1)  # (n,)
    n_zero = int(np.count_nonzero(norms == 0.0))
    if n_zero:
        raise InputError(f"{name} has {n_zero} all-zero row(s); their direction is undefined — drop them")
    return X / norms[:, None]  # (n, d)


def _centered_cov_eigvals(X: np.ndarray) -> np.ndarray:
    """Eigenvalues of the sample covariance ``C = Xc^T Xc / (n - 1)``, ``Xc = X - mean(X)``, descending.

    ``isoscope.linalg.gram_eigenvalues`` of ``Xc``: the smaller of the ``(d, d)`` and ``(n, n)`` Gram matrices
    (same non-zero eigenvalues), so cost is ``O(n d min(n, d))``. The data are centred *before* the product
    to avoid the cancellation of ``X^T X - n mu mu^T`` for far-from-origin clouds. Eigenvalues at round-off
    level are exactly 0. Returns ``d`` values (zero-padded when ``n < d``).
    """
    n, d = X.shape
    eig = gram_eigenvalues(X - X.mean(axis=0)) / (n - 1)  # (min(n, d),)
    if eig.shape[0] < d:
        eig = np.concatenate([eig, np.zeros(d - eig.shape[0])])  # (d,)
    return eig


def _require_variance(eigvals: np.ndarray) -> float:
    """Return the total variance ``sum(eigvals)``; raise ``ValueError`` if it is zero."""
    total = float(eigvals.sum())
    if total <= 0.0:
        raise InputError("X has zero variance (all rows identical) — the spectrum-based metric is undefined")
    return total


def _sample_pairs(n: int, n_pairs: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Draw ``n_pairs`` ordered pairs ``(i, j)`` uniformly from ``{(i, j): i != j}``, with replacement.

    ``i ~ U{0..n-1}``, ``j' ~ U{0..n-2}``, ``j = j' + [j' >= i]`` — an exact uniform draw of ``j != i``.
    """
    rng = np.random.default_rng(seed)
    i = rng.integers(0, n, size=n_pairs)  # (p,)
    j = rng.integers(0, n - 1, size=n_pairs)  # (p,)
    j = j + (j >= i)
    return i, j


def _pair_cosines(U: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """Cosines ``u_i . u_j`` of unit rows for index arrays ``i, j``, evaluated in memory-bounded chunks."""
    out = np.empty(i.shape[0], dtype=np.float64)  # (p,)
    for start in range(0, i.shape[0], _PAIR_CHUNK):
        stop = start + _PAIR_CHUNK
        out[start:stop] = np.einsum("pd,pd->p", U[i[start:stop]], U[j[start:stop]])
    return np.clip(out, -1.0, 1.0)


def _check_n_pairs(n_pairs: int) -> None:
    """Raise ``ValueError`` unless ``n_pairs`` is a positive integer."""
    if int(n_pairs) < 1:
        raise InputError(f"n_pairs must be >= 1; got {n_pairs}")


# --------------------------------------------------------------------------------------------------
# Cosine-based anisotropy (Ethayarajh 2019)
# --------------------------------------------------------------------------------------------------


def cosine_histogram_sample(X: np.ndarray, n_pairs: int = 10_000, seed: int = 0) -> np.ndarray:
    """Pairwise cosine similarities ``cos(x_i, x_j), i != j``, for a histogram.

    If ``n (n - 1) / 2 <= n_pairs`` every unordered pair ``i < j`` is returned once (exact, in
    ``np.triu_indices`` order); otherwise ``n_pairs`` ordered distinct pairs are drawn uniformly with
    replacement from a generator seeded with ``seed``. Ethayarajh (2019) uses the mean of this
    distribution as the anisotropy baseline.

    Returns a float64 array of shape ``(min(n_pairs, n (n - 1) / 2),)``.
    """
    X = _as_matrix(X)
    _check_n_pairs(n_pairs)
    U = _unit_rows(X)  # (n, d)
    n = U.shape[0]
    if n * (n - 1) // 2 <= n_pairs:
        i, j = np.triu_indices(n, k=1)
    else:
        i, j = _sample_pairs(n, int(n_pairs), seed)
    return _pair_cosines(U, i, j)


def _avg_cosine_unit(U: np.ndarray, n_pairs: int, seed: int) -> float:
    """Mean off-diagonal cosine of unit rows ``U``; exact for small ``n``, sampled otherwise.

    Exact branch uses ``sum_{i != j} u_i . u_j = ||sum_i u_i||^2 - sum_i ||u_i||^2`` divided by
    ``n (n - 1)``, which is ``O(n d)`` and never forms the ``(n, n)`` cosine matrix.
    """
    n = U.shape[0]
    if n * (n - 1) // 2 <= n_pairs:
        total = U.sum(axis=0)  # (d,)
        off_diag = float(total @ total) - float(np.einsum("nd,nd->", U, U))
        return off_diag / (n * (n - 1))
    i, j = _sample_pairs(n, n_pairs, seed)
    return float(_pair_cosines(U, i, j).mean())


def avg_cosine(X: np.ndarray, n_pairs: int = 10_000, seed: int = 0) -> float:
    """Mean cosine similarity between distinct embeddings (Ethayarajh 2019 anisotropy baseline).

    ``avg_cos = E_{i != j}[ x_i . x_j / (||x_i|| ||x_j||) ]``. Exact over all off-diagonal pairs when
    ``n (n - 1) / 2 <= n_pairs``; otherwise the mean over ``n_pairs`` uniformly sampled ordered pairs
    ``i != j`` (seeded, deterministic for a given ``seed``). Values near 1 mean all vectors point into a
    narrow cone; near 0 means directions are spread out. Note that a common offset dominates this
    metric even when the centred cloud is isotropic (compare :func:`isoscore`).
    """
    X = _as_matrix(X)
    _check_n_pairs(n_pairs)
    return _avg_cosine_unit(_unit_rows(X), int(n_pairs), seed)


# --------------------------------------------------------------------------------------------------
# Partition-function isotropy (Mu & Viswanath 2018)
# --------------------------------------------------------------------------------------------------


def partition_isotropy(X: np.ndarray) -> float:
    """Partition-function isotropy ``I = min_c Z(c) / max_c Z(c)`` (Mu & Viswanath 2018).

    ``Z(c) = sum_i exp(c . x_i)`` with ``c`` ranging over the unit eigenvectors of the *uncentred*
    second-moment matrix ``X^T X``, as in the paper. Eigenvectors are defined only up to sign, so both
    ``+c`` and ``-c`` are used (2d candidate directions); this makes the result independent of the
    eigensolver's sign convention. ``log Z`` is computed with ``logsumexp`` and
    ``I = exp(min log Z - max log Z)``, so large-norm embeddings cannot overflow. The value lies in
    ``(0, 1]`` mathematically (1 = isotropic); it may underflow to 0.0 for extremely anisotropic clouds.
    """
    X = _as_matrix(X)
    _, vecs = np.linalg.eigh(X.T @ X)  # (d, d), columns are eigenvectors
    proj = X @ vecs  # (n, d): proj[i, k] = c_k . x_i
    log_z = np.concatenate([logsumexp(proj, axis=0), logsumexp(-proj, axis=0)])  # (2d,)
    return float(np.exp(log_z.min() - log_z.max()))


# --------------------------------------------------------------------------------------------------
# Spectrum-based metrics (IsoScore, effective rank, explained variance)
# --------------------------------------------------------------------------------------------------


def _isoscore_from_eigvals(eigvals: np.ndarray) -> float:
    """IsoScore from the variances along the principal axes (Rudman et al. 2022, Algorithm 1).

    With ``v`` the principal-axis variances (covariance eigenvalues, length ``d``):
    ``v_hat = sqrt(d) v / ||v||``; ``delta = ||v_hat - 1|| / sqrt(2 (d - sqrt(d)))`` (isotropy defect);
    ``k = (d - delta^2 (d - sqrt(d)))^2 / d^2``; ``IsoScore = (d k - 1) / (d - 1)``.
    Data spread evenly over ``m`` of the ``d`` axes scores exactly ``(m - 1) / (d - 1)``.
    """
    d = eigvals.shape[0]
    if d < 2:
        raise InputError("isoscore needs at least 2 columns (d >= 2); got d=1")
    _require_variance(eigvals)
    sqrt_d = np.sqrt(d)
    v_hat = eigvals * (sqrt_d / np.linalg.norm(eigvals))  # (d,)
    delta = np.linalg.norm(v_hat - 1.0) / np.sqrt(2.0 * (d - sqrt_d))
    k = (d - delta**2 * (d - sqrt_d)) ** 2 / d**2
    score = (d * k - 1.0) / (d - 1.0)
    return float(np.clip(score, 0.0, 1.0))


def isoscore(X: np.ndarray) -> float:
    """IsoScore of the embedding cloud, in ``[0, 1]`` (Rudman et al. 2022).

    Steps: centre and PCA-rotate ``X`` onto its principal axes; the per-axis variances are then the
    covariance eigenvalues ``v``; normalise ``v_hat = sqrt(d) v / ||v||``; isotropy defect
    ``delta = ||v_hat - 1|| / sqrt(2 (d - sqrt(d)))``; ``k = (d - delta^2 (d - sqrt(d)))^2 / d^2``;
    ``IsoScore = (d k - 1) / (d - 1)``. 1 means variance is spread equally over all ``d`` axes, 0 means
    it lies on a single line. Rotation-invariant and blind to a common offset (it centres).
    Needs ``d >= 2``; with ``n <= d`` at most ``n - 1`` axes carry variance, which caps the score.
    """
    X = _as_matrix(X)
    return _isoscore_from_eigvals(_centered_cov_eigvals(X))


def _explained_variance_from_eigvals(eigvals: np.ndarray, k: int) -> np.ndarray:
    """Explained-variance ratios ``lambda_i / sum_j lambda_j`` of the top ``k`` components."""
    total = _require_variance(eigvals)
    return eigvals[: min(k, eigvals.shape[0])] / total


def explained_variance(X: np.ndarray, k: int = 10) -> np.ndarray:
    """Fraction of total variance carried by each of the top-``k`` principal components.

    ``r_i = lambda_i / sum_j lambda_j`` for covariance eigenvalues ``lambda_1 >= lambda_2 >= ...``
    (standard PCA). Returns the per-component (non-cumulative) ratios, shape ``(min(k, d),)``; take
    ``np.cumsum`` for cumulative values.
    """
    if int(k) < 1:
        raise InputError(f"k must be >= 1; got {k}")
    X = _as_matrix(X)
    return _explained_variance_from_eigvals(_centered_cov_eigvals(X), int(k))


def _singular_values_from_eigvals(eigvals: np.ndarray, n: int) -> np.ndarray:
    """Singular values of the centred data, ``s_i = sqrt((n - 1) lambda_i)``, length ``min(n, d)``."""
    return np.sqrt(eigvals[: min(n, eigvals.shape[0])] * (n - 1))


def singular_values(X: np.ndarray, center: bool = True) -> np.ndarray:
    """Singular values of ``X`` (of ``X - mean(X)`` when ``center``), descending, shape ``(min(n, d),)``.

    Computed as ``s_i = sqrt(eig_i(M^T M))`` on the smaller Gram matrix (``isoscope.linalg.gram_eigenvalues``),
    so cost is ``O(n d min(n, d))``. Singular values below ``sqrt(max(n, d) eps) s_max`` (about 3e-7
    ``s_max`` for 384 dimensions) cannot be resolved this way: they are reported as exactly 0, so
    rank-deficient data gives zeros, on every CPU.
    """
    X = _as_matrix(X)
    n = X.shape[0]
    if center:
        return _singular_values_from_eigvals(_centered_cov_eigvals(X), n)
    return np.sqrt(gram_eigenvalues(X))


def _effective_rank_from_singular_values(s: np.ndarray) -> float:
    """``erank = exp(H(p))``, ``p_i = s_i / sum_j s_j``, ``H(p) = -sum_i p_i log p_i`` (0 log 0 = 0)."""
    total = float(s.sum())
    if total <= 0.0:
        raise InputError("X has zero variance (all rows identical) — effective rank is undefined")
    p = s[s > 0.0] / total  # (r,)
    return float(np.exp(-np.sum(p * np.log(p))))


def effective_rank(X: np.ndarray, center: bool = True) -> float:
    """Effective rank ``exp(H(p))`` of ``X``, ``p_i = s_i / sum_j s_j`` (Roy & Vetterli 2007).

    ``s_i`` are the singular values and ``H(p) = -sum_i p_i log p_i`` their Shannon entropy; the result
    lies in ``[1, min(n, d)]``. By default (``center=True``) the data are centred first, so the value
    measures how many directions the *spread* of the cloud uses and is not dominated by a common offset
    (a shifted cloud would otherwise get one huge singular value for the mean direction).
    """
    return _effective_rank_from_singular_values(singular_values(X, center=center))


# --------------------------------------------------------------------------------------------------
# Alignment and uniformity (Wang & Isola 2020)
# --------------------------------------------------------------------------------------------------


def alignment(A: np.ndarray, B: np.ndarray, alpha: float = 2) -> float:
    """Alignment loss ``E_i ||a_i - b_i||^alpha`` over positive pairs, on L2-normalised rows.

    Wang & Isola (2020), ``L_align``; lower is better (0 when every pair points the same way).
    ``A`` and ``B`` must have the same shape ``(n, d)``; row ``i`` of each forms a positive pair, so a
    single pair (``n = 1``) is allowed.
    """
    A = _as_matrix(A, name="A", min_rows=1)
    B = _as_matrix(B, name="B", min_rows=1)
    if A.shape != B.shape:
        raise InputError(f"A and B must have the same shape (paired rows); got {A.shape} and {B.shape}")
    if alpha <= 0:
        raise InputError(f"alpha must be > 0; got {alpha}")
    diff = _unit_rows(A, name="A") - _unit_rows(B, name="B")  # (n, d)
    return float(np.mean(np.linalg.norm(diff, axis=1) ** alpha))


def _uniformity_unit(U: np.ndarray, t: float) -> float:
    """``log( 2 / (n (n - 1)) * sum_{i < j} exp(-t ||u_i - u_j||^2) )`` for unit rows ``U``.

    Uses ``||u_i - u_j||^2 = 2 - 2 u_i . u_j`` over row blocks of the upper triangle only: block ``[s, e)`` is
    multiplied with rows ``s:`` (the columns before ``s`` were counted by earlier blocks), so memory stays
    ``O(block * n)`` and the work is half of the full ``(n, n)`` product. The exponentials are summed in float64.
    """
    n = U.shape[0]
    acc = 0.0
    for start in range(0, n - 1, _ROW_BLOCK):
        stop = min(start + _ROW_BLOCK, n - 1)
        b = stop - start
        e = U[start:stop] @ U[start:].T  # (b, n - start): column c is row start + c
        e *= -2.0
        e += 2.0
        np.clip(e, 0.0, 4.0, out=e)  # squared distances
        e *= -t
        np.exp(e, out=e)
        acc += float(np.triu(e[:, :b], k=1).sum(dtype=np.float64))  # the diagonal block: j > i only
        acc += float(e[:, b:].sum(dtype=np.float64))  # every column after the block: j > i
    return float(np.log(acc) - np.log(n * (n - 1) / 2))


def uniformity(X: np.ndarray, t: float = 2, *, max_points: int = 5000, seed: int = 0) -> float:
    """Uniformity ``log E_{i != j} exp(-t ||x_i - x_j||^2)`` on L2-normalised rows (Wang & Isola 2020).

    Lower (more negative) means points are spread more evenly over the hypersphere; 0 means all
    points coincide. If ``n > max_points`` a seeded random subset of ``max_points`` rows (without
    replacement) is used, keeping the ``O(n^2 d)`` cost bounded.
    """
    X = _as_matrix(X)
    if t <= 0:
        raise InputError(f"t must be > 0; got {t}")
    if int(max_points) < 2:
        raise InputError(f"max_points must be >= 2; got {max_points}")
    if X.shape[0] > max_points:
        rng = np.random.default_rng(seed)
        idx = rng.choice(X.shape[0], size=int(max_points), replace=False)  # (m,)
        logger.debug("uniformity: subsampling %d of %d rows", max_points, X.shape[0])
        X = X[idx]  # (m, d)
    return _uniformity_unit(_unit_rows(X), float(t))


# --------------------------------------------------------------------------------------------------
# Aggregates
# --------------------------------------------------------------------------------------------------


def all_metrics(X: np.ndarray, seed: int = 0) -> dict[str, float]:
    """Compute every summary metric for one embedding matrix in a single pass.

    Keys: ``avg_cosine``, ``isoscore``, ``partition_isotropy``, ``effective_rank`` (centred),
    ``explained_variance_top1`` (fraction of variance on PC1), ``explained_variance_top10``
    (cumulative fraction on PCs 1-10), ``uniformity`` (t=2). Validation, row normalisation and the
    ``(d, d)`` centred-covariance eigendecomposition are done once and shared; defaults match the
    individual functions, so values agree with calling them separately.
    """
    X = _as_matrix(X)
    n = X.shape[0]
    U = _unit_rows(X)  # (n, d)
    eigvals = _centered_cov_eigvals(X)  # (d,)
    ratios = _explained_variance_from_eigvals(eigvals, 10)  # (min(10, d),)
    metrics = {
        "avg_cosine": _avg_cosine_unit(U, 10_000, seed),
        "isoscore": _isoscore_from_eigvals(eigvals),
        "partition_isotropy": partition_isotropy(X),
        "effective_rank": _effective_rank_from_singular_values(_singular_values_from_eigvals(eigvals, n)),
        "explained_variance_top1": float(ratios[0]),
        "explained_variance_top10": float(ratios.sum()),
        "uniformity": uniformity(X, seed=seed),
    }
    logger.debug("all_metrics on %s: %s", X.shape, metrics)
    return metrics


def per_layer_metrics(
    layers: Sequence[np.ndarray] | np.ndarray, seed: int = 0, progress: Callable[[int, int], None] | None = None
) -> list[dict[str, float]]:
    """:func:`all_metrics` for each layer of a model, in order.

    ``layers`` is a list of ``(n, d)`` arrays (one per layer; shapes may differ) or one ``(L, n, d)``
    array. Returns a list of ``L`` metric dicts; ``progress(done, L)`` is called after each layer.
    """
    if isinstance(layers, np.ndarray):
        if layers.ndim != 3:
            raise InputError(f"layers array must have shape (L, n, d); got ndim={layers.ndim}")
        items: Sequence[np.ndarray] = list(layers)
    else:
        items = list(layers)
    if not items:
        raise InputError("layers is empty — pass at least one (n, d) array")
    out = []
    for done, layer in enumerate(items, 1):
        out.append(all_metrics(layer, seed=seed))
        if progress is not None:
            progress(done, len(items))
    return out
