"""What an export says about itself: what was fitted on what, and the geometry before and after, measured at
export time on the vectors the calibrator was fitted on; written as the folder's README and its manifest."""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from isoscope.errors import InputError

if TYPE_CHECKING:
    from collections.abc import Sequence

    import numpy as np

    from isoscope.calibrate import Calibrator


def texts_digest(texts: Sequence[str]) -> str:
    """SHA-256 (first 16 hex digits) of the texts, in order: names the corpus a calibrator was fitted on."""
    h = hashlib.sha256()
    for text in texts:
        h.update(text.encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
    return h.hexdigest()[:16]


def check_exportable(calibrator: Calibrator, *, n_fit: int, dim: int) -> None:
    """Refuse (InputError, one line) a calibrator fitted on fewer vectors than its method needs (the too-small
    rule of ``isoscope.calibrate.fitting``), or whose input dimension is not the model's output dimension."""
    from isoscope.calibrate.fitting import fit_size_warning

    d_in = int(calibrator.n_features_in_)
    if d_in != dim:
        raise InputError(
            f"{calibrator.method} was fitted on {d_in}-dimensional vectors but the model's recipe gives {dim}: a Dense "
            f"head {d_in}->... cannot follow it; fit the calibrator on this model's vectors (same pooling)"
        )
    if warning := fit_size_warning(calibrator, n_fit, dim):
        raise InputError(f"not exported: {warning}")


def geometry_numbers(vectors: np.ndarray, seed: int = 0) -> dict[str, float]:
    """The numbers a README states: avg cosine of random pairs and IsoScore (seeded; NaN where undefined)."""
    from isoscope.geometry.metrics import avg_cosine, isoscore

    out: dict[str, float] = {}
    for name, fn in (("avg_cosine", avg_cosine), ("isoscore", isoscore)):
        try:
            out[name] = float(fn(vectors, seed=seed) if fn is avg_cosine else fn(vectors))
        except (InputError, ValueError):
            out[name] = float("nan")
    return out


@dataclass
class ExportReport:
    """One export: where, what, fitted on what, and the numbers before/after; ``to_dict()`` is what
    ``isoscope export --json`` prints and the manifest's provenance."""

    out: str
    format: str  # sentence-transformers, onnx, vectors, faiss
    method: str
    model: str | None
    model_fingerprint: str | None
    pooling: str | None
    corpus: str | None  # the fit corpus's name
    corpus_digest: str | None  # texts_digest of the fit texts (or the vectors' digest)
    n_fit: int
    dim_in: int
    dim_out: int
    before: dict[str, float] = field(default_factory=dict)  # geometry_numbers of the fit vectors
    after: dict[str, float] = field(default_factory=dict)  # ... and of them calibrated
    date: str = field(default_factory=lambda: datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
    isoscope_version: str = field(default_factory=lambda: _version())
    recipe: str | None = None  # the exported pipeline in words
    checks: dict[str, float] = field(default_factory=dict)  # ONNX: the export's error on a probe, int8's Spearman
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def model_report(
    out: Path, format: str, *, encoder, pooling: str, calibrator: Calibrator, fit: tuple[int, int, int], **numbers
) -> ExportReport:
    """The ``ExportReport`` of a model export (a sentence-transformers folder, an ONNX graph) of ``encoder`` with
    ``pooling`` and ``calibrator``; ``fit``: (rows fitted on, dimension in, dimension out); ``numbers``: the
    fields every export fills its own way (corpus, corpus_digest, before, after, recipe, checks)."""
    n_fit, dim_in, dim_out = fit
    return ExportReport(
        out=str(out),
        format=format,
        method=calibrator.method,
        model=encoder.name,
        model_fingerprint=encoder.fingerprint,
        pooling=pooling,
        n_fit=n_fit,
        dim_in=dim_in,
        dim_out=dim_out,
        **numbers,
    )


def _version() -> str:
    """The installed distribution's version (its metadata, not the top package: nothing else of it is needed)."""
    from importlib.metadata import version

    return version("isoscope")


def measure(calibrator: Calibrator, fit_vectors: np.ndarray) -> tuple[dict[str, float], dict[str, float]]:
    """``geometry_numbers`` of the fit vectors (n, d) before and after ``calibrator``."""
    return geometry_numbers(fit_vectors), geometry_numbers(calibrator.transform(fit_vectors))


def seal_folder(out: Path, report: ExportReport, *, usage: str) -> None:
    """The last step of every model export: the folder's README (``readme``), then the checksum manifest over
    every file (``isoscope.encode.manifest``) that Isoscope checks when it loads the folder again."""
    from isoscope.encode.manifest import write_manifest

    (out / "README.md").write_text(readme(report, usage=usage), encoding="utf-8")
    write_manifest(out, report.to_dict())


def readme(report: ExportReport, *, usage: str) -> str:
    """The README.md of an exported folder: provenance, the numbers, how to use it."""

    def row(name: str) -> str:
        return f"| {name} | {report.before.get(name, float('nan')):.4f} | {report.after.get(name, float('nan')):.4f} |"

    return "\n".join(
        [
            f"# {report.model or 'model'} + {report.method} (exported by Isoscope {report.isoscope_version})",
            "",
            f"The model's recipe ({report.recipe}) followed by the calibrator `{report.method}`, fitted by Isoscope "
            "without labels and carried here as an exact affine map, so the vectors are Isoscope's calibrated ones.",
            "",
            "## Provenance",
            "",
            f"- model: {report.model} (fingerprint `{report.model_fingerprint}`), pooling `{report.pooling}`",
            f"- method: `{report.method}`, {report.dim_in} -> {report.dim_out} dimensions",
            f"- fitted on: {report.corpus} ({report.n_fit} texts, digest `{report.corpus_digest}`)",
            f"- exported: {report.date}, Isoscope {report.isoscope_version}",
            "",
            "## Measured at export (on the fit texts)",
            "",
            "| | before | after |",
            "|---|---|---|",
            row("avg_cosine"),
            row("isoscore"),
            "",
            "avg_cosine: mean cosine of random pairs (0 is isotropic); isoscore: IsoScore (1 is isotropic).",
            *[f"- {name}: {value:.6g}" for name, value in report.checks.items()],
            "",
            "## Use",
            "",
            "```python",
            usage,
            "```",
            "",
            "Every file's SHA-256 is in `isoscope-export.json`; Isoscope refuses the folder when one was changed.",
            "",
        ]
    )
