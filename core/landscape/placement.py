"""Where the landscape's work runs: the model and its batches on the encoder's device, the flat vectors beside it.

The device is the encoder's (``isoscope.encode.device.resolve_device`` decided it when the encoder was loaded, as
for embedding: ``--device``, the sidebar's Device box): the classifier is trained there, and every loss is
evaluated there. Choices made here:

- The flat parameter vectors (checkpoints read back, the plane's axes, filter-normalised directions, the Hessian's
  power-iteration vector) live on the model's device when it has float64 (the CPU, CUDA): their dot products,
  norms, projections and filter norms are accumulated in float64 there (``isoscope.landscape.flat``), exact to
  the float32 rounding of the vectors themselves on either, and a grid point costs two vector updates on the
  device, not a copy of theta across the bus. Apple's MPS has no float64, so with a model there the vectors and
  their algebra stay on the CPU and the ``Evaluator`` copies each point's theta to the model.
- Random directions and starting vectors are drawn on the CPU from a seeded ``torch.Generator`` and then moved,
  so a seed gives the same direction on every device (a CUDA generator would draw other numbers).
- On the CPU every step is the one it was before devices (moving a CPU tensor to the CPU is no copy), so CPU
  results and their cache keys are unchanged. Elsewhere the numbers change (other kernels, non-deterministic
  atomics in the backward pass): ``key_parts`` puts the device's kind in the keys of the experiment and of each
  training run, so a GPU's checkpoints, surfaces and results never mix with the CPU's.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import torch
from torch import nn


def module_device(module: nn.Module) -> torch.device:
    """The device of a module's (first) parameter: where its forward passes run."""
    first = next(module.parameters(), None)
    return first.device if first is not None else torch.device("cpu")


def vector_device(device: torch.device) -> torch.device:
    """Where the flat vectors of a model on ``device`` live: the device itself when it has float64 (CPU, CUDA),
    else the CPU (MPS)."""
    return device if device.type in ("cpu", "cuda") else torch.device("cpu")


def key_parts(device: torch.device) -> tuple[str, ...]:
    """What a cache key adds for ``device``: nothing for the CPU (its keys are those written before devices),
    ``device=<kind>`` elsewhere (``cuda``, ``mps``: the kind, not the index; two GPUs of one kind run one code)."""
    return () if device.type == "cpu" else (f"device={device.type}",)


def to_device(tensors: Mapping[str, torch.Tensor], device: torch.device) -> dict[str, torch.Tensor]:
    """Every tensor of a batch on ``device`` (no copy where it is already)."""
    return {name: t.to(device) for name, t in tensors.items()}


@contextmanager
def seeded_rng(device: torch.device, seed: int) -> Iterator[None]:
    """Inside: the CPU's RNG (data order, a random init) and ``device``'s (dropout there) seeded with ``seed``;
    outside, both as they were (the dashboard serves every session from one process; never ``torch.manual_seed``,
    which would reseed every GPU for good). On the CPU, the CPU's RNG only, in the same state
    ``torch.manual_seed(seed)`` gives it."""
    if device.type == "cpu":
        with torch.random.fork_rng(devices=[]):
            torch.default_generator.manual_seed(seed)
            yield
        return
    module = torch.get_device_module(device.type)
    index = device.index if device.index is not None else (module.current_device() if device.type == "cuda" else 0)
    with torch.random.fork_rng(devices=[index], device_type=device.type):
        torch.default_generator.manual_seed(seed)
        if device.type == "cuda":
            with torch.cuda.device(index):
                torch.cuda.manual_seed(seed)  # this device's generator only
        else:
            module.manual_seed(seed)  # MPS: one device
        yield


def synchronize(device: torch.device) -> None:
    """Wait for the work queued on ``device`` (a timing of a GPU's work must include it)."""
    if device.type != "cpu":
        torch.get_device_module(device.type).synchronize()
