"""A *space* applied to one list of texts: a model's (model, init, pooling), a vectors file's rows, or an
embeddings endpoint's answers, then a calibration fitted on the space's own vectors.

What a space comes from is a ``SpaceSpec`` (``isoscope.compare.spec``: the dataclass and ``parse_space``, the
one parser of SPEC strings, re-exported here). ``build_spaces`` turns specs into ``Space``s: one forward pass
per distinct encoder, one read per vectors file (``SpaceSources.tables``, default ``load_vector_file``), one
batched, cached run per endpoint (``isoscope.encode.remote``).

Landscape checkpoints (``model=landscape:FOLDER[:INIT[:EPOCH[:TASK]]]``, written by ``python -m isoscope
landscape``, see ``isoscope.landscape.train``): FOLDER is an experiment folder, its name under
``$ISOSCOPE_CACHE/landscape``, or ``latest`` (the newest finished one); INIT is ``pretrained`` (default) or
``scratch``; EPOCH a number or ``last`` (default; 0 is the run's starting point); TASK ``task1`` (default, the
main task) or ``task2``. The run's ``epoch_NNN.safetensors`` holds one flat vector ``theta``: the encoder's
parameters in ``named_parameters`` order without the unused pooler, then the linear head (``hidden * classes
+ classes`` values), which is dropped here. The base model is the experiment's (``summary.json``), and must be
loadable.

Random init builds ``AutoModel.from_config(config)`` under ``torch.random.fork_rng``, so the global RNG
of the process is left exactly as it was.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from isoscope.cache import ArrayCache, make_key
from isoscope.compare.spec import (
    INITS,
    LANDSCAPE_INITS,
    LANDSCAPE_PREFIX,
    LANDSCAPE_TASKS,
    SPEC_KEYS,
    LandscapeRef,
    SpaceKind,
    SpaceSpec,
    parse_landscape_ref,
    parse_space,
)
from isoscope.encode.models import Encoder
from isoscope.errors import InputError, first_line

if TYPE_CHECKING:
    from isoscope.data.vectors import VectorOrigin, VectorTable
    from isoscope.encode.endpoints import Endpoint
    from isoscope.encode.remote import EndpointCache

__all__ = [
    "INITS",
    "LANDSCAPE_INITS",
    "LANDSCAPE_PREFIX",
    "LANDSCAPE_TASKS",
    "SPEC_KEYS",
    "LandscapeRef",
    "Space",
    "SpaceKind",
    "SpaceSources",
    "SpaceSpec",
    "build_spaces",
    "calibrate_space",
    "check_pooling",
    "load_space_encoder",
    "parse_landscape_ref",
    "parse_space",
    "random_encoder",
]

log = logging.getLogger(__name__)

Loader = Callable[[str], Encoder]  # model name -> Encoder (isoscope.encode.models.load_encoder)
ProgressFn = Callable[[int, int], None]


def landscape_folder(ref: LandscapeRef) -> Path:
    """The experiment folder a reference names (InputError when there is none)."""
    from isoscope.landscape.results import default_root, list_results

    if ref.folder == "latest":
        found = list_results()
        if not found:
            raise InputError(
                f"no finished landscape experiment under {default_root()}; run python -m isoscope landscape"
            )
        return Path(found[0]["out_dir"])
    path = Path(ref.folder).expanduser()
    if not path.is_absolute() and not path.exists():
        path = default_root() / ref.folder
    if not (path / "summary.json").exists():
        raise InputError(f"{path}: no finished landscape experiment here (no summary.json)")
    return path


def _checkpoints(folder: Path, init: str, task: str) -> tuple[Path | None, list[Path]]:
    """The newest run folder ``checkpoints/<init>-<task>-<key>`` of an experiment and its epoch files, in order."""
    runs = sorted(Path(folder).glob(f"checkpoints/{init}-{task}-*"), key=lambda p: p.stat().st_mtime)
    return (runs[-1], sorted(runs[-1].glob("epoch_*.safetensors"))) if runs else (None, [])


def checkpoint_epochs(folder: str | Path, init: str, task: str = "task1") -> list[int]:
    """The epochs (0 = before training) of an experiment's checkpoints of one run; empty when it has none."""
    return [int(p.stem.split("_")[1]) for p in _checkpoints(Path(folder), init, task)[1]]


