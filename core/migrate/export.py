"""Take the adapter home: a fitted adapter carried out of Isoscope, exactly, into what a serving stack loads.

export_adapter(adapter, "q-encoder", format="sentence-transformers", model=new_encoder)   # new -> legacy queries
export_adapter(adapter, "pre", format="faiss", probe=old_vectors)                         # old -> new, stored rows
export_adapter(adapter, "graph", format="onnx")                                            # any adapter, on vectors

Formats (``ADAPTER_FORMATS``), each a folder with the adapter itself (``adapter.json`` + ``.safetensors``, so
``isoscope migrate apply --adapter`` reads it), a README of its provenance and a SHA-256 manifest
(``isoscope.encode.manifest``):

- ``faiss``: ``adapter.faiss``, an ``IndexPreTransform`` whose chain is the adapter (``NormalizationTransform``,
  since the adapter reads directions, then ``LinearTransform``) over an empty ``IndexFlatIP`` of the target
  space; the chain maps stored old vectors into the new space (old -> new) or new queries into the legacy space
  (new -> legacy). Affine adapters only (procrustes, ridge, lowrank).
- ``sentence-transformers``: the source model's own recipe (``isoscope.export.st_folder.recipe_modules``) followed
  by ``Normalize`` and the adapter as ``Dense`` modules: one ``Dense`` (identity) for an affine adapter; for the
  residual MLP ``y = x W + b + gelu(x W1 + b1) W2 + b2`` two, exactly, with no custom code: ``Dense(d -> 2d + h,
  GELU)`` holding ``[I, -I, W1]`` then ``Dense(2d + h -> d_out)`` holding ``[W; -W; W2]``, since ``gelu(x) -
  gelu(-x) = x``. The local adapter picks a map by the nearest cluster, which no chain of ``Dense`` modules
  computes: refused, with the ONNX graph offered.
- ``onnx``: without a model, ``adapter.onnx``, a graph from vectors (b, d_in) to mapped vectors (b, d_out) of any
  adapter, computed in float64 as Isoscope computes it (the local adapter's routing by ``ArgMin`` and
  ``GatherElements``; the MLP's GELU in float32, ONNX Runtime having no float64 ``Erf``); with a model, one graph
  from token ids to mapped vectors (``isoscope.export.onnx_graph.write_graph``: the model's recipe, then the
  adapter's graph).

Every export is checked before it is kept: the written files are loaded back (FAISS, ONNX Runtime,
sentence-transformers) and their vectors of a probe compared with ``adapter.transform``'s, within
``TOLERANCE`` (relative L2 of the worst row) times the adapter's measured condition (how much it amplifies a
float32 rounding of its input; about 1 for a well-spread space); the numbers go into the README. Written under a
temporary name beside ``out`` and renamed into place (``isoscope.data.outputs``): a failed or killed export leaves
``out`` as it was; an earlier export there is replaced as a whole, a folder holding anything else is refused.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from isoscope.errors import InputError

if TYPE_CHECKING:
    import torch

    from isoscope.encode.embed import EmbedConfig
    from isoscope.encode.encoder import Encoder
    from isoscope.encode.pooling import Pooling
    from isoscope.migrate.adapters import Adapter

log = logging.getLogger(__name__)

ADAPTER_FORMATS: tuple[str, ...] = ("faiss", "sentence-transformers", "onnx")
DIRECTIONS: tuple[str, ...] = ("new->legacy", "old->new")
# what a saved adapter's metadata (``Adapter.save(folder, metadata=...)``) may say about its fit, read into the README
PROVENANCE_KEYS: tuple[str, ...] = (
    "direction",
    "old_model",
    "old_fingerprint",
    "new_model",
    "new_fingerprint",
    "fit_digest",
    "fit_source",
)
FAISS_FILE = "adapter.faiss"
GRAPH_FILE = "adapter.onnx"
TOLERANCE = 1e-5  # the bar: relative L2 of any probe row, times the adapter's condition
PROBE_ROWS = 256  # rows of the probe an export is checked on
MIX_NOTE = (
    "Map every stored vector: an index mixing true new vectors of some documents with mapped vectors of the rest "
    "scored lower than the fully mapped one where it was measured (issue 53)."
)
USAGE = {
    "faiss": """import faiss, numpy as np

pre = faiss.read_index("{folder}/adapter.faiss")  # IndexPreTransform: its chain is the adapter


