"""Where a command's output goes: the rules every output follows, checked before any work and again at the
rename that puts it in place.

out = check_output(args.out, kind=NPY, inputs=[args.vectors], force=args.force)   # before any work
with atomic_file(out, kind=NPY, force=force) as tmp:      # a new file beside ``out``; renamed over it on success
    write(tmp)
with atomic_folder(out, kind=EXPORT_FOLDER) as tmp:       # a new folder beside ``out``; renamed into place
    write_files_into(tmp)

The rules (``docs/CONVENTIONS.md``, "Outputs"):

1. An output never is, holds or lies inside an input: ``out`` and every path the command read are compared
   with their symbolic links resolved (and by inode), so ``--out in.npy`` or ``--out .`` beside the corpus is
   refused before anything is read.
2. An existing output is replaced only when it is what the command writes: a file in the same format,
   recognised by its first bytes (``OutputKind.sniff``), or a folder that is empty or carries the kind's
   marker (an export's ``isoscope-export.json``, a calibrator's ``calibrator.json``, an atlas's
   ``manifest.json``, ...). Anything else is "of another kind": an unrelated file, a file in another format,
   something that is not a regular file, a folder where a file goes, a file where a folder goes, a folder
   holding other things. ``force`` (``--force``) replaces an existing *file* of another kind; a folder is never
   removed to make room, nor replaced by a file, with or without it.
3. Files and whole folders are written under a temporary name beside the destination (``.NAME.XXXX.tmp``) and
   renamed into place when complete, so the final name holds nothing or the previous complete version. A
   folder replaced as a whole may hold only what its previous version wrote (the files its marker lists):
   anything else in it is refused, since it would be lost. Outputs that resume (``OutputKind.resumable``: an
   atlas, a landscape run, embedding shards, STS-B's files) are built in place instead: every file in them is
   written atomically and recorded in the folder's ledger or manifest, which readers trust.

A run killed half-way leaves its temporary ``.NAME.*.tmp`` beside the destination (safe to delete).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from isoscope.errors import InputError
from isoscope.paths import file_kind

SNIFF_BYTES = 4096  # the first bytes of an existing file read to recognise its format
MAX_MARKER_BYTES = 16 * 2**20  # a folder's marker (a JSON manifest) read to recognise it


def _safetensors(head: bytes) -> bool:
    """A safetensors file: an 8-byte little-endian header length, then the JSON header."""
    return len(head) >= 9 and head[8:9] == b"{" and 2 <= int.from_bytes(head[:8], "little") < 100 * 2**20


def _faiss(head: bytes) -> bool:
    """A FAISS index: four ASCII letters naming the index type, the first an ``I`` (``IxPT``, ``IxFI``, ...)."""
    return len(head) >= 4 and head[:1] == b"I" and head[:4].isascii() and head[:4].isalnum()


@dataclass(frozen=True)
class OutputKind:
    """What an output is, and how an existing one of the same kind is recognised.

    A file: ``sniff(first bytes)`` says whether an existing file is one in this format. A folder: ``markers``
    (file or folder names, any of them) say it is one; ``marker_format`` (a JSON marker's ``format`` field,
    first marker) must match when given. ``members``: the names a whole folder may hold besides the files its
    marker lists under ``files``. ``resumable``: built in place (never replaced as a whole)."""

    name: str  # what a message calls it: "a .npy file", "an exported model folder"
    folder: bool = False
    sniff: Callable[[bytes], bool] | None = None
    markers: tuple[str, ...] = ()
    marker_format: str | None = None
    members: tuple[str, ...] = ()
    resumable: bool = False


NPY = OutputKind("a .npy array", sniff=lambda b: b.startswith(b"\x93NUMPY"))
PARQUET = OutputKind("a Parquet file", sniff=lambda b: b.startswith(b"PAR1"))
ARROW = OutputKind("an Arrow/Feather file", sniff=lambda b: b.startswith((b"ARROW1", b"FEA1")))
SAFETENSORS = OutputKind("a .safetensors file", sniff=_safetensors)
FAISS = OutputKind("a FAISS index", sniff=_faiss)
REPORT = OutputKind("an Isoscope HTML report", sniff=lambda b: b'<meta name="generator" content="Isoscope' in b)
PER_QUERY_CSV = OutputKind("a per-query metrics CSV", sniff=lambda b: b.startswith(b"variant,"))
VECTOR_FILES: dict[str, OutputKind] = {"npy": NPY, "parquet": PARQUET, "arrow": ARROW, "safetensors": SAFETENSORS}

# folders; the marker names and formats are the owning modules' constants (tests/core/data/test_outputs.py
# keeps them equal): isoscope.encode.manifest, isoscope.calibrate.base, isoscope.atlas.pipeline,
# isoscope.encode.shards, isoscope.landscape.results, isoscope.paths
EXPORT_FOLDER = OutputKind(
    "an exported model folder", folder=True, markers=("isoscope-export.json",), marker_format="isoscope-export"
)
CALIBRATOR_FOLDER = OutputKind(
    "a calibrator folder",
    folder=True,
    markers=("calibrator.json",),
    marker_format="isoscope-calibrator",
    members=("calibrator.json", "calibrator.safetensors"),
)
ATLAS_FOLDER = OutputKind(
    "an atlas folder", folder=True, markers=("manifest.json",), marker_format="isoscope-atlas", resumable=True
)
SHARDS_FOLDER = OutputKind(
    "a folder of embedding shards",
    folder=True,
    markers=("manifest.json",),
    marker_format="isoscope-embedding-shards",
    resumable=True,
)
LANDSCAPE_FOLDER = OutputKind(
    "a landscape results folder", folder=True, markers=("summary.json", "grid.json", "checkpoints"), resumable=True
)
STSB_FOLDER = OutputKind(
    "an STS-B folder",
    folder=True,
    markers=("stsb-en-train.csv", "stsb-en-dev.csv", "stsb-en-test.csv"),
    resumable=True,
)
STSB_FOLDER_FILE = OutputKind("one of STS-B's CSV files")  # inside an STS-B folder (no signature: a plain CSV)


# ---------------------------------------------------------------- the checks


def _resolved(path: str | Path) -> Path:
    return Path(os.path.abspath(Path(path).expanduser())).resolve()


Inputs = Iterable["str | Path | tuple[str, str | Path | None] | None"]


def _input_paths(inputs: Inputs) -> list[tuple[str, Path]]:
    """(how to name it, resolved path) for every input that names something on disk. An input is a path, or
    (the option that named it, its value); a ``FILE:COLUMN`` reference counts by its file; names that are not
    paths (a hub id, ``default``) are left out."""
    found: list[tuple[str, Path]] = []
    for item in inputs:
        label, given = item if isinstance(item, tuple) else ("", item)
        if given is None or str(given).strip() == "":
            continue
        text = str(given)
        for candidate in (text, text.rpartition(":")[0]) if ":" in text else (text,):
            if candidate and os.path.lexists(Path(candidate).expanduser()):
                found.append((f"{label} {candidate}".strip(), _resolved(candidate)))
                break
    return found


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def check_inputs(out: str | Path, inputs: Inputs, option: str = "--out") -> None:
    """InputError when ``out`` is an input, holds one, or lies inside an input folder (links resolved)."""
    target = _resolved(out)
    for given, path in _input_paths(inputs):
        if target == path or _same_file(target, path):
            raise InputError(f"{option} {out} is the input {given}; give a new name for the output")
        if path.is_relative_to(target):
            raise InputError(f"{option} {out} holds the input {given}; give a folder that holds no input")
        if path.is_dir() and target.is_relative_to(path):
            raise InputError(f"{option} {out} is inside the input folder {given}; write the output elsewhere")


def _sniffed(path: Path, kind: OutputKind) -> bool:
    """True when the regular file ``path`` starts as ``kind``'s files do (read without blocking)."""
    if kind.sniff is None:
        return False
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0) | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        return kind.sniff(os.read(fd, SNIFF_BYTES))
    except OSError:
        return False
    finally:
        os.close(fd)