def landscape_checkpoints(root: str | Path | None = None) -> list[dict]:
    """Finished loss-surface experiments with task-1 checkpoints: ``{"out_dir", "label", "epochs": {init:
    [0..E]}}``, newest first, for choosing ``landscape:FOLDER:INIT:EPOCH`` (reads the folders at every call)."""
    from isoscope.landscape.results import list_results

    out = []
    for run in list_results(root):
        epochs = {init: found for init in LANDSCAPE_INITS if (found := checkpoint_epochs(run["out_dir"], init))}
        if epochs:
            label = f"{run.get('task', '?')} · {run.get('model', '?')} · {Path(run['out_dir']).name[:10]}"
            out.append({"out_dir": str(run["out_dir"]), "label": label, "epochs": epochs})
    return out


def checkpoint_path(folder: Path, ref: LandscapeRef) -> Path:
    """``checkpoints/<init>-<task>-<key>/epoch_NNN.safetensors`` of the reference (newest run folder if several)."""
    run, epochs = _checkpoints(folder, ref.init, ref.task)
    if not epochs:
        raise InputError(f"{folder}: no {ref.init} {ref.task} checkpoints in this landscape experiment")
    if ref.epoch is None:
        return epochs[-1]
    path = run / f"epoch_{ref.epoch:03d}.safetensors"
    if not path.exists():
        raise InputError(f"{folder}: no epoch {ref.epoch} checkpoint; epochs 0 to {len(epochs) - 1} exist")
    return path


def encoder_from_theta(base: Encoder, theta, name: str, fingerprint: str) -> Encoder:
    """``base``'s architecture with the encoder part of a landscape theta (flat vector) loaded into it."""
    import torch

    body = copy.deepcopy(base.model)
    params = [(n, p) for n, p in body.named_parameters() if not n.startswith("pooler.")]
    n_enc = sum(p.numel() for _, p in params)
    rest = int(theta.numel()) - n_enc
    if theta.ndim != 1 or rest <= 0 or rest % (base.hidden_size + 1):
        raise InputError(
            f"{name}: a {theta.numel()}-value checkpoint does not fit {base.name} ({n_enc} encoder parameters "
            f"and a linear head of {base.hidden_size} + 1 values per class): wrong base model"
        )
    with torch.no_grad():
        start = 0
        for _, p in params:
            p.copy_(theta[start : start + p.numel()].view(p.shape).to(p.dtype))
            start += p.numel()
    body.eval()
    for p in body.parameters():
        p.requires_grad_(False)
    return Encoder(name, base.tokenizer, body, fingerprint, base.is_encoder_decoder)


def landscape_encoder(model: str, loader: Loader) -> Encoder:
    """The encoder weights of a landscape checkpoint (see the module docstring)."""
    from isoscope.landscape.store import read_json, read_tensors

    ref = parse_landscape_ref(model)
    folder = landscape_folder(ref)
    path = checkpoint_path(folder, ref)
    summary = read_json(folder / "summary.json") or {}
    loaded = read_tensors(path)
    if loaded is None or "theta" not in loaded[0]:
        raise InputError(f"{path}: the checkpoint is incomplete or unreadable; rerun python -m isoscope landscape")
    theta, meta = loaded[0]["theta"], loaded[1]
    base_name = str(summary.get("model", ""))
    try:
        base = loader(base_name)
    except InputError as exc:
        raise InputError(f"{folder.name}: its base model '{base_name}' cannot be loaded ({exc})") from None
    want = summary.get("model_fingerprint")
    if want and base.fingerprint != want:
        log.warning("%s: base model fingerprint %s differs from the experiment's %s", folder, base.fingerprint, want)
    label = f"{base.name} fine-tuned ({ref.init}, {ref.task}, epoch {meta.get('epoch', path.stem)})"
    fingerprint = make_key("landscape-ckpt", base.fingerprint, meta.get("digest") or path)
    return encoder_from_theta(base, theta, label, fingerprint)


def random_encoder(base: Encoder, seed: int) -> Encoder:
    """``base``'s architecture and tokenizer with seeded random weights (the untrained baseline)."""
    import torch
    import transformers
    from transformers import AutoModel

    with torch.random.fork_rng(devices=[]):  # the process's global RNG is restored afterwards
        torch.manual_seed(seed)
        model = AutoModel.from_config(base.model.config)
    model.float().eval()
    for p in model.parameters():
        p.requires_grad_(False)
    fingerprint = make_key("random-init", base.fingerprint, seed, torch.__version__, transformers.__version__)
    return Encoder(
        f"{base.name} (random init, seed {seed})", base.tokenizer, model, fingerprint, base.is_encoder_decoder
    )


