"""How much of a user's file Isoscope decodes: every limit in one place, with its environment variable.

A loader reads at most ``max_bytes`` from a file or an upload, and bounds what it *decodes* while it reads
(cells are cut as they stream in, rows are counted as they come, Parquet metadata and JSON nesting are
checked before anything is materialised), so a small file cannot expand into gigabytes. A JSON file (a config,
a manifest, a ledger) is read by ``isoscope.data.jsonfile``, under ``max_json_bytes`` and ``max_json_depth``.

Defaults suit one user on a laptop; ``isoscope app --classroom`` lowers some of them for a shared server.
Each can be set with its environment variable (``ISOSCOPE_MAX_ROWS=100000 isoscope sts ...``).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass

from isoscope.errors import InputError, printable

MiB = 2**20


@dataclass(frozen=True)
class DecodeLimits:
    """Bounds on what one file may decode to. Every field is a positive integer."""

    max_bytes: int = 200 * MiB  # bytes read from one file or upload
    max_rows: int = 50_000  # data rows of a table, texts of a .txt (streaming `embed --chunk-size` has none)
    max_chars: int = 2_000  # characters kept per text; longer ones are cut while reading, with a warning
    max_columns: int = 100  # columns of a table (and distinct keys over all JSONL records)
    max_line_bytes: int = 4 * MiB  # one JSONL record
    max_json_depth: int = 64  # nesting of arrays/objects in one JSON value
    max_json_bytes: int = 16 * MiB  # one JSON file Isoscope parses (isoscope.data.jsonfile: configs, manifests)
    max_parquet_bytes: int = 512 * MiB  # uncompressed size of a Parquet file's data, from its metadata
    max_row_groups: int = 10_000  # row groups of a Parquet file
    max_vector_bytes: int = 1024 * MiB  # one vectors file decoded to float32 (rows x dimensions x 4 bytes)

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"DecodeLimits.{f.name} must be a positive integer, got {value!r}")

    def replace(self, **changes: int | None) -> DecodeLimits:
        """A copy with the given fields changed (``None`` values are ignored)."""
        return dataclasses.replace(self, **{k: v for k, v in changes.items() if v is not None})

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> DecodeLimits:
        """Defaults overridden by ``ISOSCOPE_MAX_*`` variables; a bad value is an InputError naming it."""
        environ = os.environ if environ is None else environ
        values: dict[str, int] = {}
        for name, var in ENV_VARS.items():
            raw = environ.get(var, "").strip()
            if not raw:
                continue
            try:
                values[name] = int(raw.replace("_", ""))
            except ValueError:
                raise InputError(f"{var} must be a whole number, got '{raw[:40]}'") from None
            if values[name] < 1:
                raise InputError(f"{var} must be at least 1, got {values[name]}")
        return cls(**values)


ENV_VARS: dict[str, str] = {f.name: f"ISOSCOPE_{f.name.upper()}" for f in dataclasses.fields(DecodeLimits)}


def current_limits() -> DecodeLimits:
    """The limits in force now: defaults, overridden by the environment (read at every call)."""
    return DecodeLimits.from_env()


def resolve(limits: DecodeLimits | None, max_rows: int | None = None, max_chars: int | None = None) -> DecodeLimits:
    """``limits`` (default: ``current_limits()``) with explicit ``max_rows`` / ``max_chars`` arguments applied."""
    return (limits or current_limits()).replace(max_rows=max_rows, max_chars=max_chars)


def limits_help() -> str:
    """One line per limit: variable, default, meaning (for --help texts and the README)."""
    doc = {
        "max_bytes": "bytes read from one file or upload",
        "max_rows": "rows of a table or texts of a .txt",
        "max_chars": "characters kept per text (longer texts are cut, with a warning)",
        "max_columns": "columns of a table",
        "max_line_bytes": "bytes of one JSONL record",
        "max_json_depth": "nesting depth of a JSON value",
        "max_json_bytes": "bytes of a JSON file Isoscope parses (a config, a manifest, a ledger)",
        "max_parquet_bytes": "uncompressed bytes of a Parquet file's data",
        "max_row_groups": "row groups of a Parquet file",
        "max_vector_bytes": "bytes of one vectors file decoded to float32 (rows x dimensions x 4)",
    }
    default = DecodeLimits()
    return "\n".join(f"{ENV_VARS[k]} (default {getattr(default, k):,}): {v}" for k, v in doc.items())


# ---------------------------------------------------------------- counts a user gives


@dataclass(frozen=True)
class Count:
    """A count a user gives (an option, a parameter, a prompt's length): the least and the most Isoscope accepts,
    and what the most protects. Checked before anything is allocated for it."""

    least: int
    most: int
    why: str


# THE table of stated maxima for counts: every option or parameter that sizes an allocation, a pool or a loop by a
# number the user types is checked here (``count_option`` at parse time, ``check_count`` in the library)
COUNTS: dict[str, Count] = {
    "resamples": Count(100, 1_000_000, "each resample of the test and the interval is a pass over every query"),
    "actors": Count(1, 1024, "each Ray actor holds a copy of the model"),
    "num_cpus": Count(1, 4096, "CPUs a Ray started here may use"),
    "chunk_size": Count(1, 1_000_000, "texts embedded and held in memory at once"),
    "shard_rows": Count(1, 10_000_000, "rows one Ray task holds in memory"),
    "prompt_chars": Count(0, 10_000, "a prompt is put before every text"),  # and counted in its max length
    "chunk_rows": Count(1, 100_000_000, "rows a mapping run records at once; a rerun redoes at most one chunk"),
}


def check_count(what: str, value: object, label: str | None = None) -> int:
    """``value`` as an int when it is a whole number within ``COUNTS[what]``; else an InputError naming ``label``
    (default: ``what``) and the range."""
    count = COUNTS[what]
    label = label or what
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{label} must be a whole number, got {str(value)[:40]!r}")
    if not count.least <= value <= count.most:
        raise InputError(f"{label} must be between {count.least:,} and {count.most:,} ({count.why}); got {value:,}")
    return value


def count_option(what: str):
    """An argparse ``type=`` for the count ``what``: a bad value is a usage error (one line naming the flag)."""
    import argparse

    count = COUNTS[what]

    def parse(text: str) -> int:
        try:
            value = int(text.replace("_", ""))
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a whole number, got '{printable(text[:40])}'") from None
        if not count.least <= value <= count.most:
            raise argparse.ArgumentTypeError(
                f"must be between {count.least:,} and {count.most:,} ({count.why}); got {value:,}"
            )
        return value

    parse.__name__ = what  # argparse names the type in its own messages
    return parse
