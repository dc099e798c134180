"""Where and in which float type a model runs: devices, dtypes, the fit check and the out-of-memory backoff.

Devices: ``auto | cpu | cuda | cuda:N | mps``. ``parse_device`` checks the spelling (light, no torch: argparse and
the sidebar use it); ``resolve_device`` turns it into a ``torch.device`` that exists here: ``auto`` picks CUDA,
then MPS (Apple), then the CPU; a device this machine lacks is an ``InputError`` in one line that says what to do.

Dtypes: ``float32 | float16 | bfloat16``, the float type of the weights and the arithmetic; vectors always come
back as float32 numpy. A half dtype changes the numbers, so it is part of an encoder's fingerprint and of every
cache key (``dtype_suffix``). Choices made here:

- ``bfloat16`` runs everywhere, the CPU included (torch has bf16 kernels there; fast on CPUs with AVX-512 BF16 or
  AMX, correct but no faster elsewhere). Its 8 exponent bits are float32's, so nothing overflows.
- ``float16`` runs on a GPU only (``cuda``, ``mps``). On the CPU it would be slow (few CPUs have fp16 matrix
  kernels) and its 5 exponent bits overflow past 65504 in some models' activations, for nothing a CPU user gains:
  the CPU's fast paths are the ONNX fp32 and int8 engines (``isoscope.encode.engines``, ``quantize``), which run
  float32 models only.

Before loading, ``check_fits`` compares the parameters' bytes at the dtype with the device's free memory
(``torch.cuda.mem_get_info``; MPS: its recommended working set less what it holds) and refuses in one line a model
that cannot fit. The CPU is not checked: the operating system pages, and ``isoscope.encode.models`` already refuses
a config that claims more parameters than its weights hold.

Out of memory: ``run_with_backoff`` runs a batch; when the device (or the CPU allocator) runs out of memory it
halves the batch's rows and runs each half, and lowers the run's ``TokenBudget`` (padded tokens per batch) to half
of what failed, so the batches that follow are built smaller instead of failing again. Only a single text that
does not fit alone is an error (one line: lower ``--max-length`` or use a half dtype).
"""

from __future__ import annotations

import gc
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from isoscope.errors import InputError

if TYPE_CHECKING:
    import torch

log = logging.getLogger(__name__)

DEVICES: tuple[str, ...] = ("auto", "cpu", "cuda", "mps")  # plus cuda:N
DEVICE_HELP = (
    "where the model runs: auto (CUDA, then Apple MPS, then the CPU), cpu, cuda, cuda:N or mps (default: auto)"
)
Dtype = Literal["float32", "float16", "bfloat16"]
DTYPES: tuple[str, ...] = ("float32", "float16", "bfloat16")
DTYPE_DESCRIPTIONS: dict[str, str] = {  # the one glossary of dtypes (the CLI's and the sidebar's help)
    "float32": "32-bit floats: the model as trained, the same vectors on every device",
    "float16": "16-bit floats (5 exponent bits): half the memory on a GPU; GPU only",
    "bfloat16": "brain floats (float32's range, 8-bit mantissa): half the memory; each vector within a few hundredths (relative) of float32's",
}
DTYPE_BYTES: dict[str, int] = {"float32": 4, "float16": 2, "bfloat16": 2}
_DEVICE_RE = re.compile(r"^(auto|cpu|mps|cuda(?::(\d{1,3}))?)$")
_OOM_MESSAGES = ("out of memory", "can't allocate memory", "cannot allocate memory", "not enough memory")


def dtype_help() -> str:
    return "; ".join(f"{name}: {DTYPE_DESCRIPTIONS[name]}" for name in DTYPES) + " (default: float32)"


