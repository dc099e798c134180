"""A fitted calibrator written into a sentence-transformers folder: the model's own recipe (for a bare
transformers model, ``Transformer`` + ``Pooling`` as Isoscope runs it), then a ``Dense`` module holding the
calibrator's exact affine map (identity activation), then ``Normalize`` when the recipe ended with it; a README
with the provenance and the numbers before/after, and a manifest of every file's SHA-256
(``isoscope.encode.manifest``), checked when Isoscope loads the folder again.

``SentenceTransformer(folder).encode(texts)`` then gives Isoscope's calibrated vectors (cosine >= 1 - 1e-5), in a
process where Isoscope is not installed. The module is not named after the library, so it never shadows it.
"""

from __future__ import annotations

import logging
import tempfile
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from isoscope.data.outputs import EXPORT_FOLDER, atomic_folder, check_destination
from isoscope.errors import InputError
from isoscope.export.affine import AffineMap, affine_map
from isoscope.export.provenance import ExportReport, check_exportable, measure, model_report, seal_folder

if TYPE_CHECKING:
    import numpy as np

    from isoscope.calibrate import Calibrator
    from isoscope.encode.embed import EmbedConfig
    from isoscope.encode.encoder import Encoder
    from isoscope.encode.pooling import Pooling, PoolingSpec

log = logging.getLogger(__name__)

ST_POOLINGS: tuple[str, ...] = ("model", "cls", "mean", "max")  # what sentence-transformers' Pooling also runs
USAGE = """from sentence_transformers import SentenceTransformer

model = SentenceTransformer("{folder}")
vectors = model.encode(["a sentence", "another one"])  # calibrated, as Isoscope computed them"""


def _models() -> Any:
    try:
        with warnings.catch_warnings():  # sentence_transformers.models is deprecated in 6.x, the only path in 3-5
            warnings.simplefilter("ignore", DeprecationWarning)
            from sentence_transformers import SentenceTransformer, models
    except ImportError:
        raise InputError(
            "writing a sentence-transformers folder needs sentence-transformers: pip install sentence-transformers"
        ) from None
    return SentenceTransformer, models


def max_tokens(encoder: Encoder, config: EmbedConfig) -> int:
    """The truncation Isoscope's run uses (``isoscope.encode.embed``): the run's max length, the model's limit,
    the recipe's ``max_seq_length``, whichever is smallest."""
    from isoscope.encode.embed import model_max_tokens

    limits = [config.max_length, model_max_tokens(encoder)]
    if encoder.recipe is not None:
        limits.append(encoder.recipe.card.max_seq_length)
    return min(v for v in limits if v is not None)


def check_source(encoder: Encoder, pooling: PoolingSpec) -> None:
    """Refuse what a sentence-transformers folder cannot hold the way Isoscope ran it (one line each)."""
    if encoder.precision != "fp32" or encoder.engine != "torch":
        raise InputError(f"export from the fp32 PyTorch model, not {encoder.engine_label}: leave --precision out")
    if encoder.is_encoder_decoder:
        raise InputError(f"{encoder.name} is an encoder-decoder model; export it with --format onnx")
    if pooling.name not in ST_POOLINGS:
        raise InputError(
            f"pooling {pooling.name} has no sentence-transformers module; export with pooling "
            f"{', '.join(ST_POOLINGS)}, or use --format onnx"
        )


def dense_module(affine: AffineMap) -> Any:
    """sentence-transformers' ``Dense`` holding ``affine`` (weight stored (d_out, d_in) as torch's Linear does),
    identity activation."""
    import torch

    _, models = _models()
    return models.Dense(
        affine.d_in,
        affine.d_out,
        bias=True,
        activation_function=torch.nn.Identity(),
        init_weight=torch.tensor(affine.weight.T, dtype=torch.float32),  # (d_out, d_in)
        init_bias=torch.tensor(affine.bias, dtype=torch.float32),  # (d_out,)
    )


