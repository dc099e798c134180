"""What a ``.safetensors`` file claims, checked against its bytes before anything is allocated.

``tensor_shapes(path)`` reads only the header, through safetensors' own validation (every tensor's bytes lie inside
the file and the tensors cover it exactly, so a header cannot claim more values than the file holds), after
``isoscope.paths.check_regular`` (a FIFO would block the open). The model loader counts a model's parameters
with it, and a recipe's Dense module compares its config's shapes with it (``isoscope.encode.recipe_check``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from isoscope.errors import InputError, first_line
from isoscope.paths import NotRegularFile, check_regular

FLOAT_DTYPES = ("F64", "F32", "F16", "BF16")  # how safetensors names the float dtypes weights are stored in
MIN_FLOAT_BYTES = 2  # the narrowest of them (F16, BF16): a float weight takes at least 2 bytes in any file


@dataclass(frozen=True)
class TensorInfo:
    """One tensor as the header describes it (its bytes checked to lie inside the file)."""

    shape: tuple[int, ...]
    dtype: str  # safetensors' name: F32, F16, BF16, I64, ...

    @property
    def size(self) -> int:
        return math.prod(self.shape)


def tensor_shapes(path: str | Path, label: str | None = None) -> dict[str, TensorInfo]:
    """name -> ``TensorInfo`` of every tensor of a ``.safetensors`` file, from its header alone (nothing loaded).
    InputError naming the file (``label``, default its name) when it is not a regular file or its header is
    damaged or claims bytes the file does not hold."""
    from safetensors import SafetensorError, safe_open

    path = Path(path)
    label = label or path.name
    try:
        check_regular(path)
        with safe_open(str(path), framework="pt") as f:
            infos = {}
            for name in f.keys():
                piece = f.get_slice(name)
                infos[name] = TensorInfo(tuple(int(x) for x in piece.get_shape()), str(piece.get_dtype()))
            return infos
    except NotRegularFile as exc:
        raise InputError(f"{label} is a {exc.kind}, not a regular file; save the model again") from None
    except (SafetensorError, OSError, ValueError) as exc:
        raise InputError(
            f"{label} is unreadable ({first_line(exc, 160)}): its header does not match its bytes; save or download "
            "the model again"
        ) from None
