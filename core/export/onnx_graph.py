"""One ONNX graph from token ids to calibrated sentence vectors: the encoder, the pooling (or the model's own
recipe: pooling, Dense, Normalize), and the calibrator (every linear one as its affine map, the flow as its
network), exported with ``torch.onnx.export`` as ``isoscope.encode.onnx_runtime`` exports encoders; the tokenizer
files beside it and ``isoscope-onnx.json`` saying how to feed it (the prompt, the truncation). ONNX Runtime and
``tokenizers`` run it alone, without Isoscope or torch.

The export is checked before it is kept: ONNX Runtime's vectors of a probe of the fit texts against Isoscope's
calibrated ones, within ``FP32_ENGINE_TOLERANCE`` (relative L2, ``isoscope.encode.precision``). With
``quantize`` the graph's MatMuls are also quantised to int8 (``isoscope.encode.quantize``) and the loss is
stated: the Spearman correlation of int8 and fp32 cosines over random pairs of the fit texts.
"""

from __future__ import annotations

import copy
import json
import logging
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from isoscope.data.outputs import EXPORT_FOLDER, atomic_folder, check_destination
from isoscope.errors import InputError
from isoscope.export.provenance import ExportReport, check_exportable, measure, model_report, seal_folder

if TYPE_CHECKING:
    from isoscope.calibrate import Calibrator
    from isoscope.encode.embed import EmbedConfig
    from isoscope.encode.encoder import Encoder
    from isoscope.encode.pooling import Pooling, PoolingSpec

log = logging.getLogger(__name__)

MODEL_FILE = "model.onnx"
INT8_FILE = "model_int8.onnx"
CONFIG_FILE = "isoscope-onnx.json"
ONNX_POOLINGS: tuple[str, ...] = ("model", "cls", "mean", "max", "enc_first", "enc_mean")
PROBE_TEXTS = 32  # fit texts the export is checked on
DEFAULT_PROBE: tuple[str, ...] = ("A short sentence.", "Another, somewhat longer sentence about something else.")
SPEARMAN_PAIRS = 2000  # random pairs of fit texts whose cosines int8 and fp32 rank
USAGE = """import json, numpy as np, onnxruntime as ort
from tokenizers import Tokenizer

cfg = json.load(open("{folder}/isoscope-onnx.json"))
tok = Tokenizer.from_file("{folder}/tokenizer.json")
tok.enable_truncation(cfg["max_length"])
tok.enable_padding(pad_id=cfg["pad_id"], pad_token=cfg["pad_token"], direction=cfg["padding_side"])
texts = [cfg["prompt"] + t for t in ["a sentence", "another one"]]
enc = tok.encode_batch([t.lower() for t in texts] if cfg["lowercase"] else texts)
ids = np.array([e.ids for e in enc], np.int64); mask = np.array([e.attention_mask for e in enc], np.int64)
vectors = ort.InferenceSession("{folder}/model.onnx").run(None, {{"input_ids": ids, "attention_mask": mask}})[0]"""


class _Affine(torch.nn.Module):
    """y = (x - c) @ W + r (float32): ``AffineMap`` with its centre subtracted first (accurate in a narrow cone)."""

    def __init__(self, affine: Any) -> None:
        super().__init__()
        c = affine.centre  # (d_in,)
        self.register_buffer("centre", torch.tensor(c, dtype=torch.float32))  # (d_in,)
        self.register_buffer("weight", torch.tensor(affine.weight, dtype=torch.float32))  # (d_in, d_out)
        self.register_buffer("rest", torch.tensor(affine.bias + c @ affine.weight, dtype=torch.float32))  # (d_out,)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x - self.centre) @ self.weight + self.rest


class _FlowLatent(torch.nn.Module):
    """A fitted flow's transform: its fixed pre-whitening (an affine map) then its network's latent."""

    def __init__(self, flow: Any) -> None:
        super().__init__()
        from isoscope.export.affine import affine_map

        self.pre = None if flow.whitening_ is None else _affine(affine_map(flow.whitening_))
        self.net = copy.deepcopy(flow.net_).eval()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.pre is not None:
            x = self.pre(x)
        return self.net(x)[0]


