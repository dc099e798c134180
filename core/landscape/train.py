"""Fine-tuning runs with a checkpoint per epoch, resumable after an interruption.

Each run writes ``epoch_000`` (its starting point theta0) ... ``epoch_E`` as safetensors of the flat
parameter vector plus a JSON sidecar, and the AdamW moments of the last finished epoch. Data order and
dropout are seeded per epoch, so a resumed run reproduces the uninterrupted one. A run whose final
checkpoint exists (with a matching key) is read back instead of trained.

The model trains where it is (the encoder's device, ``isoscope.landscape.placement``): each batch is tokenized on
the CPU and moved there, the data order is drawn on the CPU (the same order on every device), and dropout is
seeded on the CPU's RNG and the device's, both forked. Checkpoints and optimizer moments are written from the CPU
and read back onto the model's device.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from torch.nn import functional as F

from isoscope.cache import make_key
from isoscope.landscape.classifier import Classifier, check_head_pooling, tokenize
from isoscope.landscape.flat import FlatLayout, vector_digest
from isoscope.landscape.placement import key_parts, module_device, seeded_rng, to_device
from isoscope.landscape.store import read_tensor_names, read_tensors, write_tensors
from isoscope.landscape.tasks import Task

log = logging.getLogger(__name__)

ProgressFn = Callable[[int, int], None]
CODE_VERSION = "landscape-train-1"


@dataclass
class TrainConfig:
    """One fine-tuning recipe, used for every run (pre-trained and scratch, both tasks)."""

    lr: float = 5e-5
    epochs: int = 3
    batch_size: int = 16
    n_train: int = 300
    max_length: int = 128
    seed: int = 0
    weight_decay: float = 0.01
    max_grad_norm: float = 1.0
    pooling: str = "mean"  # head input pooling: mean or cls

    def validate(self) -> TrainConfig:
        check_head_pooling(self.pooling)
        if self.lr <= 0 or self.epochs < 1 or self.batch_size < 1 or self.n_train < 2 or self.max_length < 4:
            raise ValueError("need lr > 0, epochs >= 1, batch_size >= 1, n_train >= 2 and max_length >= 4")
        return self

    def key(self) -> str:
        return make_key(CODE_VERSION, *(f"{k}={v}" for k, v in sorted(asdict(self).items())))


@dataclass
class Checkpoint:
    """A finished epoch of a run (epoch 0 is the starting point)."""

    epoch: int
    path: Path
    digest: str
    train_loss: float  # mean training loss over the epoch's steps (NaN for epoch 0)

    def load(self, device: torch.device | None = None) -> torch.Tensor:
        """The flat theta (p,), on ``device`` (None: the CPU, where it is read)."""
        loaded = read_tensors(self.path)
        if loaded is None:
            raise FileNotFoundError(f"checkpoint {self.path} is missing or unreadable")
        theta = loaded[0]["theta"]
        return theta if device is None else theta.to(device)


def run_key(
    model_fingerprint: str,
    init: str,
    task: Task,
    *,
    config: TrainConfig,
    layout: FlatLayout,
    device: torch.device | None = None,
) -> str:
    """The training run's content key; a device other than the CPU is part of it (``placement.key_parts``)."""
    where = key_parts(device) if device is not None else ()
    return make_key("run", model_fingerprint, init, task.digest(), config.key(), layout.digest(), *where)


def _ckpt_path(run_dir: Path, epoch: int) -> Path:
    return run_dir / f"epoch_{epoch:03d}.safetensors"


def _read_checkpoint(run_dir: Path, epoch: int, key: str) -> Checkpoint | None:
    """The finished epoch on disk when its key matches; only the sidecar and the safetensors header are read."""
    path = _ckpt_path(run_dir, epoch)
    found = read_tensor_names(path)
    if found is None or found[1].get("key") != key or "theta" not in found[0]:
        return None
    meta = found[1]
    return Checkpoint(epoch, path, str(meta["digest"]), float(meta.get("train_loss") or math.nan))


def train_run(
    model: Classifier,
    layout: FlatLayout,
    tokenizer,
    *,
    task: Task,
    config: TrainConfig,
    run_dir: Path,
    key: str,
    progress: ProgressFn | None = None,
    reuse: bool = True,
) -> tuple[list[Checkpoint], dict[str, float]]:
    """Fine-tune ``model`` in place on ``task``; returns the checkpoints (epochs 0..E) and timings.

    ``model`` must hold the run's starting point. With ``reuse``, finished epochs on disk are kept and
    training continues after the last one.
    """
    config.validate()
    run_dir.mkdir(parents=True, exist_ok=True)
    steps_per_epoch = math.ceil(len(task) / config.batch_size)
    total_steps = config.epochs * steps_per_epoch
    start = time.perf_counter()
    ckpts: list[Checkpoint] = []
    if reuse:
        for epoch in range(config.epochs + 1):
            c = _read_checkpoint(run_dir, epoch, key)
            if c is None:
                break
            ckpts.append(c)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    if ckpts and len(ckpts) <= config.epochs and not _resume(model, layout, optimizer, ckpts[-1], run_dir, key):
        ckpts = ckpts[:1]  # no optimizer state for the last epoch: restart from theta0
        layout.load_into(model, ckpts[0].load())
    if not ckpts:
        theta0 = layout.flatten(model)
        digest = vector_digest(theta0)
        write_tensors(_ckpt_path(run_dir, 0), {"theta": theta0}, _meta(key, 0, digest, math.nan, config, 0.0))
        ckpts.append(Checkpoint(0, _ckpt_path(run_dir, 0), digest, math.nan))
    done_epochs = len(ckpts) - 1
    if progress is not None:
        progress(done_epochs * steps_per_epoch, total_steps)
    for epoch in range(done_epochs + 1, config.epochs + 1):
        t0 = time.perf_counter()
        loss = _train_epoch(model, tokenizer, task, config, optimizer, epoch, steps_per_epoch, total_steps, progress)
        theta = layout.flatten(model)
        digest = vector_digest(theta)
        write_tensors(
            _ckpt_path(run_dir, epoch),
            {"theta": theta},
            _meta(key, epoch, digest, loss, config, time.perf_counter() - t0),
        )
        _save_optimizer(model, layout, optimizer, run_dir, epoch)
        ckpts.append(Checkpoint(epoch, _ckpt_path(run_dir, epoch), digest, loss))
        log.info("%s epoch %d: train loss %.4f", run_dir.name, epoch, loss)
    (run_dir / "optimizer.safetensors").unlink(missing_ok=True)
    (run_dir / "optimizer.json").unlink(missing_ok=True)
    model.eval()
    return ckpts, {"seconds": time.perf_counter() - start, "trained_epochs": config.epochs - done_epochs}


