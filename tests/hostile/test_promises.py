"""The documentation's promises about hostile input state what the code enforces (issue 40): the limits of
"Files you load", the classroom's ("Teaching a class") and the embeddings endpoint's, word for word where they
state a number.

The promises are read from wherever they live (README.md and docs/*.md), by their words, not by their headings.
"""

from __future__ import annotations

import re

from isoscope.data.limits import ENV_VARS, DecodeLimits, MiB
from tests.hostile.peak import ROOT


def docs() -> str:
    """README.md and every docs/*.md, one text (whitespace collapsed, so a promise may wrap anywhere)."""
    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    return " ".join(" ".join(f.read_text(encoding="utf-8").split()) for f in files if f.exists())


def says(*phrases: str) -> None:
    """Every phrase is in the documentation (case aside: a promise may start a sentence or follow a semicolon)."""
    text = docs().lower()
    missing = [p for p in phrases if p.lower() not in text]
    assert not missing, f"the documentation does not say: {missing}"


def number(pattern: str) -> int:
    """The number the documentation states in ``pattern`` (one capture group), e.g. "at most ([\\d,]+) MB read"."""
    found = {m.replace(",", "") for m in re.findall(pattern, docs())}
    assert found, f"no promise matches {pattern!r}"
    assert len(found) == 1, f"the documentation states {pattern!r} with several values: {found}"
    return int(found.pop())


# ---------------------------------------------------------------- Files you load


def test_files_you_load_states_the_decode_limits() -> None:
    limits = DecodeLimits()
    assert number(r"at most ([\d,]+) MB read") == limits.max_bytes // MiB
    assert number(r"read, ([\d,]+) rows, ") == limits.max_rows
    assert number(r"([\d,]+) characters per text") == limits.max_chars
    assert number(r"text \(longer ones are cut with a warning\), ([\d,]+) columns") == limits.max_columns
    assert number(r"JSON nested ([\d,]+) deep") == limits.max_json_depth
    assert number(r"Parquet data of ([\d,]+) MB uncompressed") == limits.max_parquet_bytes // MiB


def test_every_variable_named_is_a_limit() -> None:
    named = set(re.findall(r"`(ISOSCOPE_MAX_[A-Z_]+)`", docs()))
    assert named and named <= set(ENV_VARS.values()), named - set(ENV_VARS.values())


def test_every_limit_has_its_variable_named() -> None:
    """ISOSCOPE_MAX_VECTOR_BYTES (vectors files, and since issue 40 arrays given to isoscope.Space) is unnamed."""
    named = set(re.findall(r"`(ISOSCOPE_MAX_[A-Z_]+)`", docs()))
    assert set(ENV_VARS.values()) <= named, set(ENV_VARS.values()) - named
    assert number(r"vectors of ([\d,]+) MB as float32") == DecodeLimits().max_vector_bytes // MiB


def test_lone_surrogates_and_swapped_cache_entries_are_promised() -> None:
    says(
        "A lone UTF-16 surrogate (half of an emoji) is replaced with U+FFFD, with a warning",
        "so a damaged entry, or one swapped with another, is recomputed, never served",
    )


def test_planted_links_and_a_full_disk_are_promised() -> None:
    says(
        "a link planted in their place is never written through",
        "`disk full: N MB needed at PATH`",
        "in texts, names and metadata given to `isoscope.Space`, each time they are read",
        "an atlas folder's `points.parquet` is read under the same limits",
    )


# ---------------------------------------------------------------- Teaching a class


def test_teaching_a_class_states_the_classrooms_limits() -> None:
    from isoscope.dashboard.classroom.headers import SECURITY_HEADERS
    from isoscope.dashboard.launch import CLASSROOM_MAX_ROWS, CLASSROOM_UPLOAD_MB, MIN_CODE_CHARS

    assert number(r"uploads are capped at ([\d,]+) MB and [\d,]+ rows") == CLASSROOM_UPLOAD_MB
    assert number(r"uploads are capped at [\d,]+ MB and ([\d,]+) rows") == CLASSROOM_MAX_ROWS
    assert number(r"at least ([\d,]+) letters or digits") == MIN_CODE_CHARS
    headers = {k.decode().lower(): v.decode() for k, v in SECURITY_HEADERS}
    says("every response forbids framing (X-Frame-Options DENY, CSP `frame-ancestors 'none'`)")
    assert headers["x-frame-options"] == "DENY" and "frame-ancestors 'none'" in headers["content-security-policy"]


# ---------------------------------------------------------------- An embeddings endpoint


def test_the_endpoint_section_states_the_clients_defaults() -> None:
    from isoscope.encode.endpoints import DEFAULT_BASE_URL, DEFAULT_KEY_ENV
    from isoscope.encode.remote import RETRY_STATUS

    says(
        f"`--base-url` (default `{DEFAULT_BASE_URL}`)",
        f"the key comes from `{DEFAULT_KEY_ENV}`",
        "is sent only in the request header: never logged, cached or written into a result",
        "retried with backoff on 429 and 5xx",
        "every answer is cached under `$ISOSCOPE_CACHE/endpoints.sqlite`",
    )
    assert 429 in RETRY_STATUS


def test_the_endpoint_section_states_its_bounds() -> None:
    from isoscope.encode.endpoints import endpoint_timeouts
    from isoscope.encode.remote import MAX_DIMS

    read, deadline = endpoint_timeouts(environ={})  # what a request gets when no variable says otherwise
    assert number(r"each request gets ([\d,]+) s per read") == read
    assert number(r"per read and ([\d,]+) minutes in all") * 60 == deadline
    assert number(r"what its texts can need \(([\d,]+) numbers per text\)") == MAX_DIMS
    says(
        "a redirect to another address is refused (the key is never sent there)",
        "a server that echoes it has it masked in every message",
        "(base URL, model, dimensions, text digest)",
    )