def _affine(affine: Any) -> _Affine:
    return _Affine(affine)


def calibrator_module(calibrator: Calibrator) -> torch.nn.Module:
    """``calibrator`` (fitted) as a torch module (b, d) -> (b, k): a chain step by step, every run of linear steps
    as one affine map, a flow as its pre-whitening and network."""
    from isoscope.calibrate.flow import Flow
    from isoscope.calibrate.linear import Chain
    from isoscope.export.affine import affine_map, is_affine

    if is_affine(calibrator):
        return _affine(affine_map(calibrator))
    if isinstance(calibrator, Flow):
        return _FlowLatent(calibrator)
    if isinstance(calibrator, Chain):
        return torch.nn.Sequential(*(calibrator_module(step) for step in calibrator.steps_))
    raise InputError(f"{calibrator.method}: no ONNX form for {type(calibrator).__name__}")


class _Pipeline(torch.nn.Module):
    """(input_ids, attention_mask) -> the sentence vectors through ``head`` (b, k): a calibrator's module, an
    adapter's."""

    def __init__(self, encoder: Encoder, spec: PoolingSpec, head: torch.nn.Module, prompt_length: int) -> None:
        super().__init__()
        from isoscope.encode.onnx_runtime import encoder_body

        self.body = copy.deepcopy(encoder_body(encoder.model, encoder.is_encoder_decoder)).eval()
        self.spec = spec
        self.recipe = encoder.recipe if spec.name == "model" else None
        self.head = torch.nn.ModuleList(self.recipe.modules) if self.recipe is not None else None
        self.prompt_length = prompt_length
        self.calibrate = head

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        from isoscope.encode.pooling import pool

        last = self.body(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state  # (b, t, d)
        if self.recipe is not None:
            v = self.recipe.apply(last, attention_mask, self.prompt_length)  # (b, d_out)
        else:
            v = pool(self.spec, last, attention_mask)  # (b, d)
        return self.calibrate(v)  # (b, k)


def _tokenize(encoder: Encoder, texts: list[str], prompt: str, max_length: int, lower: bool):
    items = [(prompt + t).lower() if lower else prompt + t for t in texts]
    enc = encoder.tokenizer(items, truncation=True, max_length=max_length, padding=True, return_tensors="np")
    return {"input_ids": enc["input_ids"].astype(np.int64), "attention_mask": enc["attention_mask"].astype(np.int64)}


def _run(path: Path, feed: dict[str, np.ndarray]) -> np.ndarray:
    from isoscope.encode.onnx_runtime import make_session

    return make_session(path.read_bytes()).run(None, feed)[0]


def _rel_error(got: np.ndarray, want: np.ndarray) -> float:
    """The largest relative L2 difference of a row (``FP32_ENGINE_TOLERANCE``'s measure)."""
    den = np.maximum(np.linalg.norm(want, axis=1), 1e-30)
    return float((np.linalg.norm(got - want, axis=1) / den).max())


def condition(calibrator: Calibrator, X: np.ndarray, *, delta: float = 1e-6, seed: int = 0) -> float:
    """How much ``calibrator`` amplifies a small relative change of its input vectors X (p, d): the largest
    relative change of an output row over ``delta``, over three random perturbations of relative size ``delta``.
    About 1 for a well-spread space; huge in a narrow cone, where centring leaves a tiny difference. Two fp32
    engines agree to ``FP32_ENGINE_TOLERANCE`` before the calibrator, so to that times this after it."""
    rng = np.random.default_rng(seed)
    X = np.asarray(X, np.float64)
    Y = calibrator.transform(X)
    worst = 0.0
    for _ in range(3):
        E = rng.normal(size=X.shape)  # (p, d)
        E *= (delta * np.linalg.norm(X, axis=1) / np.linalg.norm(E, axis=1))[:, None]
        worst = max(worst, _rel_error(calibrator.transform(X + E), Y) / delta)
    return worst


def _pair_spearman(a: np.ndarray, b: np.ndarray, seed: int = 0) -> float:
    """Spearman of the cosines of the same random pairs of rows in two spaces."""
    from scipy.stats import spearmanr

    rng = np.random.default_rng(seed)
    i, j = rng.integers(0, len(a), SPEARMAN_PAIRS), rng.integers(0, len(a), SPEARMAN_PAIRS)
    keep = i != j

    def cos(X: np.ndarray) -> np.ndarray:
        U = X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-30)
        return (U[i[keep]] * U[j[keep]]).sum(1)

    return float(spearmanr(cos(a), cos(b)).statistic)