def parse_device(value: object) -> str:
    """``value`` spelled as one of ``auto, cpu, cuda, cuda:N, mps`` (case and spaces ignored); InputError else."""
    text = str(value if value is not None else "auto").strip().lower() or "auto"
    if not _DEVICE_RE.match(text):
        raise InputError(f"unknown device '{str(value)[:40]}'; choose auto, cpu, cuda, cuda:N (N = 0, 1, ...) or mps")
    return text


def parse_dtype(value: object) -> str:
    """``value`` as one of ``DTYPES`` (``fp32``/``fp16``/``bf16`` accepted too); InputError listing them."""
    text = str(value if value is not None else "float32").strip().lower()
    text = {"fp32": "float32", "fp16": "float16", "half": "float16", "bf16": "bfloat16"}.get(text, text)
    if text not in DTYPES:
        raise InputError(f"unknown dtype '{str(value)[:40]}'; choose one of {', '.join(DTYPES)}")
    return text


def _mps_available() -> bool:
    import torch

    backend = getattr(torch.backends, "mps", None)
    return bool(backend is not None and backend.is_available())


def resolve_device(value: object = "auto") -> torch.device:
    """The ``torch.device`` that ``value`` names on this machine; ``auto``: CUDA, then MPS, then the CPU.
    InputError in one line for a device this machine does not have."""
    import torch

    text = parse_device(value)
    if text == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda", torch.cuda.current_device())
        return torch.device("mps") if _mps_available() else torch.device("cpu")
    if text == "cpu":
        return torch.device("cpu")
    if text == "mps":
        if not _mps_available():
            raise InputError("device mps: this machine has no Apple GPU (MPS); use --device cpu or auto")
        return torch.device("mps")
    if not torch.cuda.is_available():
        build = "a CPU-only build of torch" if torch.version.cuda is None else "no CUDA GPU visible"
        raise InputError(f"device {text}: this machine has no usable CUDA GPU ({build}); use --device cpu or auto")
    index = int(text.split(":")[1]) if ":" in text else torch.cuda.current_device()
    count = torch.cuda.device_count()
    if index >= count:
        raise InputError(f"device {text}: this machine has {count} CUDA GPU(s), cuda:0 to cuda:{count - 1}")
    return torch.device("cuda", index)


