"""The geometry analyses' option tuples, importable without numpy (``isoscope geometry --help`` builds its parser
from them): token spaces and contextual modes of the frequency table, edit-distance levels, frequency choices; and what each isotropy metric means (the Anisotropy page, the report)."""

from __future__ import annotations

from typing import Literal, get_args

Space = Literal["static", "contextual"]
SPACES: tuple[Space, ...] = get_args(Space)  # token vectors: the input embedding matrix, or one layer's outputs
ContextualMode = Literal["occurrence", "mean"]
CONTEXTUAL_MODES: tuple[ContextualMode, ...] = get_args(ContextualMode)  # sampled occurrences, or a mean per id
EditLevel = Literal["word", "char"]
EDIT_LEVELS: tuple[EditLevel, ...] = get_args(EditLevel)
FrequencyChoice = Literal["both", "static", "contextual", "none"]
FREQUENCY_CHOICES: tuple[FrequencyChoice, ...] = get_args(FrequencyChoice)  # spaces of the frequency table

# the keys of isoscope.geometry.metrics.all_metrics, explained in one line each
METRIC_HELP: dict[str, str] = {
    "avg_cosine": "mean cosine of random pairs (0 = isotropic; Ethayarajh 2019)",
    "isoscore": "IsoScore (Rudman et al. 2022): 1 = all directions used equally, 0 = one direction",
    "partition_isotropy": "min/max of the partition function over principal directions (Mu & Viswanath 2018)",
    "effective_rank": "exp of the entropy of the normalised singular values",
    "explained_variance_top1": "share of variance on the first principal component",
    "explained_variance_top10": "share of variance on the first ten principal components",
    "uniformity": "log mean exp(-2 |x - y|^2) on the unit sphere (Wang & Isola 2020); lower is more uniform",
}
