"""The fixes a retrieval run compares, their one grammar, and how each is fitted: never on the qrels.

A variant string is one of:

- ``raw``: the vectors as the model gives them;
- a calibration method (``isoscope.calibrate.methods``: ``centre``, ``whitening``, ``whitening:K``, ``sn``,
  ``abtt:D``, ``flow``, ``sn+abtt:D``, ...) fitted without labels on the documents (the corpus), applied to the
  queries and the documents;
- the same followed by ``@queries``: fitted on the queries alone, applied to both (the query-side variant);
- ``csls`` or ``csls:K``: hubness reduction at search time (``isoscope.retrieval.search``), which moves no vector.

Light to import (the command line's help reads it); ``isoscope.retrieval.fixes.fit_variant`` fits a parsed variant.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from isoscope.calibrate.methods import methods_help, parse_method
from isoscope.errors import InputError
from isoscope.retrieval.options import CSLS_K

FitOn = Literal["documents", "queries"]
RAW = "raw"
CSLS = "csls"
QUERY_SIDE = "@queries"
DEFAULT_VARIANTS: tuple[str, ...] = ("raw", "centre", "whitening", "whitening:64", "sn", "abtt", "flow", "csls")
VARIANT_DESCRIPTIONS = {
    RAW: "the vectors as the model gives them",
    CSLS: "hubness reduction at search time: 2 cos(q, d) minus d's mean cosine to its K nearest documents",
    QUERY_SIDE: "METHOD@queries: the method fitted on the queries alone, applied to queries and documents",
}


def default_variants(n_queries: int, dims: int) -> list[str]:
    """``DEFAULT_VARIANTS`` and a query-side whitening with as many components as the queries support
    (``isoscope.calibrate.fitting.safe_components``)."""
    from isoscope.calibrate.fitting import safe_components

    return [*DEFAULT_VARIANTS[:-1], f"whitening:{safe_components(n_queries, dims)}{QUERY_SIDE}", DEFAULT_VARIANTS[-1]]


def describe_variant(text: str) -> str:
    """A variant string in words, for tooltips (``isoscope.calibrate.methods.explain_method`` for a method)."""
    from isoscope.calibrate.methods import explain_method

    spec = parse_variant(text)
    if spec.csls_k is not None:
        return VARIANT_DESCRIPTIONS[CSLS].replace("K nearest", f"{spec.csls_k} nearest")
    if spec.method is None:
        return VARIANT_DESCRIPTIONS[RAW]
    words = explain_method(spec.method)
    return words + (
        ", fitted on the queries alone and applied to both" if spec.fit_on == "queries" else ", fitted on the documents"
    )


def variants_help() -> str:
    """For a help text: every form a variant string takes."""
    return f"raw, csls, csls:K, a calibration method ({methods_help()}) fitted on the documents, or METHOD@queries"


@dataclass(frozen=True)
class VariantSpec:
    """A parsed variant: ``method`` (a calibration method string, None for raw and csls), what it is fitted on,
    and ``csls_k`` for CSLS."""

    method: str | None = None
    fit_on: FitOn = "documents"
    csls_k: int | None = None

    def __str__(self) -> str:
        if self.csls_k is not None:
            return CSLS if self.csls_k == CSLS_K else f"{CSLS}:{self.csls_k}"
        if self.method is None:
            return RAW
        return self.method + (QUERY_SIDE if self.fit_on == "queries" else "")

    @property
    def moves_vectors(self) -> bool:
        return self.method is not None


def parse_variant(text: str) -> VariantSpec:
    """The one parser of variant strings (module docstring); InputError saying what a variant may be."""
    raw = str(text).strip().lower()
    if raw in (RAW, "none", ""):
        return VariantSpec()
    name, _, arg = raw.partition(":")
    if name == CSLS:
        if not arg:
            return VariantSpec(csls_k=CSLS_K)
        if not arg.isdigit() or int(arg) < 1:
            raise InputError(f"'{text}': csls:K needs K, the neighbours of a document's penalty, a whole number >= 1")
        return VariantSpec(csls_k=int(arg))
    method, fit_on = raw, "documents"
    if raw.endswith(QUERY_SIDE):
        method, fit_on = raw[: -len(QUERY_SIDE)], "queries"
    try:
        spec = parse_method(method)
    except InputError:
        raise InputError(f"unknown fix '{text}'; a fix is {variants_help()}") from None
    if str(spec) == "none":
        if fit_on == "queries":
            raise InputError(f"'{text}': raw is fitted on nothing; give a method before @queries")
        return VariantSpec()
    return VariantSpec(method=str(spec), fit_on=fit_on)


def parse_variants(texts: list[str] | tuple[str, ...]) -> list[VariantSpec]:
    """Parsed variants, raw first (added when missing: every row is compared with it), each once."""
    specs = [parse_variant(t) for t in texts]
    out: dict[str, VariantSpec] = {RAW: VariantSpec()}
    for spec in specs:
        out.setdefault(str(spec), spec)
    return list(out.values())
