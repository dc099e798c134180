"""Precision and dimension sweep: what the geometry and the task score become as the vectors shrink.

For one corpus (and optionally scored sentence pairs), every *variant* of the full-precision space is
measured the same way:

- ``fp32``: the vectors as the model gives them (4 bytes per dimension).
- ``int8-model``: the vectors of the int8-quantised model (``isoscope.encode.quantize``), stored in float32.
- ``int8-vectors``: the fp32 vectors scalar-quantised to one byte per dimension, with a per-dimension range
  taken from the corpus (then dequantised to compare them).
- ``binary``: one bit per dimension (``x > 0``), compared as +-1 vectors (cosine = 1 - 2 Hamming / d).
- ``truncate:K``: the first K dimensions (Matryoshka-style; a model not trained for it loses the most here).
- ``pca:K``: the vectors' coordinates along the corpus' top K principal axes. The mean is not subtracted, so
  ``pca:d`` is the fp32 space rotated (same cosines) and every change along the curve comes from the dropped
  axes alone, as with truncation.

Measures per variant: IsoScore, average cosine, effective rank (``isoscope.geometry.metrics``), neighbour overlap@k with
the fp32 space (``isoscope.neighbours.overlap``: mean Jaccard of exact cosine k-NN lists), STS Spearman (x100) of
cosine against gold scores when pairs with scores are given, and bytes per vector. Transforms that need
fitting (PCA axes, int8 ranges) are fitted on the corpus and applied unchanged to the pair sentences.

    result = run_sweep(fp32_corpus, int8_corpus, pairs=SweepPairs(a, b, a8, b8, gold))
    result.table  # one row per variant
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from isoscope.errors import InputError

if TYPE_CHECKING:
    from isoscope.cache import ArrayCache
    from isoscope.data import Pairs
    from isoscope.encode.embed import EmbedConfig
    from isoscope.encode.models import Encoder
    from isoscope.encode.pooling import Pooling

log = logging.getLogger(__name__)

ProgressFn = Callable[[int, int], None]  # (done, total)
FAMILIES: tuple[str, ...] = ("precision", "truncate", "pca")
PRECISION_VARIANTS: tuple[str, ...] = ("fp32", "int8-model", "int8-vectors", "binary")
FIRST_DIM = 32  # the default dimension grid starts here and doubles up to d
COLUMNS: tuple[str, ...] = (
    "variant",
    "family",
    "dims",
    "bytes_per_vector",
    "isoscore",
    "avg_cosine",
    "effective_rank",
    "overlap_at_k",
    "spearman",
)


@dataclass(frozen=True)
class SweepConfig:
    """What to sweep. ``dims`` empty: 32, 64, 128, ... up to and including ``d``."""

    dims: tuple[int, ...] = ()
    k: int = 10  # neighbours for the overlap with the fp32 space
    n_pairs: int = 10_000  # sampled pairs for the average cosine
    seed: int = 0


@dataclass
class SweepPairs:
    """Sentence-pair vectors for the STS column: fp32 (required) and int8-model (optional), gold scores."""

    a: np.ndarray  # (m, d) fp32 vectors of the first sentences
    b: np.ndarray  # (m, d)
    gold: np.ndarray  # (m,)
    a_int8: np.ndarray | None = None  # (m, d) vectors of the int8 model
    b_int8: np.ndarray | None = None


@dataclass
class SweepResult:
    """One row per variant (``COLUMNS``), the settings used, and notes (e.g. a metric undefined for a variant)."""

    table: pd.DataFrame
    dims: tuple[int, ...]
    k: int
    n_texts: int
    n_pairs: int
    warnings: list[str] = field(default_factory=list)

    def family(self, name: str) -> pd.DataFrame:
        """The rows of one family (``precision``, ``truncate`` or ``pca``), plus the fp32 row as the full-size
        end of each dimension curve."""
        rows = self.table[self.table["family"] == name]
        if name != "precision":
            rows = pd.concat([rows, self.table[self.table["variant"] == "fp32"]], ignore_index=True)
        return rows.sort_values("dims", kind="stable").reset_index(drop=True)


def default_dims(d: int) -> tuple[int, ...]:
    """32, 64, 128, ... below ``d``, then ``d`` itself (just ``d`` when ``d <= 32``)."""
    dims = []
    k = FIRST_DIM
    while k < d:
        dims.append(k)
        k *= 2
    return (*dims, d)


def parse_dims(text: str | Sequence[int] | None, d: int) -> tuple[int, ...]:
    """``"32,64,128"`` (or a sequence) as sorted distinct ints in [1, d]; empty/None gives ``default_dims(d)``."""
    if text is None or (isinstance(text, str) and not text.strip()):
        return default_dims(d)
    items = [s.strip() for s in text.split(",")] if isinstance(text, str) else list(text)
    try:
        dims = sorted({int(s) for s in items if str(s) != ""})
    except ValueError:
        raise InputError(
            f"dimensions must be whole numbers separated by commas, e.g. 32,64,128; got '{text}'"
        ) from None
    if not dims:
        return default_dims(d)
    if dims[0] < 1 or dims[-1] > d:
        raise InputError(f"dimensions must lie between 1 and the model's {d}; got {dims[0]}..{dims[-1]}")
    return tuple(dims)


# --------------------------------------------------------------------------------------------------
# Vector transforms (fitted on the corpus, applied to corpus and pairs alike)
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScalarInt8:
    """Per-dimension affine int8 codes: ``code = round((x - low) / scale) - 128`` in [-128, 127]."""

    low: np.ndarray  # (d,) float32 smallest corpus value per dimension
    scale: np.ndarray  # (d,) float32 (high - low) / 255, > 0

    @classmethod
    def fit(cls, X: np.ndarray) -> ScalarInt8:
        low, high = X.min(axis=0), X.max(axis=0)  # (d,)
        scale = (high - low) / 255.0
        scale = np.where(scale > 0, scale, 1.0)  # a constant dimension: any scale reproduces it exactly
        return cls(low.astype(np.float32), scale.astype(np.float32))

    def codes(self, X: np.ndarray) -> np.ndarray:
        """(n, d) int8; values outside the corpus range clip to its ends."""
        q = np.rint((X - self.low) / self.scale)  # (n, d)
        return (np.clip(q, 0, 255) - 128).astype(np.int8)

    def decode(self, codes: np.ndarray) -> np.ndarray:
        return ((codes.astype(np.float32) + 128.0) * self.scale + self.low).astype(np.float32)  # (n, d)

    def __call__(self, X: np.ndarray) -> np.ndarray:
        return self.decode(self.codes(X))


def binary_signs(X: np.ndarray) -> np.ndarray:
    """One bit per dimension (x > 0) as +-1 float32: cosine of these is 1 - 2 * Hamming / d. (n, d)"""
    return np.where(X > 0, 1.0, -1.0).astype(np.float32)


@dataclass(frozen=True)
class PCABasis:
    """The corpus' principal axes (columns, by decreasing variance of the centred corpus)."""

    axes: np.ndarray  # (d, d) orthonormal

    @classmethod
    def fit(cls, X: np.ndarray) -> PCABasis:
        from isoscope.linalg import covariance_eigh

        return cls(covariance_eigh(X).vectors)

    def project(self, X: np.ndarray, k: int) -> np.ndarray:
        """Coordinates on the top ``k`` axes, not centred (k = d is a rotation). (n, d) -> (n, k)"""
        return (np.asarray(X, np.float64) @ self.axes[:, :k]).astype(np.float32)


