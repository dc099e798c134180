"""A *space*: (model, init, pooling, calibration) applied to one list of texts.

SPEC strings (CLI ``--a`` / ``--b``) are comma-separated ``key=value`` lists; every key is optional::

    model=...         empty (the embedded all-MiniLM-L6-v2), a local folder, a hub id, or
                      landscape:FOLDER[:INIT[:EPOCH[:TASK]]]  a checkpoint of a loss-surface run
    init=pretrained   or random, random:SEED: the model's architecture with seeded random weights
    pooling=mean      any pooling mode, including layer:K
    calibrate=none    any calibrator (none, flow, whitening, whitening:K, sn, abtt:D, sn+abtt:D), fitted
                      on the space's own vectors of the texts (no labels)

e.g. ``pooling=cls,calibrate=whitening`` or ``model=landscape:latest:pretrained:3``. Values cannot contain
commas. Landscape checkpoints (written by ``python -m isoscope landscape``, see ``isoscope.landscape.train``):
FOLDER is an experiment folder, its name under ``$ISOSCOPE_CACHE/landscape``, or ``latest`` (the newest
finished one); INIT is ``pretrained`` (default) or ``scratch``; EPOCH a number or ``last`` (default; 0 is
the run's starting point); TASK ``task1`` (default, the main task) or ``task2``. The run's
``epoch_NNN.safetensors`` holds one flat vector ``theta``: the encoder's parameters in ``named_parameters``
order without the unused pooler, then the linear head (``hidden * classes + classes`` values), which is
dropped here. The base model is the experiment's (``summary.json``), and must be loadable.

Random init builds ``AutoModel.from_config(config)`` under ``torch.random.fork_rng``, so the global RNG
of the process is left exactly as it was.
"""

from __future__ import annotations

import copy
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal, get_args

import numpy as np

from isoscope.cache import ArrayCache, make_key
from isoscope.encode.models import Encoder
from isoscope.errors import InputError, first_line

log = logging.getLogger(__name__)

SpecKey = Literal["model", "init", "pooling", "calibrate"]
SPEC_KEYS: tuple[str, ...] = get_args(SpecKey)
Init = Literal["pretrained", "random"]
INITS: tuple[str, ...] = get_args(Init)
LANDSCAPE_PREFIX = "landscape:"
LANDSCAPE_INITS: tuple[str, ...] = ("pretrained", "scratch")
LANDSCAPE_TASKS: tuple[str, ...] = ("task1", "task2")
Loader = Callable[[str], Encoder]  # model name -> Encoder (isoscope.encode.models.load_encoder)
ProgressFn = Callable[[int, int], None]


@dataclass(frozen=True)
class SpaceSpec:
    """What makes a space; ``seed`` is the random-init seed (``init=random:SEED``)."""

    model: str = ""
    init: str = "pretrained"
    seed: int = 0
    pooling: str = "mean"
    calibrate: str = "none"

    @property
    def encoder_key(self) -> tuple[str, str, int]:
        """Specs with the same key share one encoder and one forward pass."""
        return (self.model, self.init, self.seed if self.init == "random" else 0)

    def label(self) -> str:
        init = f"random:{self.seed}" if self.init == "random" and self.seed else self.init
        return f"model={self.model or 'default'},init={init},pooling={self.pooling},calibrate={self.calibrate}"


def _bad(text: str, what: str) -> InputError:
    return InputError(f"space '{text}': {what}; give key=value pairs separated by commas, keys {', '.join(SPEC_KEYS)}")


def _parse_init(text: str, value: str) -> tuple[str, int]:
    name, _, seed = value.partition(":")
    if name not in INITS or (seed and name != "random"):
        raise _bad(text, f"init must be one of {', '.join(INITS)} (or random:SEED), got '{value}'")
    if not seed:
        return name, 0
    if not re.fullmatch(r"\d+", seed):
        raise _bad(text, f"the seed in init=random:SEED must be a whole number >= 0, got '{seed}'")
    return name, int(seed)


def parse_space(text: str | None) -> SpaceSpec:
    """Parse a SPEC string (see the module docstring) and check its values without loading anything."""
    from isoscope.calibrate import make_calibrator
    from isoscope.encode.pooling import parse_pooling

    text = (text or "").strip()
    values: dict[str, str] = {}
    for item in filter(None, (p.strip() for p in text.split(","))):
        key, eq, value = item.partition("=")
        key = key.strip().lower()
        if not eq:
            raise _bad(text, f"'{item}' is not key=value")
        if key not in SPEC_KEYS:
            raise _bad(text, f"unknown key '{key}'")
        if key in values:
            raise _bad(text, f"'{key}' is given twice")
        values[key] = value.strip()
    init, seed = _parse_init(text, values.get("init") or "pretrained")
    spec = SpaceSpec(values.get("model", ""), init, seed, values.get("pooling") or "mean", "none")
    try:
        parse_pooling(spec.pooling, None, True)  # the model's own limits are checked once it is loaded
        calibrate = make_calibrator(values.get("calibrate") or "none").method
    except ValueError as exc:
        raise InputError(f"space '{text}': {first_line(exc)}") from None
    if spec.model.startswith(LANDSCAPE_PREFIX):
        parse_landscape_ref(spec.model)
        if init == "random":
            raise _bad(text, "init=random takes a model's architecture, not a landscape checkpoint (use its epoch 0)")
    return replace(spec, calibrate=calibrate)