def available_devices() -> list[str]:
    """The devices this machine has, for a picker: ``auto``, ``cpu``, then ``cuda:0``... and ``mps``."""
    import torch

    found = ["auto", "cpu"]
    if torch.cuda.is_available():
        found += [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    if _mps_available():
        found.append("mps")
    return found


def torch_dtype(name: str) -> torch.dtype:
    import torch

    return {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}[parse_dtype(name)]


def check_dtype(device: torch.device, dtype: str) -> str:
    """``dtype`` parsed, when it runs on ``device``: float16 runs on a GPU only (the module docstring says why)."""
    dtype = parse_dtype(dtype)
    if dtype == "float16" and device.type == "cpu":
        raise InputError("dtype float16 runs on a GPU only; on the CPU use --dtype bfloat16 or float32")
    return dtype


def dtype_suffix(dtype: str) -> str:
    """What an encoder's fingerprint carries for ``dtype``: nothing for float32 (existing caches stay valid)."""
    dtype = parse_dtype(dtype)
    return "" if dtype == "float32" else f"+{dtype}"


def free_bytes(device: torch.device) -> int | None:
    """Bytes free for a model on ``device`` now; None where it is not checked (the CPU)."""
    import torch

    if device.type == "cuda":
        free, _total = torch.cuda.mem_get_info(device)
        return int(free)
    if device.type == "mps":
        return int(torch.mps.recommended_max_memory() - torch.mps.driver_allocated_memory())
    return None


def _gb(n: float) -> str:
    return f"{n / 2**30:,.1f} GB"


def check_fits(*, name: str, parameters: int, dtype: str, device: torch.device, free: int | None) -> None:
    """InputError in one line when ``parameters`` at ``dtype`` need more bytes than ``free`` on ``device`` (None:
    unchecked), naming what would fit."""
    need = parameters * DTYPE_BYTES[parse_dtype(dtype)]
    if free is None or need <= free:
        return
    smaller = [d for d in ("bfloat16",) if DTYPE_BYTES[d] * parameters <= free and DTYPE_BYTES[d] < DTYPE_BYTES[dtype]]
    hint = f"--dtype {smaller[0]} ({_gb(parameters * DTYPE_BYTES[smaller[0]])})" if smaller else "a smaller model"
    raise InputError(
        f"{name}: its {parameters / 1e9:,.2f} billion parameters need {_gb(need)} in {dtype} but {device} has "
        f"{_gb(free)} free; use {hint}, another device (--device), or free the GPU's memory"
    )


def is_out_of_memory(exc: BaseException) -> bool:
    """True for an allocation that failed: torch's OutOfMemoryError (CUDA), MemoryError, and the RuntimeErrors of
    the CPU and MPS allocators ("DefaultCPUAllocator: can't allocate memory", "MPS backend out of memory")."""
    import torch

    oom = getattr(torch, "OutOfMemoryError", None) or torch.cuda.OutOfMemoryError
    if isinstance(exc, oom | MemoryError):
        return True
    return isinstance(exc, RuntimeError) and any(m in str(exc).lower() for m in _OOM_MESSAGES)


def release_memory(device: torch.device) -> None:
    """Give what a failed allocation left back to the device, so the smaller retry can use it."""
    import torch

    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
    elif device.type == "mps":
        torch.mps.empty_cache()


@dataclass
class TokenBudget:
    """Padded tokens a batch may hold on this run: None until the first out-of-memory error, then half of the
    largest batch that failed, halved again on each failure. ``events`` counts the failures."""

    tokens: int | None = None
    events: int = 0

    def rows(self, padded_length: int, wanted: int) -> int:
        """How many texts of ``padded_length`` tokens a batch takes: ``wanted`` within the budget, at least 1."""
        if self.tokens is None:
            return wanted
        return max(1, min(wanted, self.tokens // max(padded_length, 1)))

    def failed(self, rows: int, padded_length: int) -> None:
        self.tokens = max(padded_length, rows * padded_length // 2)
        self.events += 1


Outputs = dict[str, "torch.Tensor"]


def run_with_backoff(
    fn: Callable[[torch.Tensor, torch.Tensor], Outputs],
    input_ids: torch.Tensor,
    mask: torch.Tensor,
    *,
    budget: TokenBudget,
    device: torch.device,
    trim: bool = True,
) -> Outputs:
    """``fn(input_ids (b, t), mask (b, t)) -> name -> (b, ...)``; on an out-of-memory error the batch is split in
    two halves (with ``trim``, each cut to its own longest text: right padding; without, outputs per token keep
    ``t`` and join), each run the same way, and the results joined in order. InputError when one text alone does
    not fit."""
    import torch

    try:
        return fn(input_ids, mask)
    except (RuntimeError, MemoryError) as exc:
        if not is_out_of_memory(exc):
            raise
        b, t = input_ids.shape
        del exc  # its traceback holds the failed batch's tensors
    release_memory(device)
    budget.failed(b, t)
    if b == 1:
        raise InputError(
            f"one text of {t} tokens does not fit in the memory of {device}; lower --max-length, use --dtype "
            "bfloat16, or another device"
        )
    log.warning("out of memory on %s with %d texts of %d tokens; retrying in halves", device, b, t)
    half = b // 2
    parts = []
    for rows in (slice(0, half), slice(half, b)):
        m = mask[rows]
        keep = max(int(m.sum(dim=1).max()), 1) if trim else t  # right padding: later columns are padding only
        parts.append(run_with_backoff(fn, input_ids[rows, :keep], m[:, :keep], budget=budget, device=device, trim=trim))
    return {name: torch.cat([p[name] for p in parts]) for name in parts[0]}