def _marker(folder: Path, kind: OutputKind) -> dict | None:
    """The folder's marker as a dict ({} for a marker that is not JSON, or a folder marker), or None when the
    folder carries none of ``kind``'s markers (or a JSON marker of another format)."""
    for name in kind.markers:
        path = folder / name
        try:
            st = os.stat(path)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode) and kind.marker_format is None:
            return {}
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_MARKER_BYTES:
            continue
        if kind.marker_format is None:
            return {}
        try:
            doc = json.loads(path.read_bytes())
        except (OSError, ValueError, RecursionError):
            continue
        if isinstance(doc, dict) and doc.get("format") == kind.marker_format:
            return doc
    return None


def _foreign(folder: Path, kind: OutputKind, marker: dict) -> list[str]:
    """The names under a whole ``folder`` that its previous version did not write (they would be lost)."""
    listed = marker.get("files") if isinstance(marker.get("files"), dict) else {}
    own = {*kind.markers, *kind.members, *listed}
    extra = []
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        if path.is_dir() and not path.is_symlink():
            if not any(name.startswith(rel + "/") for name in own):
                extra.append(rel)
            continue
        if rel not in own:
            extra.append(rel)
    return extra


def _refuse(option: str, out: str | Path, what: str, fix: str) -> InputError:
    return InputError(f"{option} {out} {what}; {fix}")


