"""The exports as one call each, for the command line, the notebook API (``Space.export``) and the pages:

- ``fit_and_export``: embed a fit corpus with the model's recipe, refuse a corpus too small for the method (the
  too-small rule, before any fit), fit, write the folder (sentence-transformers, or ONNX);
- ``export_model``: a calibrator already fitted on ``fit_vectors``, written as a folder;
- ``export_vectors``: a vectors file's rows calibrated, written in its own format, or as a FAISS index whose
  pre-transform is the fitted map (``faiss=True``);
- ``export_space``: what ``Space.export`` delegates to (the space's model, pooling and calibrator; the fit
  vectors are its parent's rows). It reads the space's attributes and never imports ``isoscope.space``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from isoscope.errors import InputError
from isoscope.export.provenance import ExportReport, measure, texts_digest

if TYPE_CHECKING:
    from collections.abc import Sequence

    import numpy as np

    from isoscope.cache import ArrayCache
    from isoscope.calibrate import Calibrator
    from isoscope.encode.embed import EmbedConfig
    from isoscope.encode.encoder import Encoder
    from isoscope.encode.pooling import Pooling

ExportFormat = Literal["sentence-transformers", "onnx"]
EXPORT_FORMATS: tuple[str, ...] = ("sentence-transformers", "onnx")
StageProgress = Callable[[str], Callable[..., None] | None]


def check_format(fmt: str) -> str:
    if fmt not in EXPORT_FORMATS:
        raise InputError(f"unknown export format '{fmt}'; choose one of {', '.join(EXPORT_FORMATS)}")
    return fmt


def export_model(
    encoder: Encoder,
    calibrator: Calibrator,
    out: str | Path,
    *,
    fit_vectors: np.ndarray,
    fit_texts: Sequence[str] | None = None,
    corpus: str | None = None,
    corpus_digest: str | None = None,
    pooling: Pooling = None,
    config: EmbedConfig | None = None,
    format: str = "sentence-transformers",
    quantize: bool = False,
) -> ExportReport:
    """``calibrator`` (fitted on ``fit_vectors`` (n, d), this encoder's vectors of ``fit_texts`` with ``pooling``)
    written to ``out`` in ``format``: a sentence-transformers folder (affine calibrators) or an ONNX graph (any
    calibrator; ``quantize``: an int8 graph too)."""
    if check_format(format) == "onnx":
        from isoscope.export.onnx_graph import export_onnx

        return export_onnx(
            encoder,
            calibrator,
            out,
            fit_vectors=fit_vectors,
            fit_texts=list(fit_texts) if fit_texts is not None else None,
            corpus=corpus,
            corpus_digest=corpus_digest,
            pooling=pooling,
            config=config,
            quantize=quantize,
        )
    if quantize:
        raise InputError("int8 is an ONNX export's option: add --format onnx")
    from isoscope.export.st_folder import export_sentence_transformers

    return export_sentence_transformers(
        encoder,
        calibrator,
        out,
        fit_vectors=fit_vectors,
        corpus=corpus,
        corpus_digest=corpus_digest,
        pooling=pooling,
        config=config,
    )


def fit_and_export(
    encoder: Encoder,
    texts: Sequence[str],
    calibrator: Calibrator,
    out: str | Path,
    *,
    corpus: str | None = None,
    pooling: Pooling = None,
    config: EmbedConfig | None = None,
    cache: ArrayCache | None = None,
    progress: StageProgress | None = None,
    format: str = "sentence-transformers",
    quantize: bool = False,
) -> ExportReport:
    """Embed ``texts`` (the fit corpus) with ``encoder`` and ``pooling``, fit ``calibrator`` on them and export it
    (``export_model``). A corpus too small for the method is refused before the fit (the too-small rule)."""
    from isoscope.calibrate.fitting import fit_size_warning, fit_timed
    from isoscope.encode.embed import EmbedConfig, encode
    from isoscope.encode.pooling import resolve_pooling

    check_format(format)
    config = config or EmbedConfig()
    spec = resolve_pooling(pooling, encoder)
    if len(texts) < 2:
        raise InputError(f"{corpus or 'the fit corpus'}: need at least 2 texts to fit a calibrator")
    if format != "onnx":
        from isoscope.export.affine import FLOW_REFUSAL, is_affine

        if not is_affine(calibrator):  # refused before the embedding and the fit, not after
            raise InputError(FLOW_REFUSAL.format(method=calibrator.method))
    if warning := fit_size_warning(calibrator, len(texts), encoder.output_dim(spec)):
        raise InputError(f"not exported: {warning}")
    stage = progress or (lambda _: None)
    X = encode(encoder, texts, spec, config=config, progress=stage("embed"), cache=cache)  # (n, d)
    fit_timed(calibrator, X, stage("fit"))
    return export_model(
        encoder,
        calibrator,
        out,
        fit_vectors=X,
        fit_texts=texts,
        corpus=corpus,
        corpus_digest=texts_digest(texts),
        pooling=spec,
        config=config,
        format=format,
        quantize=quantize,
    )


def export_vectors(
    source: str | Path,
    column: str | None,
    calibrator: Calibrator,
    out: str | Path,
    *,
    vectors: np.ndarray,
    fit_vectors: np.ndarray | None = None,
    faiss: bool = False,
    force: bool = False,
) -> ExportReport:
    """``vectors`` (n, d), the rows of ``source`` (its ``column``), through the fitted ``calibrator``: written to
    ``out`` in ``source``'s own format, or (``faiss``) as a FAISS index of the raw rows whose pre-transform is
    the map (affine calibrators only). ``fit_vectors``: what it was fitted on (default: ``vectors``). ``force``:
    replace an existing ``out`` that is not a file of that format (``isoscope.data.outputs``)."""
    from isoscope.data.vectors import vectors_digest
    from isoscope.export.provenance import check_exportable

    fit = vectors if fit_vectors is None else fit_vectors
    check_exportable(calibrator, n_fit=len(fit), dim=int(vectors.shape[1]))
    if faiss:
        from isoscope.export.affine import affine_map
        from isoscope.export.faiss_index import write_faiss_index

        affine = affine_map(calibrator)
        write_faiss_index(affine, vectors, out, force=force)
        d_out = affine.d_out
    else:
        from isoscope.export.vectors import calibrate_vectors, write_vectors

        Z = calibrate_vectors(calibrator, vectors)  # (n, k)
        write_vectors(source, column, Z, out, force=force)
        d_out = int(Z.shape[1])
    before, after = measure(calibrator, fit)
    return ExportReport(
        out=str(out),
        format="faiss" if faiss else "vectors",
        method=calibrator.method,
        model=None,
        model_fingerprint=None,
        pooling=None,
        corpus=Path(source).name,
        corpus_digest=vectors_digest(fit)[:16],
        n_fit=len(fit),
        dim_in=int(vectors.shape[1]),
        dim_out=d_out,
        before=before,
        after=after,
    )


def export_space(space: Any, out: str | Path, *, format: str = "sentence-transformers", quantize: bool = False):
    """``Space.export``: the space's calibrator (one calibration of a model's space) with the space's model and
    pooling, fitted on its parent's rows, written to ``out`` (``export_model``)."""
    if space.embedding is None:
        raise InputError(
            f"{space.name}: a space of vectors has no model to export; write its calibrated vectors with "
            "isoscope export --vectors, or embed texts with a model (isoscope.embed)"
        )
    if space.parent is None or space.calibrator is None:
        raise InputError(f"{space.name}: nothing to export; calibrate the space first (space.calibrate('whitening'))")
    if len(space.transforms) != 1:
        raise InputError(
            f"{space.name}: {len(space.transforms)} calibrations applied one after another; export a space calibrated "
            "once (a chain method like sn+abtt:3 is one calibration)"
        )
    emb = space.embedding
    digest = texts_digest(space.parent.texts) if space.parent.texts is not None else None
    return export_model(
        emb.encoder,
        space.calibrator,
        out,
        fit_vectors=space.parent.vectors,
        fit_texts=space.parent.texts,
        corpus=space.parent.name,
        corpus_digest=digest,
        pooling=emb.pooling,
        config=emb.config,
        format=format,
        quantize=quantize,
    )