def _meta(key: str, epoch: int, digest: str, loss: float, config: TrainConfig, seconds: float) -> dict:
    return {
        "key": key,
        "epoch": epoch,
        "digest": digest,
        "train_loss": loss,
        "seconds": seconds,
        "config": asdict(config),
    }


def _train_epoch(
    model: Classifier,
    tokenizer,
    task: Task,
    config: TrainConfig,
    optimizer: torch.optim.Optimizer,
    epoch: int,
    steps_per_epoch: int,
    total_steps: int,
    progress: ProgressFn | None,
) -> float:
    """One pass over ``task`` in a per-epoch seeded order, linear learning-rate decay to 0."""
    losses: list[float] = []
    device = module_device(model)
    with seeded_rng(device, config.seed * 1_000_003 + epoch):  # dropout masks and data order of this epoch
        order = torch.randperm(len(task)).numpy()  # the CPU's generator: one order on every device
        model.train()
        for k in range(steps_per_epoch):
            step = (epoch - 1) * steps_per_epoch + k
            for group in optimizer.param_groups:
                group["lr"] = config.lr * (1.0 - step / total_steps)
            idx = order[k * config.batch_size : (k + 1) * config.batch_size]
            inputs, labels = training_batch(tokenizer, task, idx, max_length=config.max_length, device=device)
            loss = train_step(model, optimizer, inputs, labels, max_grad_norm=config.max_grad_norm)
            losses.append(loss)
            if progress is not None:
                progress(step + 1, total_steps)
    model.eval()
    return float(np.mean(losses))


def training_batch(
    tokenizer, task: Task, idx: np.ndarray, *, max_length: int, device: torch.device
) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    """Rows ``idx`` of ``task`` as model inputs (padded (b, t)) and labels (b,), on ``device``."""
    inputs = tokenize(tokenizer, task, idx, max_length=max_length)
    return to_device(inputs, device), torch.as_tensor(task.labels[idx]).to(device)


def train_step(
    model: Classifier,
    optimizer: torch.optim.Optimizer,
    inputs: dict[str, torch.Tensor],
    labels: torch.Tensor,
    *,
    max_grad_norm: float,
) -> float:
    """One AdamW step on a batch already on the model's device (``training_batch``); returns its loss."""
    loss = F.cross_entropy(model(**inputs), labels)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    optimizer.step()
    return loss.detach().item()


def _save_optimizer(
    model: Classifier, layout: FlatLayout, optimizer: torch.optim.Optimizer, run_dir: Path, epoch: int
) -> None:
    """AdamW moments as flat vectors (same layout as theta), for resuming after ``epoch``."""
    names = dict(model.named_parameters())
    state = [optimizer.state.get(names[n], {}) for n in layout.names]
    if not all("exp_avg" in s for s in state):
        return
    tensors = {
        "exp_avg": torch.cat([s["exp_avg"].reshape(-1) for s in state]),
        "exp_avg_sq": torch.cat([s["exp_avg_sq"].reshape(-1) for s in state]),
    }
    write_tensors(run_dir / "optimizer.safetensors", tensors, {"epoch": epoch, "step": float(state[0]["step"])})


def _resume(
    model: Classifier, layout: FlatLayout, optimizer: torch.optim.Optimizer, last: Checkpoint, run_dir: Path, key: str
) -> bool:
    """Load the last finished epoch and its optimizer state; False when they cannot be restored."""
    if last.epoch == 0:
        layout.load_into(model, last.load())
        return True
    loaded = read_tensors(run_dir / "optimizer.safetensors")
    if loaded is None or loaded[1].get("epoch") != last.epoch:
        return False
    tensors, meta = loaded
    layout.load_into(model, last.load())
    names = dict(model.named_parameters())
    avg, avg_sq = layout.unflatten(tensors["exp_avg"]), layout.unflatten(tensors["exp_avg_sq"])
    for n in layout.names:
        device = names[n].device  # the moments sit beside their parameter (``clone``: a copy on the CPU too)
        optimizer.state[names[n]] = {
            "step": torch.tensor(float(meta["step"])),
            "exp_avg": avg[n].clone().to(device),
            "exp_avg_sq": avg_sq[n].clone().to(device),
        }
    log.info("%s: resuming after epoch %d", run_dir.name, last.epoch)
    return True
