"""Where a space's vectors come from, decided once: ``SpaceSpec`` (a model with its pooling, a vectors file, an
embeddings endpoint, a loss-surface checkpoint; then a calibration), and what turns specs into vectors.

One concept per module:

- ``spec``: ``SpaceSpec``, the frozen value every command and the dashboard build once, and ``parse_space``, the
  one parser of SPEC strings (``isoscope compare --a ... --b ...``).
- ``checkpoints``: the encoder of a landscape checkpoint or of a seeded random init (``load_space_encoder``).
- ``build``: ``space_vectors``, one space applied to texts -> ``SpaceVectors`` (embedding, reading or calling
  the endpoint: the one function commands call for a space's vectors), and ``build_spaces``, specs applied to one
  list of texts (one forward pass per encoder, one read per file, one run per endpoint, then each calibration).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from isoscope._lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    **dict.fromkeys(("INITS", "SPEC_KEYS", "SpaceSpec", "parse_space"), "spec"),
    **dict.fromkeys(("load_space_encoder", "random_encoder"), "checkpoints"),
    **dict.fromkeys(
        ("SourceReaders", "SpaceVectors", "build_spaces", "calibrate_space", "check_pooling", "space_vectors"),
        "build",
    ),
}
__all__ = [
    "INITS",
    "SPEC_KEYS",
    "SourceReaders",
    "SpaceSpec",
    "SpaceVectors",
    "build_spaces",
    "calibrate_space",
    "check_pooling",
    "load_space_encoder",
    "parse_space",
    "random_encoder",
    "space_vectors",
]  # the names of _EXPORTS

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)


if TYPE_CHECKING:
    from isoscope.sources.build import (
        SourceReaders,
        SpaceVectors,
        build_spaces,
        calibrate_space,
        check_pooling,
        space_vectors,
    )
    from isoscope.sources.checkpoints import load_space_encoder, random_encoder
    from isoscope.sources.spec import INITS, SPEC_KEYS, SpaceSpec, parse_space