def load_space_encoder(spec: SpaceSpec, loader: Loader | None = None) -> Encoder:
    """The encoder of a space: ``loader(model)`` (default ``load_encoder``), a landscape checkpoint, or random."""
    if loader is None:
        from isoscope.encode.models import load_encoder as loader
    if spec.model.startswith(LANDSCAPE_PREFIX):
        return landscape_encoder(spec.model, loader)
    base = loader(spec.model)
    return random_encoder(base, spec.seed) if spec.init == "random" else base


# ---------------------------------------------------------------- vectors


@dataclass
class Space:
    """One space's vectors of the texts, and what they came from (``fingerprint`` goes into cache keys)."""

    spec: SpaceSpec
    model_name: str  # the encoder's name, the vectors file's FILE:COLUMN, or the endpoint's openai:NAME
    raw: np.ndarray  # (n, d) pooled (or as read), before calibration
    vectors: np.ndarray  # (n, d') after calibration (``raw`` itself for none)
    layers: list[np.ndarray] | None = None  # (n, d) mean-pooled layer:0..L of the same encoder, raw
    warnings: list[str] = field(default_factory=list)
    fingerprint: str = ""  # of the raw vectors: encoder + pooling + max length, the file's origin, the endpoint
    origin: VectorOrigin | None = None  # a vectors file's provenance (file, column, dtype, digest)

    @property
    def layer_names(self) -> list[str]:
        return [f"layer:{i}" for i in range(len(self.layers or []))]


@dataclass
class SpaceSources:
    """Where ``build_spaces`` gets the spaces that are not models.

    ``tables(spec)``: the VectorTable of a ``vectors=`` spec (default: ``load_vector_file`` of its file, column
    and text column; the dashboard passes its upload); each is read once per SpaceSources. ``endpoints(spec)``:
    the Endpoint of a ``model=openai:NAME`` spec (default: its base_url, or OpenAI's). ``endpoint_cache``: where
    endpoint vectors are kept (default: next to the embedding cache, when there is one).
    """

    tables: Callable[[SpaceSpec], VectorTable] | None = None
    endpoints: Callable[[SpaceSpec], Endpoint] | None = None
    endpoint_cache: EndpointCache | None = None
    _read: dict[tuple, VectorTable] = field(default_factory=dict, repr=False)

    def table(self, spec: SpaceSpec) -> VectorTable:
        """The table of a vectors spec, read on first use."""
        if spec.encoder_key not in self._read:
            if self.tables is not None:
                self._read[spec.encoder_key] = self.tables(spec)
            else:
                from isoscope.data.vectors import load_vector_file

                self._read[spec.encoder_key] = load_vector_file(spec.vectors, spec.column, text_column=spec.text_column)
        return self._read[spec.encoder_key]

    def endpoint(self, spec: SpaceSpec) -> Endpoint:
        if self.endpoints is not None:
            return self.endpoints(spec)
        from isoscope.encode.endpoints import endpoint_for

        return endpoint_for(spec.model, spec.base_url or None)


def check_pooling(spec: SpaceSpec, encoder: Encoder, which: str = "") -> str:
    """The pooling's canonical name for this encoder; InputError for one it does not have."""
    from isoscope.encode.pooling import parse_pooling

    try:
        return parse_pooling(spec.pooling, encoder.num_layers, encoder.is_encoder_decoder).name
    except ValueError as exc:
        raise InputError(f"{which}{encoder.name}: {first_line(exc)}") from None


def calibrate_space(spec: SpaceSpec, raw: np.ndarray, progress=None) -> tuple[np.ndarray, list[str]]:
    """Fit ``spec.calibrate`` on the space's own vectors and apply it. Returns (n, d') float32 and warnings."""
    from isoscope.calibrate import make_calibrator
    from isoscope.evaluate.sts import fit_size_warning, fit_timed

    if spec.calibrate == "none":
        return raw, []
    cal = make_calibrator(spec.calibrate)
    fit_timed(cal, raw, progress)
    warning = fit_size_warning(cal, len(raw), raw.shape[1])
    return np.asarray(cal.transform(raw), np.float32), [warning] if warning else []


@dataclass
class _Given:
    """The raw vectors of a space that is not a model: a file's rows or an endpoint's answers."""

    raw: np.ndarray  # (n, d)
    name: str
    fingerprint: str
    origin: VectorOrigin | None = None
    warnings: list[str] = field(default_factory=list)