# ---------------------------------------------------------------- encoders


@dataclass(frozen=True)
class LandscapeRef:
    folder: str  # experiment folder, its name under the landscape root, or "latest"
    init: str = "pretrained"
    epoch: int | None = None  # None = last
    task: str = "task1"


def parse_landscape_ref(model: str) -> LandscapeRef:
    """``landscape:FOLDER[:INIT[:EPOCH[:TASK]]]`` -> LandscapeRef (InputError listing the valid values)."""
    parts = model[len(LANDSCAPE_PREFIX) :].split(":")
    usage = "use landscape:FOLDER[:INIT[:EPOCH[:TASK]]], e.g. landscape:latest:pretrained:last:task1"
    if not parts[0] or len(parts) > 4:
        raise InputError(f"model '{model}': {usage}")
    init = parts[1] if len(parts) > 1 and parts[1] else "pretrained"
    epoch_text = parts[2] if len(parts) > 2 and parts[2] else "last"
    task = parts[3] if len(parts) > 3 and parts[3] else "task1"
    if init not in LANDSCAPE_INITS:
        raise InputError(f"model '{model}': INIT must be one of {', '.join(LANDSCAPE_INITS)}; {usage}")
    if task not in LANDSCAPE_TASKS:
        raise InputError(f"model '{model}': TASK must be one of {', '.join(LANDSCAPE_TASKS)}; {usage}")
    if epoch_text != "last" and not re.fullmatch(r"\d+", epoch_text):
        raise InputError(f"model '{model}': EPOCH must be a whole number or 'last'; {usage}")
    return LandscapeRef(parts[0], init, None if epoch_text == "last" else int(epoch_text), task)


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
    """One space's vectors of the texts."""

    spec: SpaceSpec
    model_name: str
    raw: np.ndarray  # (n, d) pooled, before calibration
    vectors: np.ndarray  # (n, d') after calibration (``raw`` itself for none)
    layers: list[np.ndarray] | None = None  # (n, d) mean-pooled layer:0..L of the same encoder, raw
    warnings: list[str] = field(default_factory=list)

    @property
    def layer_names(self) -> list[str]:
        return [f"layer:{i}" for i in range(len(self.layers or []))]


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


def build_spaces(
    specs: Sequence[SpaceSpec],
    texts: Sequence[str],
    layers: bool = False,
    loader: Loader | None = None,
    config=None,
    progress: Callable[[str], ProgressFn | None] | None = None,
    cache: ArrayCache | None = None,
) -> list[Space]:
    """Embed ``texts`` in every space of ``specs``: one forward pass per distinct encoder, giving every pooling
    its specs need (and with ``layers`` mean-pooled ``layer:0..L``), then each space's calibration.

    ``progress(stage)`` returns a ``(done, total)`` callback for that stage (or None).
    """
    from isoscope.encode.embed import encode_many

    if len(texts) < 2:
        raise InputError(f"need at least 2 texts to compare spaces, got {len(texts)}")
    encoders: dict[tuple, Encoder] = {}
    for spec in specs:
        if spec.encoder_key not in encoders:
            encoders[spec.encoder_key] = load_space_encoder(spec, loader)
    poolings = {
        key: {check_pooling(s, encoders[key], f"space {s.label()}: ") for s in specs if s.encoder_key == key}
        for key in encoders
    }
    pooled: dict[tuple, dict[str, np.ndarray]] = {}
    for key, enc in encoders.items():
        names = sorted(poolings[key]) + ([f"layer:{i}" for i in range(enc.num_layers + 1)] if layers else [])
        bar = progress(f"embed {enc.name}") if progress else None
        pooled[key] = encode_many(enc, texts, list(dict.fromkeys(names)), config, bar, cache)
    out = []
    for spec in specs:
        enc = encoders[spec.encoder_key]
        vectors = pooled[spec.encoder_key]
        raw = vectors[check_pooling(spec, enc)]
        bar = progress(f"calibrate {spec.calibrate}") if progress and spec.calibrate == "flow" else None
        calibrated, warnings = calibrate_space(spec, raw, bar)
        stack = [vectors[f"layer:{i}"] for i in range(enc.num_layers + 1)] if layers else None
        out.append(Space(spec, enc.name, raw, calibrated, stack, warnings))
    return out