@dataclass(frozen=True)
class Variant:
    name: str
    family: str
    dims: int
    bytes_per_vector: float
    transform: Callable[[np.ndarray], np.ndarray]  # (n, d) -> (n, dims)
    int8_model: bool = False  # applied to the int8 model's vectors instead of the fp32 ones


def variants(X: np.ndarray, dims: Sequence[int], with_int8_model: bool) -> list[Variant]:
    """Every variant of the corpus space ``X`` (n, d), transforms fitted on ``X``."""
    d = X.shape[1]
    scalar = ScalarInt8.fit(X)
    pca = PCABasis.fit(X)
    out = [Variant("fp32", "precision", d, 4.0 * d, lambda v: v)]
    if with_int8_model:
        out.append(Variant("int8-model", "precision", d, 4.0 * d, lambda v: v, int8_model=True))
    out += [
        Variant("int8-vectors", "precision", d, float(d), scalar),
        Variant("binary", "precision", d, float(math.ceil(d / 8)), binary_signs),
    ]
    for k in dims:
        if k < d:
            out.append(Variant(f"truncate:{k}", "truncate", k, 4.0 * k, lambda v, k=k: v[:, :k]))
        out.append(Variant(f"pca:{k}", "pca", k, 4.0 * k, lambda v, k=k: pca.project(v, k)))
    return out


# --------------------------------------------------------------------------------------------------
# Measures
# --------------------------------------------------------------------------------------------------


def _geometry(V: np.ndarray, config: SweepConfig, name: str, warnings: list[str]) -> dict[str, float]:
    from isoscope.geometry.metrics import avg_cosine, effective_rank, isoscore

    out = {}
    for key, fn in (
        ("isoscore", isoscore),
        ("avg_cosine", lambda v: avg_cosine(v, config.n_pairs, config.seed)),
        ("effective_rank", effective_rank),
    ):
        try:
            out[key] = fn(V)
        except InputError as exc:  # a degenerate variant (e.g. 1 dimension, or every sign equal): no value
            out[key] = float("nan")
            warnings.append(f"{name}: {key} undefined ({exc})")
    return out


def _spearman(a: np.ndarray, b: np.ndarray, gold: np.ndarray) -> float:
    from isoscope.evaluate.similarity import sts_scores

    return sts_scores(a, b, gold)["spearman"]