def mapped(x):  # (n, {d_in}) float32 -> (n, {d_out}): the adapter, as Isoscope maps
    x = np.ascontiguousarray(x, dtype="float32")
    for i in range(pre.chain.size()):
        x = faiss.downcast_VectorTransform(pre.chain.at(i)).apply(x)
    return x""",
    "onnx": """import numpy as np, onnxruntime as ort

session = ort.InferenceSession("{folder}/adapter.onnx")
mapped = session.run(None, {{"vectors": np.asarray(x, dtype=np.float32)}})[0]  # (n, {d_in}) -> (n, {d_out})""",
    "sentence-transformers": """from sentence_transformers import SentenceTransformer

model = SentenceTransformer("{folder}")
vectors = model.encode(["a query", "another one"])  # in the adapter's target space, as Isoscope maps them""",
}


@dataclass
class AdapterExport:
    """One adapter export: where, what, fitted on what, and the checks; ``to_dict()`` is the manifest's provenance
    and what a command prints."""

    out: str
    format: str
    method: str
    direction: str | None
    dim_in: int
    dim_out: int
    n_pairs: int
    holdout_cosine: float | None
    model: str | None = None  # the model a sentence-transformers folder or an ids graph wraps
    model_fingerprint: str | None = None
    pooling: str | None = None
    old_model: str | None = None
    old_fingerprint: str | None = None
    new_model: str | None = None
    new_fingerprint: str | None = None
    fit_digest: str | None = None
    fit_source: str | None = None
    recipe: str = ""  # the exported pipeline in words
    checks: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    date: str = field(default_factory=lambda: datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
    isoscope_version: str = field(default_factory=lambda: _version())

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _version() -> str:
    from isoscope import __version__

    return __version__


# ---------------------------------------------------------------- the adapter's forms


def adapter_form(adapter: Adapter) -> str:
    """``affine``, ``mlp`` or ``local``: which exact form the adapter has (its affine map, the residual MLP's
    arrays, the local adapter's routing); InputError for an adapter with none of them."""
    if adapter.affine:
        return "affine"
    if hasattr(adapter, "net_"):
        return "mlp"
    if hasattr(adapter, "centroids_"):
        return "local"
    raise InputError(f"{adapter.method}: no exported form for {type(adapter).__name__} (affine, mlp or local)")


def _graph_module(adapter: Adapter, form: str) -> torch.nn.Module:
    """The adapter as a torch module (b, d_in) -> (b, d_out) float32, computed in float64 as ``transform``."""
    import torch

    def f64(a: np.ndarray) -> torch.Tensor:
        return torch.tensor(np.asarray(a, np.float64), dtype=torch.float64)

    class AdapterGraph(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            affine = adapter.affine_map() if form == "affine" else None
            self.register_buffer("weight", f64(affine.weight if affine else adapter.weight_))  # (d_in, d_out)
            self.register_buffer("bias", f64(affine.bias if affine else adapter.bias_))  # (d_out,)
            if form == "mlp":
                for name in ("w1", "b1", "w2", "b2"):
                    self.register_buffer(name, f64(adapter.net_[name]))
            if form == "local":
                k, d_in, d_out = adapter.weights_.shape
                self.k, self.d_out = int(k), int(d_out)
                self.register_buffer("centroids", f64(adapter.centroids_))  # (k, d_in)
                self.register_buffer("sq", f64((adapter.centroids_**2).sum(1)))  # (k,)
                stacked = np.transpose(adapter.weights_, (1, 0, 2)).reshape(d_in, k * d_out)
                self.register_buffer("weights", f64(stacked))  # (d_in, k * d_out)
                self.register_buffer("biases", f64(adapter.biases_.reshape(-1)))  # (k * d_out,)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = x.to(torch.float64)
            x = x / torch.sqrt((x * x).sum(dim=1, keepdim=True))  # unit rows, as the adapter reads them
            if form == "local":  # the nearest centroid (|x| = 1: |c|^2 - 2 x.c orders as the distance)
                route = torch.argmin(self.sq - 2.0 * (x @ self.centroids.T), dim=1)  # (b,)
                every = (x @ self.weights + self.biases).reshape(-1, self.k, self.d_out)  # (b, k, d_out)
                index = route[:, None, None].expand(-1, 1, self.d_out)
                return torch.gather(every, 1, index)[:, 0].to(torch.float32)
            y = x @ self.weight + self.bias  # (b, d_out)
            if form == "mlp":  # ONNX Runtime has no float64 Erf: the GELU in float32
                hidden = torch.nn.functional.gelu((x @ self.w1 + self.b1).to(torch.float32)).to(torch.float64)
                y = y + hidden @ self.w2 + self.b2
            return y.to(torch.float32)

    return AdapterGraph().eval()


def _dense_chain(adapter: Adapter, form: str) -> tuple[list[Any], str]:
    """(sentence-transformers modules after the model, their words): ``Normalize`` then the adapter as Dense."""
    import torch

    from isoscope.export.st_folder import _models, dense_module

    _, models = _models()
    if form == "local":
        raise InputError(
            f"{adapter.method}: the local adapter picks a map by the nearest cluster, which no sentence-transformers "
            "module computes without custom code; export it with --format onnx (with the model: one graph from "
            "token ids; without: a graph from vectors)"
        )
    if form == "affine":
        affine = adapter.affine_map()
        return [models.Normalize(), dense_module(affine)], f"normalise -> Dense {affine.d_in}->{affine.d_out}"
    d_in, h = adapter.net_["w1"].shape
    d_out = adapter.weight_.shape[1]
    eye = np.eye(d_in)
    first = np.vstack([eye, -eye, adapter.net_["w1"].T])  # (2 d_in + h, d_in): x, -x, the hidden pre-activation
    second = np.hstack([adapter.weight_.T, -adapter.weight_.T, adapter.net_["w2"].T])  # (d_out, 2 d_in + h)

    def dense(w: np.ndarray, b: np.ndarray, activation: torch.nn.Module) -> Any:
        return models.Dense(
            w.shape[1], w.shape[0], bias=True, activation_function=activation,
            init_weight=torch.tensor(w, dtype=torch.float32), init_bias=torch.tensor(b, dtype=torch.float32),
        )  # fmt: skip

    hidden = dense(first, np.concatenate([np.zeros(2 * d_in), adapter.net_["b1"]]), torch.nn.GELU())
    out = dense(second, adapter.bias_ + adapter.net_["b2"], torch.nn.Identity())
    words = f"normalise -> Dense {d_in}->{2 * d_in + h} (GELU) -> Dense {2 * d_in + h}->{d_out} (the residual MLP)"
    return [models.Normalize(), hidden, out], words


# ---------------------------------------------------------------- checks


def _rel_error(got: np.ndarray, want: np.ndarray) -> float:
    """The largest relative L2 difference of a row."""
    den = np.maximum(np.linalg.norm(want, axis=1), 1e-30)
    return float((np.linalg.norm(np.asarray(got, np.float64) - want, axis=1) / den).max())


def _checked(got: np.ndarray, want: np.ndarray, kappa: float, what: str, *, tolerance: float = TOLERANCE) -> dict:
    """The checks of an export whose vectors ``got`` should be ``want`` (p, k); RuntimeError (a bug) beyond the
    tolerance times the adapter's condition."""
    err = _rel_error(got, want)
    if got.shape != want.shape or not err <= tolerance * max(1.0, kappa):
        raise RuntimeError(
            f"the {what} differs from the adapter's vectors by {err:.1e} (relative L2; tolerance {tolerance:.0e} "
            f"times the adapter's condition {kappa:.3g})"
        )
    return {"max_rel_error": err, "condition": kappa, "probe_rows": float(len(want))}


def _probe(adapter: Adapter, probe: np.ndarray | None) -> np.ndarray:
    """The rows an export is checked on: the first ``PROBE_ROWS`` of ``probe`` (the fit or stored vectors), else
    seeded Gaussian rows (a check of the arithmetic, not of the data's cone)."""
    if probe is None:
        return np.random.default_rng(0).normal(size=(PROBE_ROWS, adapter.n_features_in_)).astype(np.float32)
    probe = np.asarray(probe, np.float32)[:PROBE_ROWS]
    if probe.ndim != 2 or probe.shape[1] != adapter.n_features_in_ or not len(probe):
        raise InputError(
            f"the probe vectors have shape {probe.shape}; the adapter maps {adapter.n_features_in_}-dimensional rows"
        )
    return probe


# ---------------------------------------------------------------- the formats


def _write_faiss(adapter: Adapter, form: str, tmp: Path, probe: np.ndarray, kappa: float) -> tuple[str, dict]:
    import faiss

    from isoscope.export.faiss_index import linear_transform

    affine = adapter.affine_map()
    index = faiss.IndexPreTransform(linear_transform(affine), faiss.IndexFlatIP(affine.d_out))
    index.prepend_transform(faiss.NormalizationTransform(affine.d_in, 2.0))  # first: rows to length 1
    faiss.write_index(index, str(tmp / FAISS_FILE))
    back = faiss.read_index(str(tmp / FAISS_FILE))
    got = np.ascontiguousarray(probe, np.float32)
    for i in range(back.chain.size()):
        got = faiss.downcast_VectorTransform(back.chain.at(i)).apply(got)
    checks = _checked(got, adapter.transform(probe), kappa, "FAISS pre-transform")
    return f"FAISS IndexPreTransform: L2 normalisation -> LinearTransform {affine.d_in}->{affine.d_out}", checks


def _write_vector_graph(adapter: Adapter, form: str, tmp: Path, probe: np.ndarray, kappa: float) -> tuple[str, dict]:
    import warnings

    import torch

    from isoscope.encode.onnx_runtime import OPSET, make_session, require_onnxruntime

    require_onnxruntime("--format onnx")
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # tracer and deprecation warnings of the TorchScript exporter
        torch.onnx.export(
            _graph_module(adapter, form),
            (torch.from_numpy(np.ascontiguousarray(probe[:2], np.float32)),),
            str(tmp / GRAPH_FILE),
            input_names=["vectors"],
            output_names=["mapped"],
            dynamic_axes={"vectors": {0: "batch"}, "mapped": {0: "batch"}},
            opset_version=OPSET,
            dynamo=False,
        )
    got = make_session((tmp / GRAPH_FILE).read_bytes()).run(None, {"vectors": np.asarray(probe, np.float32)})[0]
    checks = _checked(got, adapter.transform(probe), kappa, "ONNX graph")
    return f"ONNX graph: vectors (b, {adapter.n_features_in_}) -> {adapter.method} in float64 -> mapped", checks


def _model_parts(adapter: Adapter, model: Encoder | str, pooling: Pooling, config: EmbedConfig | None):
    """(encoder, pooling spec, config): the model the adapter reads (loaded when named), its output dimension
    checked against the adapter's."""
    from isoscope.encode.embed import EmbedConfig
    from isoscope.encode.pooling import resolve_pooling

    if isinstance(model, str):
        from isoscope.encode.models import load_encoder

        model = load_encoder(model)
    config = config or EmbedConfig()
    spec = resolve_pooling(pooling, model)
    dim = model.output_dim(spec)
    if dim != adapter.n_features_in_:
        raise InputError(
            f"{model.name} gives {dim}-dimensional vectors ({spec.name} pooling) but {adapter.method} maps "
            f"{adapter.n_features_in_}-dimensional ones: give the model the adapter reads (the new one for new->legacy)"
        )
    return model, spec, config


def _write_st(adapter, form, tmp, *, encoder, spec, config, texts) -> tuple[str, dict]:
    import tempfile

    from isoscope.encode.embed import encode
    from isoscope.export.onnx_graph import condition
    from isoscope.export.st_folder import _models, check_source, recipe_modules

    check_source(encoder, spec)
    tail, tail_words = _dense_chain(adapter, form)
    SentenceTransformer, _ = _models()
    with tempfile.TemporaryDirectory(prefix="isoscope-export-") as work:
        modules, prompts, default, words = recipe_modules(encoder, spec, config, Path(work))
        model = SentenceTransformer(
            modules=[*modules, *tail], device="cpu", prompts=prompts, default_prompt_name=default,
            similarity_fn_name="cosine",
        )  # fmt: skip
        model.save(str(tmp), create_model_card=False)
    pooled = encode(encoder, texts, spec, config=config)  # (p, d) Isoscope's vectors of the probe texts
    kappa = condition(adapter, pooled)
    back = SentenceTransformer(str(tmp), device="cpu", local_files_only=True)
    got = back.encode(texts, convert_to_numpy=True, batch_size=len(texts))
    checks = _checked(got, adapter.transform(pooled), kappa, "sentence-transformers folder")
    return f"{words} -> {tail_words}", checks


def _write_ids_graph(adapter, form, tmp, *, encoder, spec, config, texts) -> tuple[str, dict]:
    from isoscope.encode.embed import encode
    from isoscope.encode.onnx_runtime import require_onnxruntime
    from isoscope.export.onnx_graph import check_onnx_source, condition, write_graph

    require_onnxruntime("--format onnx")
    check_onnx_source(encoder, spec)
    pooled = encode(encoder, texts, spec, config=config)  # (p, d)
    want, kappa = adapter.transform(pooled), condition(adapter, pooled)
    module = _graph_module(adapter, form)
    checks = write_graph(encoder, spec, module, tmp, config=config, probe=list(texts), want=want, kappa=kappa)
    words = encoder.recipe.describe() if encoder.recipe is not None and spec.name == "model" else f"{spec.name} pooling"
    return f"{words} -> {adapter.method} (one ONNX graph from token ids)", checks


# ---------------------------------------------------------------- the export


def _as_adapter(adapter: Adapter | str | Path) -> Adapter:
    from isoscope.migrate.adapters import Adapter

    if isinstance(adapter, str | Path):
        return Adapter.load(adapter)
    if not isinstance(adapter, Adapter):
        raise InputError(f"export_adapter needs a fitted adapter or its folder; got {type(adapter).__name__}")
    adapter._check_fitted()
    return adapter


def _provenance(adapter: Adapter, given: dict[str, Any] | None, direction: str | None) -> dict[str, Any]:
    saved = getattr(adapter, "metadata_", {}) or {}
    unknown = sorted(set(given or {}) - set(PROVENANCE_KEYS))
    if unknown:
        raise InputError(f"unknown provenance key '{unknown[0]}'; known: {', '.join(PROVENANCE_KEYS)}")
    out = {k: saved.get(k) for k in PROVENANCE_KEYS} | dict(given or {})
    if direction is not None:
        out["direction"] = direction
    if out["direction"] is not None and out["direction"] not in DIRECTIONS:
        raise InputError(f"unknown direction '{out['direction']!s:.40}'; choose one of {', '.join(DIRECTIONS)}")
    return {k: (None if v is None else str(v)) for k, v in out.items()}


def export_adapter(
    adapter: Adapter | str | Path,
    out: str | Path,
    *,
    format: str,
    model: Encoder | str | None = None,
    pooling: Pooling = None,
    config: EmbedConfig | None = None,
    direction: str | None = None,
    probe: np.ndarray | None = None,
    probe_texts: list[str] | None = None,
    provenance: dict[str, Any] | None = None,
) -> AdapterExport:
    """Write ``adapter`` (fitted, or its saved folder) to the new folder ``out`` in ``format`` (``ADAPTER_FORMATS``;
    see the module doc). ``model``: the model whose vectors the adapter reads (an ``Encoder`` or a name Isoscope
    loads; needed for ``sentence-transformers``, optional for ``onnx``), with ``pooling`` and ``config``.
    ``direction`` and ``provenance`` (``PROVENANCE_KEYS``) complete what the adapter's saved metadata says.
    ``probe``: vectors (m, d_in) the vector exports are checked on (the fit or stored vectors; default: seeded
    Gaussian rows); ``probe_texts``: texts the model exports are checked on (default: two fixed sentences)."""
    from isoscope.data.outputs import EXPORT_FOLDER, atomic_folder, check_destination
    from isoscope.encode.manifest import write_manifest
    from isoscope.export.onnx_graph import DEFAULT_PROBE, PROBE_TEXTS, condition

    adapter = _as_adapter(adapter)
    if format not in ADAPTER_FORMATS:
        raise InputError(f"unknown adapter export format '{format!s:.40}'; choose one of {', '.join(ADAPTER_FORMATS)}")
    form = adapter_form(adapter)
    prov = _provenance(adapter, provenance, direction)
    if format == "faiss" and form != "affine":
        raise InputError(
            f"{adapter.method} is not an affine map, so it cannot be a FAISS pre-transform; export it with --format "
            "onnx (a graph from vectors to mapped vectors), or map the stored vectors with isoscope migrate apply"
        )
    if format == "sentence-transformers" and model is None:
        raise InputError(
            "a sentence-transformers export needs the model the adapter reads (the new one for new->legacy)"
        )
    if format == "sentence-transformers" and form == "local":
        _dense_chain(adapter, form)  # refused before a model is loaded
    out = check_destination(out, kind=EXPORT_FOLDER)  # said before any work; checked again at the rename
    encoder = spec = None
    if model is not None:
        if format == "faiss":
            raise InputError("a FAISS pre-transform maps vectors; export it without a model")
        encoder, spec, config = _model_parts(adapter, model, pooling, config)
    texts = list(probe_texts or DEFAULT_PROBE)[:PROBE_TEXTS]
    with atomic_folder(out, kind=EXPORT_FOLDER) as tmp:  # a new folder beside out, renamed into place when sealed
        if encoder is not None:
            write = _write_st if format == "sentence-transformers" else _write_ids_graph
            recipe, checks = write(adapter, form, tmp, encoder=encoder, spec=spec, config=config, texts=texts)
        else:
            rows = _probe(adapter, probe)
            write = _write_faiss if format == "faiss" else _write_vector_graph
            recipe, checks = write(adapter, form, tmp, rows, condition(adapter, rows))
        adapter.save(tmp, metadata={k: v for k, v in prov.items() if v is not None})
        report = AdapterExport(
            out=str(out),
            format=format,
            method=adapter.method,
            dim_in=int(adapter.n_features_in_),
            dim_out=int(adapter.n_features_out_),
            n_pairs=int(adapter.n_pairs_),
            holdout_cosine=_holdout(adapter),
            model=encoder.name if encoder is not None else None,
            model_fingerprint=encoder.fingerprint if encoder is not None else None,
            pooling=spec.name if spec is not None else None,
            recipe=recipe,
            checks=checks,
            notes=list(adapter.notes_),
            **prov,
        )
        (tmp / "README.md").write_text(readme(report), encoding="utf-8")
        write_manifest(tmp, report.to_dict())
    log.info("exported %s (%s) to %s", adapter.method, format, out)
    return report


def _holdout(adapter: Adapter) -> float | None:
    value = getattr(adapter, "holdout_cosine_", None)
    return None if value is None or not np.isfinite(value) else float(value)


# ---------------------------------------------------------------- the README


def _of(model: str | None) -> str:
    return f" ({model})" if model else ""


def _direction_words(report: AdapterExport) -> list[str]:
    if report.direction == "new->legacy":
        return [
            f"Direction new -> legacy: it maps the new model's vectors{_of(report.new_model)} into the legacy space"
            f"{_of(report.old_model)}, so the existing index is searched as it is."
        ]
    if report.direction == "old->new":
        return [
            f"Direction old -> new: it maps the stored vectors of the old model{_of(report.old_model)} into the new "
            f"model's space{_of(report.new_model)}; no text is re-embedded.",
            "",
            MIX_NOTE,
        ]
    return ["Direction: not recorded (the adapter maps its source space into its target space)."]


def _named(model: str | None, fingerprint: str | None) -> str:
    return "not recorded" if model is None else f"{model} (fingerprint `{fingerprint or 'not recorded'}`)"


def readme(report: AdapterExport) -> str:
    """The README.md of an exported adapter: what it maps, fitted on what, the checks, how to use it."""
    held = "not measured" if report.holdout_cosine is None else f"{report.holdout_cosine:.4f}"
    usage = USAGE["onnx" if report.format == "onnx" and report.model is None else report.format]
    if report.format == "onnx" and report.model is not None:
        from isoscope.export.onnx_graph import USAGE as IDS_USAGE

        usage = IDS_USAGE
    folder = Path(report.out).name
    wrapped = [f"- wrapped model: {report.model} (`{report.model_fingerprint}`), pooling `{report.pooling}`"] * bool(
        report.model
    )
    return "\n".join(
        [
            f"# Adapter {report.method} ({report.direction or 'direction not recorded'}), exported by Isoscope "
            f"{report.isoscope_version}",
            "",
            *_direction_words(report),
            "",
            f"Pipeline: {report.recipe}. Exact: checked at export against Isoscope's own mapping (below).",
            "",
            "## Provenance",
            "",
            f"- method: `{report.method}`, {report.dim_in} -> {report.dim_out} dimensions, fitted on {report.n_pairs:,} "
            f"pairs ({report.fit_source or 'fit texts not recorded'}, digest `{report.fit_digest or 'not recorded'}`)",
            f"- old model: {_named(report.old_model, report.old_fingerprint)}",
            f"- new model: {_named(report.new_model, report.new_fingerprint)}",
            *wrapped,
            f"- held-out cosine (mapped vs true vectors of held-out pairs): {held}",
            f"- exported: {report.date}, Isoscope {report.isoscope_version}",
            *[f"- note: {note}" for note in report.notes],
            "",
            "## Checked at export",
            "",
            *[f"- {name}: {value:.6g}" for name, value in report.checks.items()],
            "",
            "max_rel_error: the largest relative L2 difference of a probe row between these files and Isoscope's "
            "mapping; condition: how much the adapter amplifies a float32 rounding of its input.",
            "",
            "## Use",
            "",
            "```python",
            usage.format(folder=folder, d_in=report.dim_in, d_out=report.dim_out),
            "```",
            "",
            "The adapter itself is in `adapter.json` + `adapter.safetensors` (`isoscope migrate apply --adapter "
            f"{folder}` maps a vectors file with it). Every file's SHA-256 is in `isoscope-export.json`.",
            "",
        ]
    )