def recipe_modules(encoder: Encoder, pooling: PoolingSpec, config: EmbedConfig, tmp: Path):
    """(the model's modules as Isoscope runs it: ``Transformer`` saved in ``tmp``, then its recipe's head or a
    ``Pooling``; its prompts, the default prompt name, the pipeline in words): what an export appends to."""
    _, models = _models()
    encoder.model.save_pretrained(tmp, safe_serialization=True)
    encoder.tokenizer.save_pretrained(tmp)
    card = encoder.recipe.card if encoder.recipe is not None else None
    transformer = models.Transformer(
        str(tmp), max_seq_length=max_tokens(encoder, config), do_lower_case=bool(card and card.do_lower_case)
    )
    if pooling.name == "model":
        assert encoder.recipe is not None  # resolve_pooling refuses ``model`` without a recipe
        head = list(encoder.recipe.modules)
        words = encoder.recipe.describe()
    else:
        head = [models.Pooling(encoder.hidden_size, pooling.name)]
        words = f"{pooling.name} pooling of the last layer"
    prompts = dict(card.prompts) if card is not None else {}
    default = card.default_prompt_name if card is not None else None
    if config.prompt is not None or config.prompt_name is not None:  # the run's own prompt becomes the default
        prompts = {**prompts, "isoscope": config.prompt_text(encoder)}
        default = "isoscope"
    return [transformer, *head], prompts, default, words


def _pipeline(encoder: Encoder, pooling: PoolingSpec, affine: AffineMap, config: EmbedConfig, tmp: Path):
    """(modules, prompts, default prompt name, the pipeline in words)."""
    _, models = _models()
    modules, prompts, default, words = recipe_modules(encoder, pooling, config, tmp)
    normalize = type(modules[-1]).__name__ == "Normalize"
    tail = [dense_module(affine), *([models.Normalize()] if normalize else [])]
    words += f" -> Dense {affine.d_in}->{affine.d_out} (the calibrator)" + (" -> normalise" if normalize else "")
    return [*modules, *tail], prompts, default, words


def export_sentence_transformers(
    encoder: Encoder,
    calibrator: Calibrator,
    out: str | Path,
    *,
    fit_vectors: np.ndarray,
    corpus: str | None = None,
    corpus_digest: str | None = None,
    pooling: Pooling = None,
    config: EmbedConfig | None = None,
) -> ExportReport:
    """Write ``out``: a sentence-transformers folder whose ``encode`` gives ``calibrator``'s vectors of this
    encoder and pooling. ``fit_vectors`` (n, d): the vectors the calibrator was fitted on (the too-small rule and
    the numbers before/after are measured on them). InputError for a flow (use ONNX), a calibrator fitted on
    too few texts or on vectors of another dimension, a pooling sentence-transformers cannot run, an ``out``
    that is not absent, empty or an earlier export (``isoscope.data.outputs``: written beside it, renamed in)."""
    from isoscope.encode.embed import EmbedConfig
    from isoscope.encode.pooling import resolve_pooling

    config = config or EmbedConfig()
    spec = resolve_pooling(pooling, encoder)
    check_source(encoder, spec)
    affine = affine_map(calibrator)
    check_exportable(calibrator, n_fit=len(fit_vectors), dim=encoder.output_dim(spec))
    out = check_destination(out, kind=EXPORT_FOLDER)  # said before the work; checked again at the rename
    SentenceTransformer, _ = _models()
    before, after = measure(calibrator, fit_vectors)
    with tempfile.TemporaryDirectory(prefix="isoscope-export-") as tmp, atomic_folder(out, kind=EXPORT_FOLDER) as new:
        modules, prompts, default, words = _pipeline(encoder, spec, affine, config, Path(tmp))
        model = SentenceTransformer(
            modules=modules, device="cpu", prompts=prompts, default_prompt_name=default, similarity_fn_name="cosine"
        )
        model.save(str(new), create_model_card=False)
        fit = (len(fit_vectors), affine.d_in, affine.d_out)
        report = model_report(
            out, "sentence-transformers", encoder=encoder, pooling=spec.name, calibrator=calibrator, fit=fit,
            corpus=corpus, corpus_digest=corpus_digest, before=before, after=after, recipe=words,
        )  # fmt: skip
        seal_folder(new, report, usage=USAGE.format(folder=out.name))  # the manifest last, then the rename
    log.info("exported %s + %s to %s", encoder.name, calibrator.method, out)
    return report
