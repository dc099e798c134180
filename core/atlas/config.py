"""What an atlas is built with: ``AtlasConfig`` (the settings a folder's manifest records) and the engines.

config = AtlasConfig(calibrate="whitening", engine="ray", shard_rows=100_000)
config.validate()                                  # InputError naming the bad setting
config.to_dict()                                   # the plain JSON of the manifest
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass

from isoscope.atlas.layout import LANDMARKS, check_method
from isoscope.data.limits import check_count
from isoscope.encode.pooling import PoolingSpec
from isoscope.errors import InputError

ENGINES: tuple[str, ...] = ("local", "ray")
StageProgress = Callable[[str, int, int], None]  # (stage, done, total)


@dataclass
class AtlasConfig:
    """What an atlas is built with. ``calibrate="none"`` builds the raw space only; a UMAP layout of more
    than ``landmarks`` rows is the landmark layout (0: full UMAP at any size). ``pooling`` None is the model's
    default; ``build_atlas`` records the pooling it used (none for vectors computed elsewhere)."""

    pooling: PoolingSpec | None = None
    max_length: int = 128
    batch_size: int = 64
    k: int = 15
    layout: str = "umap"
    calibrate: str = "whitening"
    fit_rows: int = 100_000
    seed: int = 0
    embed_chunk: int = 16_384
    landmarks: int = LANDMARKS
    engine: str = "local"  # ENGINES: this process, or the stages as Ray tasks (isoscope.atlas.distributed)
    shard_rows: int = 100_000  # rows per Ray task (the ray engine only)

    def to_dict(self) -> dict:
        """The plain-JSON settings the folder's manifest records (the pooling by name; the engine and its shards
        only for the ray engine, so folders built before it existed keep their manifests)."""
        out = {**asdict(self), "pooling": None if self.pooling is None else self.pooling.name}
        if self.engine == "local":
            del out["engine"], out["shard_rows"]
        return out

    def validate(self) -> None:
        check_method(self.layout)
        if self.k < 2:
            raise InputError(f"k must be at least 2, got {self.k}")
        if self.fit_rows < 2:
            raise InputError(f"fit rows must be at least 2, got {self.fit_rows}")
        if self.landmarks != 0 and self.landmarks < 1_000:
            raise InputError(f"landmarks must be 0 (full UMAP) or at least 1,000, got {self.landmarks}")
        if self.engine not in ENGINES:
            raise InputError(f"unknown engine '{self.engine}'; choose one of {', '.join(ENGINES)}")
        check_count("shard_rows", self.shard_rows, "shard rows")