def _check_inputs(X: np.ndarray, X8: np.ndarray | None, pairs: SweepPairs | None) -> None:
    if X.ndim != 2 or X.shape[0] < 3:
        raise InputError(f"the sweep needs a corpus of at least 3 texts, got {X.shape[0] if X.ndim else 0}")
    if X8 is not None and X8.shape != X.shape:
        raise ValueError(f"int8-model vectors {X8.shape} do not match the fp32 ones {X.shape}")
    if pairs is not None:
        if pairs.a.shape != pairs.b.shape or pairs.a.shape[1] != X.shape[1] or len(pairs.gold) != len(pairs.a):
            raise ValueError("pair vectors and gold scores must line up with each other and with the corpus")


def run_sweep(
    X: np.ndarray,
    X_int8: np.ndarray | None = None,
    pairs: SweepPairs | None = None,
    *,
    config: SweepConfig | None = None,
    progress: ProgressFn | None = None,
) -> SweepResult:
    """Measure every variant of the corpus vectors ``X`` (n, d); ``X_int8`` (n, d) are the same texts through
    the int8 model (the ``int8-model`` row is left out without them). ``progress(done, total)`` counts variants.
    """
    from isoscope.neighbours.exact import check_k, knn_table
    from isoscope.neighbours.overlap import jaccard_tables

    config = config or SweepConfig()
    X = np.asarray(X, np.float32)
    _check_inputs(X, X_int8, pairs)
    n, d = X.shape
    dims = parse_dims(config.dims or None, d)
    k = check_k(config.k, n)
    base_ids, _ = knn_table(X, k)  # (n, k) neighbours in the fp32 space
    todo = variants(X, dims, X_int8 is not None)
    rows, warnings = [], []
    for i, v in enumerate(todo):
        V = v.transform(X_int8 if v.int8_model else X)  # (n, dims)
        geo = _geometry(V, config, v.name, warnings)
        overlap = 1.0 if v.name == "fp32" else float(jaccard_tables(base_ids, knn_table(V, k)[0])[1].mean())
        spearman = float("nan")
        if pairs is not None and (not v.int8_model or pairs.a_int8 is not None):
            a, b = (pairs.a_int8, pairs.b_int8) if v.int8_model else (pairs.a, pairs.b)
            spearman = _spearman(v.transform(a), v.transform(b), pairs.gold)
        rows.append(
            {"variant": v.name, "family": v.family, "dims": v.dims, "bytes_per_vector": v.bytes_per_vector}
            | geo
            | {"overlap_at_k": overlap, "spearman": spearman}
        )
        if progress is not None:
            progress(i + 1, len(todo))
    table = pd.DataFrame(rows, columns=list(COLUMNS))
    return SweepResult(table, dims, k, n, 0 if pairs is None else len(pairs.gold), warnings)


# --------------------------------------------------------------------------------------------------
# Encoding the corpus and the pairs with the fp32 and the int8 model
# --------------------------------------------------------------------------------------------------


@dataclass
class SweepVectors:
    corpus_fp32: np.ndarray  # (n, d)
    corpus_int8: np.ndarray | None  # (n, d) through the int8 model
    pairs: SweepPairs | None


def encode_for_sweep(
    encoder: Encoder,
    texts: Sequence[str],
    pairs: Pairs | None,
    *,
    pooling: Pooling = None,
    config: EmbedConfig | None = None,
    cache: ArrayCache | None = None,
    progress: ProgressFn | None = None,
    with_int8: bool = True,
) -> SweepVectors:
    """The corpus (and the pairs' sentences) through ``encoder`` in fp32 and through its int8 copy, in one
    batch per model; ``progress`` counts texts over both models. ``encoder`` must be an fp32 encoder."""
    from isoscope.encode.embed import encode
    from isoscope.encode.quantize import quantize_encoder

    if getattr(encoder, "precision", "fp32") != "fp32":
        raise ValueError("encode_for_sweep needs the fp32 encoder; it builds the int8 copy itself")
    items = list(texts) + (list(pairs.texts) if pairs is not None else [])
    n, total = len(texts), len(items) * (2 if with_int8 else 1)

    def part(offset: int) -> ProgressFn | None:
        return None if progress is None else (lambda done, _t: progress(offset + done, total))

    full = encode(encoder, items, pooling, config=config, progress=part(0), cache=cache)  # (n + 2m, d)
    full8 = None
    if with_int8:
        full8 = encode(quantize_encoder(encoder), items, pooling, config=config, progress=part(len(items)), cache=cache)
    swept_pairs = None
    if pairs is not None:
        m = len(pairs)
        swept_pairs = SweepPairs(
            full[n : n + m],
            full[n + m :],
            np.asarray(pairs.scores, np.float64),
            None if full8 is None else full8[n : n + m],
            None if full8 is None else full8[n + m :],
        )
    return SweepVectors(full[:n], None if full8 is None else full8[:n], swept_pairs)