def check_destination(out: str | Path, *, kind: OutputKind, force: bool = False, option: str = "--out") -> Path:
    """``out`` as a ``Path`` when it may be written as ``kind`` (rule 2 of the module's docstring): absent, or
    of the same kind, or (``force``) an existing file of another kind. InputError naming ``option`` otherwise."""
    path = Path(out).expanduser()
    if str(out).strip() == "":
        raise InputError(f"{option} is empty; give the {'folder' if kind.folder else 'file'} to write")
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return path  # absent (a dangling link too: the rename replaces the link)
    except NotADirectoryError:
        raise _refuse(option, out, "lies under a file", "give a path in a folder") from None
    is_dir = stat.S_ISDIR(st.st_mode)
    if kind.folder:
        if not is_dir:
            raise _refuse(option, out, f"is a {file_kind(st.st_mode)}", f"give a folder for {kind.name}")
        if not any(path.iterdir()):
            return path
        marker = _marker(path, kind)
        if marker is None:
            if found := [name for name in kind.markers if os.path.lexists(path / name)]:
                what = f"holds a {found[0]} that does not mark {kind.name} (damaged, or another program's)"
                raise _refuse(option, out, what, "give a new or empty folder, or delete this one")
            raise _refuse(option, out, f"is a folder that is not {kind.name}", "give a new or empty folder")
        if not kind.resumable and (extra := _foreign(path, kind, marker)):
            shown = ", ".join(extra[:3]) + (", ..." if len(extra) > 3 else "")
            raise _refuse(
                option, out, f"holds files it would lose ({shown})", "give a new folder, or move them out first"
            )
        return path
    if is_dir:
        raise _refuse(option, out, "is a folder", f"give the file to write ({kind.name})")
    if force or _sniffed(path, kind):
        return path
    what = "is not a regular file" if not stat.S_ISREG(st.st_mode) else f"exists and is not {kind.name}"
    raise _refuse(option, out, what, "add --force to replace it, or give a new name")


def check_output(
    out: str | Path,
    *,
    kind: OutputKind,
    inputs: Inputs = (),
    force: bool = False,
    option: str = "--out",
) -> Path:
    """Every rule an output follows, checked before any work: ``out`` is no input, holds none and is not inside
    an input folder (``check_inputs``), and whatever is there now may be replaced by ``kind``
    (``check_destination``). Returns ``out`` as a ``Path`` (``~`` expanded)."""
    if str(out).strip() == "":
        raise InputError(f"{option} is empty; give the {'folder' if kind.folder else 'file'} to write")
    check_inputs(out, inputs, option)
    return check_destination(out, kind=kind, force=force, option=option)


# ---------------------------------------------------------------- atomic writers


def temporary_name(out: Path, suffix: str = "tmp") -> Path:
    """A fresh hidden name beside ``out``: ``.NAME.XXXXXXXXXXXX.tmp`` (same folder, so a rename is atomic)."""
    return out.parent / f".{out.name}.{secrets.token_hex(6)}.{suffix}"


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    try:
        os.fsync(fd)
    except OSError:  # a folder on a file system that cannot sync one (or Windows): the rename still holds
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_file(out: str | Path, *, kind: OutputKind, force: bool = False, option: str = "--out") -> Iterator[Path]:
    """A new, empty regular file beside ``out`` (created under O_EXCL, never through a link) for the block to
    write; when the block ends without an error the file is synced and renamed over ``out`` (checked again
    with ``check_destination`` first), else removed. Permissions follow the umask."""
    out = check_destination(out, kind=kind, force=force, option=option)
    out.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    while True:
        tmp = temporary_name(out)
        try:
            os.close(os.open(tmp, flags, 0o666))
            break
        except FileExistsError:
            continue
    try:
        yield tmp
        _fsync(tmp)
        check_destination(out, kind=kind, force=force, option=option)
        os.replace(tmp, out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync(out.parent)


@contextlib.contextmanager
def atomic_folder(out: str | Path, *, kind: OutputKind, option: str = "--out") -> Iterator[Path]:
    """A new, empty folder beside ``out`` for the block to fill; when the block ends without an error every
    file in it is synced and the folder takes ``out``'s name (a previous version, checked again with
    ``check_destination``, is moved aside first and removed after), else it is removed. At every instant
    ``out`` is absent, the previous complete version, or the new complete one."""
    out = check_destination(out, kind=kind, option=option)
    out.parent.mkdir(parents=True, exist_ok=True)
    while True:
        tmp = temporary_name(out)
        try:
            tmp.mkdir()
            break
        except FileExistsError:
            continue
    try:
        yield tmp
        for path in sorted(tmp.rglob("*")):
            if path.is_file() and not path.is_symlink():
                _fsync(path)
        _fsync(tmp)
        check_destination(out, kind=kind, option=option)
        old = None
        if os.path.lexists(out):
            old = temporary_name(out, "old")
            os.replace(out, old)
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _fsync(out.parent)
    if old is not None and old.is_symlink():  # a link to the previous version: the link goes, its target stays
        old.unlink()
    elif old is not None:
        shutil.rmtree(old, ignore_errors=True)


def write_output_bytes(
    out: str | Path, data: bytes, *, kind: OutputKind, force: bool = False, option: str = "--out"
) -> Path:
    """``data`` written to ``out`` through ``atomic_file``; returns the path. ``DiskFull`` before anything is
    written when the disk lacks the room."""
    from isoscope.cache import check_free, disk_full_as

    path = Path(out).expanduser()
    check_free(path, len(data))
    with atomic_file(path, kind=kind, force=force, option=option) as tmp, disk_full_as(path, len(data)):
        tmp.write_bytes(data)
    return path
