"""Flat parameter vectors: one float32 vector theta for every parameter of a module, and back.

``FlatLayout.unflatten(theta)`` returns views (no copy) that ``torch.func.functional_call`` accepts, so a
grid point costs one vector update and one forward pass: no deepcopy and no state-dict reload.
Dot products and norms of long vectors are accumulated in float64, chunk by chunk, so projections of
22M-dimensional vectors stay exact to float32 rounding of the vectors themselves.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

import torch
from torch import nn

CHUNK = 1 << 20  # elements per float64 chunk in dot products


@dataclass(frozen=True)
class FlatLayout:
    """Names, shapes and offsets of the parameters packed into one vector (module order)."""

    names: tuple[str, ...]
    shapes: tuple[tuple[int, ...], ...]

    @classmethod
    def from_module(cls, module: nn.Module) -> FlatLayout:
        """Layout of every parameter of ``module`` (named_parameters order)."""
        named = list(module.named_parameters())
        return cls(tuple(n for n, _ in named), tuple(tuple(p.shape) for _, p in named))

    @property
    def numels(self) -> tuple[int, ...]:
        return tuple(int(torch.Size(s).numel()) for s in self.shapes)

    @property
    def size(self) -> int:
        return sum(self.numels)

    def offsets(self) -> dict[str, tuple[int, int]]:
        """name -> (start, stop) in the flat vector."""
        out: dict[str, tuple[int, int]] = {}
        start = 0
        for name, n in zip(self.names, self.numels, strict=True):
            out[name] = (start, start + n)
            start += n
        return out

    def prefix_size(self, prefix: str) -> int:
        """Length of the leading run of parameters whose names start with ``prefix``."""
        total = 0
        for name, n in zip(self.names, self.numels, strict=True):
            if not name.startswith(prefix):
                break
            total += n
        return total

    def digest(self) -> str:
        return hashlib.sha256(repr((self.names, self.shapes)).encode()).hexdigest()[:16]

    def flatten(self, module: nn.Module) -> torch.Tensor:
        """Copy the module's parameters into a new float32 vector. Returns (size,)."""
        params = dict(module.named_parameters())
        missing = [n for n in self.names if n not in params]
        if missing:
            raise ValueError(f"module lacks parameters {missing[:3]}; layout and module differ")
        return torch.cat([params[n].detach().reshape(-1).float() for n in self.names])

    def unflatten(self, theta: torch.Tensor) -> dict[str, torch.Tensor]:
        """name -> view into ``theta`` with the parameter's shape (for functional_call)."""
        if theta.ndim != 1 or theta.numel() != self.size:
            raise ValueError(f"theta has shape {tuple(theta.shape)}; expected ({self.size},)")
        # torch.split backpropagates with one concatenation (slicing would allocate a full-size
        # zero tensor per parameter in the backward pass).
        chunks = torch.split(theta, self.numels)
        return {n: c.view(s) for n, c, s in zip(self.names, chunks, self.shapes, strict=True)}

    def load_into(self, module: nn.Module, theta: torch.Tensor) -> None:
        """Copy ``theta`` into the module's own parameters (used to resume training, not per grid point)."""
        params = dict(module.named_parameters())
        with torch.no_grad():
            for name, view in self.unflatten(theta).items():
                params[name].copy_(view)


def dot(x: torch.Tensor, y: torch.Tensor) -> float:
    """<x, y> accumulated in float64."""
    if x.shape != y.shape:
        raise ValueError(f"shapes differ: {tuple(x.shape)} vs {tuple(y.shape)}")
    total = 0.0
    for start in range(0, x.numel(), CHUNK):
        total += float(torch.dot(x[start : start + CHUNK].double(), y[start : start + CHUNK].double()))
    return total


def norm(x: torch.Tensor) -> float:
    """|x| accumulated in float64."""
    return dot(x, x) ** 0.5


def residual_norm(d: torch.Tensor, coeffs: tuple[float, ...], basis: tuple[torch.Tensor, ...]) -> float:
    """|d - sum_k coeffs[k] * basis[k]| in float64, chunk by chunk (no full-size temporaries)."""
    total = 0.0
    for start in range(0, d.numel(), CHUNK):
        r = d[start : start + CHUNK].double()
        for c, e in zip(coeffs, basis, strict=True):
            r = r - c * e[start : start + CHUNK].double()
        total += float(torch.dot(r, r))
    return total**0.5


def vector_digest(x: torch.Tensor) -> str:
    """Content hash of a vector (dtype, shape and bytes), for cache keys."""
    h = hashlib.sha256(f"{x.dtype}:{tuple(x.shape)}".encode())
    h.update(x.detach().contiguous().cpu().numpy().tobytes())
    return h.hexdigest()[:24]


LAYER_INDEX = re.compile(r"(?:^|\.)(?:layer|layers|h|block|blocks)\.(\d+)\.")


def layer_index(name: str) -> int | None:
    """Transformer layer number in a parameter name (``encoder.layer.3.attention...`` -> 3), else None."""
    m = LAYER_INDEX.search(name)
    return int(m.group(1)) if m else None
