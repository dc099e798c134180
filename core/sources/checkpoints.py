"""The encoder of a model space that is not a plain model: a loss-surface checkpoint or a random init.

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
from collections.abc import Callable
from pathlib import Path

from isoscope.cache import make_key
from isoscope.encode.models import Encoder
from isoscope.errors import InputError
from isoscope.sources.spec import LANDSCAPE_INITS, LANDSCAPE_PREFIX, LandscapeRef, SpaceSpec, parse_landscape_ref

log = logging.getLogger(__name__)

Loader = Callable[[str], Encoder]  # model name -> Encoder (isoscope.encode.models.load_encoder)


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
    return Encoder(
        name, base.tokenizer, body, fingerprint, base.is_encoder_decoder, device=base.device, dtype=base.dtype
    )


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
    model.float().eval().to(base.device)  # float32 on the base's device
    for p in model.parameters():
        p.requires_grad_(False)
    fingerprint = make_key("random-init", base.fingerprint, seed, torch.__version__, transformers.__version__)
    return Encoder(
        f"{base.name} (random init, seed {seed})",
        base.tokenizer,
        model,
        fingerprint,
        base.is_encoder_decoder,
        device=base.device,
    )


def load_space_encoder(spec: SpaceSpec, loader: Loader | None = None) -> Encoder:
    """The encoder of a space: ``loader(model)`` (default ``load_encoder``), a landscape checkpoint, or random."""
    if loader is None:
        from isoscope.encode.models import load_encoder as loader
    if spec.model.startswith(LANDSCAPE_PREFIX):
        return landscape_encoder(spec.model, loader)
    base = loader(spec.model)
    return random_encoder(base, spec.seed) if spec.init == "random" else base
