"""The fixed model, zipped: a calibrator the page fitted, written as a sentence-transformers folder by
``isoscope.export`` (cached: the bytes of one zip per model, pooling, method and fit vectors)."""

from __future__ import annotations

import io
import tempfile
import zipfile
from pathlib import Path

import streamlit as st

from isoscope.dashboard.services import calibration, models
from isoscope.dashboard.services.keyed import HASH_FUNCS, Texts, Vectors


@st.cache_data(show_spinner="Writing the fixed model…", max_entries=4, hash_funcs=HASH_FUNCS)
def fixed_model_zip(
    model: models.ModelKey, pooling: str, max_length: int, method: str, flow_json: str, fit: Vectors, fit_texts: Texts
) -> bytes:
    """A zip of the sentence-transformers folder (one top folder, ``fixed-<method>``): ``model``'s fp32 weights,
    ``pooling``, and the calibrator ``method`` fitted (cached) on ``fit``, the vectors of ``fit_texts``.
    InputError for what cannot be exported (a flow, too few fit texts)."""
    from isoscope.encode.embed import EmbedConfig
    from isoscope.export.provenance import texts_digest
    from isoscope.export.run import export_model

    encoder = models.fp32_encoder(model)
    calibrator = calibration.fit_calibrator(method, flow_json, fit)
    name = f"fixed-{method.replace(':', '-').replace('+', '-')}"
    with tempfile.TemporaryDirectory(prefix="isoscope-fixed-") as tmp:
        folder = Path(tmp) / name
        export_model(
            encoder,
            calibrator,
            folder,
            fit_vectors=fit.array,
            fit_texts=list(fit_texts.items),
            corpus=f"{len(fit_texts.items)} texts chosen on the page",
            corpus_digest=texts_digest(fit_texts.items),
            pooling=pooling,
            config=EmbedConfig(max_length=max_length),
        )
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
            for path in sorted(folder.rglob("*")):
                if path.is_file():
                    zf.write(path, f"{name}/{path.relative_to(folder).as_posix()}")
        return out.getvalue()