def _given(
    spec: SpaceSpec,
    texts: Sequence[str],
    sources: SpaceSources,
    cache: ArrayCache | None,
    progress: Callable[[str], ProgressFn | None] | None,
    rows: Sequence[int] | None,
    n_input: int | None,
) -> _Given:
    if spec.kind == "vectors":
        table = sources.table(spec)
        raw = table.vectors_for(texts, rows, n_input)  # (n, d)
        return _Given(raw, table.name, table.origin.fingerprint, table.origin, list(table.warnings))
    from isoscope.encode.remote import EndpointCache, embed_endpoint

    endpoint = sources.endpoint(spec)
    store = sources.endpoint_cache
    if store is None and cache is not None:
        store = EndpointCache(cache.root.parent / "endpoints.sqlite")
    bar = progress(f"embed {endpoint.name}") if progress else None
    return _Given(embed_endpoint(endpoint, texts, bar, store), endpoint.name, endpoint.fingerprint)


def build_spaces(
    specs: Sequence[SpaceSpec],
    texts: Sequence[str],
    layers: bool = False,
    loader: Loader | None = None,
    config=None,
    progress: Callable[[str], ProgressFn | None] | None = None,
    cache: ArrayCache | None = None,
    sources: SpaceSources | None = None,
    rows: Sequence[int] | None = None,
    n_input: int | None = None,
) -> list[Space]:
    """Embed ``texts`` in every space of ``specs``: one forward pass per distinct encoder, giving every pooling
    its specs need (and with ``layers`` mean-pooled ``layer:0..L``), one read per vectors file, one run per
    endpoint; then each space's calibration.

    A vectors file gives the rows of ``texts`` by text when it has a text column, else by position: ``rows[i]``
    is the input row of ``texts[i]`` (default ``i``) of ``n_input`` rows (default ``len(texts)``).
    ``progress(stage)`` returns a ``(done, total)`` callback for that stage (or None).
    """
    from isoscope.encode.embed import EmbedConfig, encode_many

    if len(texts) < 2:
        raise InputError(f"need at least 2 texts to compare spaces, got {len(texts)}")
    if layers and (without := [s for s in specs if not s.has_model]):
        raise InputError(f"the layer CKA needs a model's layers; space {without[0].label()} has none")
    sources = sources or SpaceSources()
    given: dict[tuple, _Given] = {}
    for spec in specs:  # files first: a bad file fails before any model is loaded
        if spec.kind == "vectors" and spec.encoder_key not in given:
            given[spec.encoder_key] = _given(spec, texts, sources, cache, progress, rows, n_input)
    encoders: dict[tuple, Encoder] = {}
    for spec in specs:
        if spec.kind == "model" and spec.encoder_key not in encoders:
            encoders[spec.encoder_key] = load_space_encoder(spec, loader)
    for spec in specs:
        if spec.kind == "endpoint" and spec.encoder_key not in given:
            given[spec.encoder_key] = _given(spec, texts, sources, cache, progress, rows, n_input)
    poolings = {
        key: {check_pooling(s, encoders[key], f"space {s.label()}: ") for s in specs if s.encoder_key == key}
        for key in encoders
    }
    pooled: dict[tuple, dict[str, np.ndarray]] = {}
    for key, enc in encoders.items():
        names = sorted(poolings[key]) + ([f"layer:{i}" for i in range(enc.num_layers + 1)] if layers else [])
        bar = progress(f"embed {enc.name}") if progress else None
        pooled[key] = encode_many(enc, texts, list(dict.fromkeys(names)), config, bar, cache)
    max_length = (config or EmbedConfig()).max_length
    out = []
    for spec in specs:
        stack = None
        if spec.kind == "model":
            enc = encoders[spec.encoder_key]
            vectors = pooled[spec.encoder_key]
            pooling = check_pooling(spec, enc)
            raw, name, origin, warnings = vectors[pooling], enc.name, None, []
            fingerprint = make_key("space", enc.fingerprint, pooling, max_length)
            stack = [vectors[f"layer:{i}"] for i in range(enc.num_layers + 1)] if layers else None
        else:
            g = given[spec.encoder_key]
            raw, name, origin, warnings, fingerprint = g.raw, g.name, g.origin, list(g.warnings), g.fingerprint
        bar = progress(f"calibrate {spec.calibrate}") if progress and spec.calibrate == "flow" else None
        calibrated, cal_warnings = calibrate_space(spec, raw, bar)
        out.append(Space(spec, name, raw, calibrated, stack, [*warnings, *cal_warnings], fingerprint, origin))
    return out