def check_onnx_source(encoder: Encoder, spec: PoolingSpec) -> None:
    """Refuse (one line) a model an ONNX graph cannot hold the way Isoscope ran it: not the fp32 PyTorch model, a
    pooling with no ONNX form."""
    if encoder.precision != "fp32" or encoder.engine != "torch":
        raise InputError(f"export from the fp32 PyTorch model, not {encoder.engine_label}: leave --precision out")
    if spec.name not in ONNX_POOLINGS:
        raise InputError(f"pooling {spec.name} is not exported to ONNX; use one of {', '.join(ONNX_POOLINGS)}")


def export_onnx(
    encoder: Encoder,
    calibrator: Calibrator,
    out: str | Path,
    *,
    fit_vectors: np.ndarray,
    fit_texts: list[str] | None = None,
    corpus: str | None = None,
    corpus_digest: str | None = None,
    pooling: Pooling = None,
    config: EmbedConfig | None = None,
    quantize: bool = False,
) -> ExportReport:
    """Write ``out``: ``model.onnx`` (ids -> calibrated vectors), the tokenizer, ``isoscope-onnx.json``, a README and
    a manifest; ``quantize``: ``model_int8.onnx`` too, with its Spearman loss. ``fit_texts`` (the texts of
    ``fit_vectors``) are the probe the export is checked on; without them, a few fixed sentences."""
    from isoscope.encode.embed import EmbedConfig, encode
    from isoscope.encode.onnx_runtime import require_onnxruntime
    from isoscope.encode.pooling import resolve_pooling

    require_onnxruntime("--format onnx")
    config = config or EmbedConfig()
    spec = resolve_pooling(pooling, encoder)
    check_onnx_source(encoder, spec)
    calibrator._check_fitted()
    check_exportable(calibrator, n_fit=len(fit_vectors), dim=encoder.output_dim(spec))
    out = check_destination(out, kind=EXPORT_FOLDER)  # said before the work; checked again at the rename
    probe = (fit_texts or list(DEFAULT_PROBE))[:PROBE_TEXTS]
    pooled = encode(encoder, probe, spec, config=config)  # (p, d)
    want = calibrator.transform(pooled)  # (p, k) Isoscope's vectors
    kappa = condition(calibrator, pooled)
    before, after = measure(calibrator, fit_vectors)
    with atomic_folder(out, kind=EXPORT_FOLDER) as new:  # renamed into place once sealed
        checks = write_graph(
            encoder, spec, calibrator_module(calibrator), new, config=config, probe=probe, want=want, kappa=kappa,
            quantize=quantize, spearman_texts=fit_texts,
        )  # fmt: skip
        words = (
            encoder.recipe.describe() if encoder.recipe is not None and spec.name == "model" else f"{spec.name} pooling"
        )
        fit = (len(fit_vectors), int(calibrator.n_features_in_), int(want.shape[1]))
        report = model_report(
            out, "onnx", encoder=encoder, pooling=spec.name, calibrator=calibrator, fit=fit, corpus=corpus,
            corpus_digest=corpus_digest, before=before, after=after, checks=checks,
            recipe=f"{words} -> {calibrator.method} (one ONNX graph)",
        )  # fmt: skip
        seal_folder(new, report, usage=USAGE.format(folder=out.name))
    return report


def write_graph(
    encoder: Encoder,
    spec: PoolingSpec,
    head: torch.nn.Module,
    out: Path,
    *,
    config: EmbedConfig,
    probe: list[str],
    want: np.ndarray,
    kappa: float,
    quantize: bool = False,
    spearman_texts: list[str] | None = None,
) -> dict[str, float]:
    """Write into the folder ``out``: ``model.onnx`` (token ids -> ``head`` of the pooled vectors), the tokenizer
    files and ``isoscope-onnx.json``; ONNX Runtime's vectors of the ``probe`` texts checked against ``want``
    (Isoscope's, (p, k)) within ``FP32_ENGINE_TOLERANCE`` times the map's condition ``kappa`` (RuntimeError
    otherwise); ``quantize``: ``model_int8.onnx`` too, its Spearman loss measured on ``spearman_texts``. Returns the
    checks (error, condition, probe size, int8's Spearman)."""
    from isoscope.encode.onnx_runtime import OPSET
    from isoscope.encode.precision import FP32_ENGINE_TOLERANCE
    from isoscope.encode.recipe import prompt_length
    from isoscope.export.st_folder import max_tokens

    prompt = config.prompt_text(encoder)
    card = encoder.recipe.card if encoder.recipe is not None else None
    lower = bool(card and card.do_lower_case)
    include_prompt = all(getattr(m, "include_prompt", True) for m in (encoder.recipe.modules if card else []))
    skip = 0 if include_prompt or spec.name != "model" else prompt_length(encoder.tokenizer, prompt)
    max_length = max_tokens(encoder, config)
    feed = _tokenize(encoder, probe[:2], prompt, max_length, lower)
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # tracer and deprecation warnings of the TorchScript exporter
        torch.onnx.export(
            _Pipeline(encoder, spec, head, skip).eval(),
            (torch.from_numpy(feed["input_ids"]), torch.from_numpy(feed["attention_mask"])),
            str(out / MODEL_FILE),
            input_names=["input_ids", "attention_mask"],
            output_names=["sentence_embedding"],
            dynamic_axes={
                "input_ids": {0: "batch", 1: "sequence"},
                "attention_mask": {0: "batch", 1: "sequence"},
                "sentence_embedding": {0: "batch"},
            },
            opset_version=OPSET,
            dynamo=False,
        )
    got = _run(out / MODEL_FILE, _tokenize(encoder, probe, prompt, max_length, lower))  # (p, k)
    err = _rel_error(got, want)
    if not err <= FP32_ENGINE_TOLERANCE * max(1.0, kappa):
        raise RuntimeError(
            f"the ONNX graph differs from Isoscope's vectors by {err:.1e} (relative L2; tolerance "
            f"{FP32_ENGINE_TOLERANCE:.0e} times the map's condition {kappa:.3g})"
        )
    checks: dict[str, float] = {"max_rel_error": err, "condition": kappa, "probe_texts": float(len(probe))}
    if quantize:
        from isoscope.encode.quantize import quantize_onnx

        quantize_onnx(out / MODEL_FILE, out / INT8_FILE)
        if spearman_texts:
            feed = _tokenize(encoder, list(spearman_texts[:1000]), prompt, max_length, lower)
            checks["int8_spearman_vs_fp32"] = _pair_spearman(_run(out / MODEL_FILE, feed), _run(out / INT8_FILE, feed))
    with tempfile.TemporaryDirectory(prefix="isoscope-tok-") as tmp:
        encoder.tokenizer.save_pretrained(tmp)
        if not (Path(tmp) / "tokenizer.json").is_file():
            raise InputError(f"{encoder.name} has no fast tokenizer (tokenizer.json); ONNX Runtime users need one")
        for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
            if (Path(tmp) / name).is_file():
                shutil.copy(Path(tmp) / name, out / name)
    tok = encoder.tokenizer
    settings = {
        "prompt": prompt,
        "max_length": max_length,
        "lowercase": lower,
        "pad_id": int(tok.pad_token_id or 0),
        "pad_token": str(tok.pad_token or ""),
        "padding_side": str(getattr(tok, "padding_side", "right")),
        "inputs": ["input_ids", "attention_mask"],
        "output": "sentence_embedding",
        "int8": INT8_FILE if quantize else None,
    }
    (out / CONFIG_FILE).write_text(json.dumps(settings, indent=1) + "\n", encoding="utf-8")
    return checks
