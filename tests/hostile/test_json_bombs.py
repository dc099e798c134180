"""JSON without depth or type limits (issue 51, class 1): every JSON file Isoscope reads from a folder goes through
one bounded reader (``isoscope.data.jsonfile``): its size, then its nesting depth counted before ``json`` parses
anything, then its top-level type and a schema per file. Each hostile file here (200,000 levels deep, a list or a
string where an object belongs, ledger entries of the wrong type) is refused with exit status 2 and one line that
names the file (and the field), at a bounded memory cost, and the refused file is left as it was."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from isoscope.atlas.folder import LEDGER, AtlasDamaged, load_atlas
from isoscope.calibrate import load_calibrator, make_calibrator
from isoscope.data.jsonfile import ListOf, MapOf, Num, Str, Struct, Tuple, json_depth_exceeds, read_json
from isoscope.data.limits import DecodeLimits
from isoscope.encode.manifest import MANIFEST_FILE
from isoscope.encode.models import default_model_path
from isoscope.errors import InputError
from isoscope.neighbours.index import VectorIndex, build_index, sidecar_path
from tests.hostile.conftest import assert_cli_refused, assert_one_line
from tests.hostile.peak import GiB, child_peak
from tests.hostile.test_atlas_folder import build, rewrite_ledger
from tests.vector_files import vector_table, write_dataset_folder

MiB = 2**20
DEEP = 200_000
DEPTH = DecodeLimits().max_json_depth


def deep_object(levels: int = DEEP) -> str:
    """An object whose one field nests ``levels`` lists deep: far past any recursion limit."""
    return '{"x": ' + "[" * levels + "]" * levels + "}"


# ---------------------------------------------------------------- the depth count


def _depth(value: object) -> int:
    """The nesting depth of a parsed JSON value (the reference the byte count must agree with)."""
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    return 0


_text = st.text(alphabet=st.sampled_from('ab"\\[]{}/\n\t\x00é€😀'), max_size=8)
_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | _text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_text, inner, max_size=4),
    max_leaves=40,
)


@settings(max_examples=300, deadline=None)
@given(value=_values, ascii_only=st.booleans(), limit=st.integers(0, 12))
def test_the_byte_count_of_depth_agrees_with_the_parsed_value(value: object, ascii_only: bool, limit: int) -> None:
    """Brackets, quotes and backslashes inside strings (escaped or raw UTF-8) never count as nesting."""
    text = json.dumps(value, ensure_ascii=ascii_only)
    assert json_depth_exceeds(text, limit) == (_depth(value) > limit)
    assert json_depth_exceeds(text.encode("utf-8"), limit) == (_depth(value) > limit)


def test_a_deep_file_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text(deep_object())
    with pytest.raises(InputError) as info:
        read_json(path, what="deep.json")
    assert_one_line(str(info.value))
    assert f"deep.json: nests JSON deeper than {DEPTH} levels" in str(info.value)
    path.write_text(deep_object(DEPTH - 1))  # the object's own level plus DEPTH - 1 lists: exactly the limit
    assert read_json(path, what="deep.json") == json.loads(deep_object(DEPTH - 1))


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("[1, 2]", "x.json: must hold a JSON object, not a list of 2"),
        ('"a string"', "x.json: must hold a JSON object, not the string 'a string'"),
        ('{"bounds": [0, 0, 1], "clusters": []}', "x.json: bounds must be [x0, y0, x1, y1], not a list of 3"),
        ('{"bounds": [0, 0, 1, NaN], "clusters": []}', "x.json: bounds[3] must be a finite number, not the number nan"),
        ('{"bounds": [0, 0, 1, 1], "clusters": [{"words": 3}]}', "x.json: clusters[0].words must be a list"),
        ('{"bounds": [0, 0, 1, 1]}', "x.json: clusters is missing"),
        ('{"bounds": [0, 0, 1, 1], "clusters": [], "levels": {"a": 1}}', "x.json: levels must be a list"),
        ("{'single': 1}", "x.json: not valid JSON"),
        ('{"n": ' + "9" * 5000 + "}", "x.json: not valid JSON"),
    ],
)
def test_a_schema_names_the_file_and_the_field(tmp_path: Path, text: str, fragment: str) -> None:
    schema = Struct(
        {
            "bounds": Tuple((Num(),) * 4, name="[x0, y0, x1, y1]"),
            "clusters": ListOf(Struct({}, {"words": ListOf(Str())})),
        },
        {"levels": ListOf(MapOf(Num()))},
    )
    path = tmp_path / "x.json"
    path.write_text(text)
    with pytest.raises(InputError) as info:
        read_json(path, what="x.json", schema=schema)
    assert_one_line(str(info.value))
    assert fragment in str(info.value), str(info.value)


def test_a_json_file_over_its_size_is_refused_unread(tmp_path: Path) -> None:
    """A 64 GiB sparse file: refused from its size, so nothing of it is read."""
    path = tmp_path / "huge.json"
    with open(path, "wb") as f:
        f.truncate(64 * GiB)
    with pytest.raises(InputError, match=r"huge\.json: 68,719,476,736 bytes, more than the 16,777,216 allowed"):
        read_json(path, what="huge.json")


def test_a_small_json_file_costs_memory_by_its_size_not_by_the_limit(tmp_path: Path) -> None:
    """Reading a few bytes under a 16 MiB limit once set aside the whole 16 MiB (``f.read(limit + 1)``)."""
    import tracemalloc

    path = tmp_path / "small.json"
    path.write_text('{"a": 1}')
    tracemalloc.start()
    try:
        assert read_json(path, what="small.json") == {"a": 1}
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, peak  # a 64 KiB read block and the parse, nowhere near the 16 MiB limit


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    path = tmp_path / "ledger.json"
    os.mkfifo(path)
    with pytest.raises(InputError, match=r"ledger\.json: a FIFO \(named pipe\), not a regular file"):
        read_json(path, what="ledger.json")


# ---------------------------------------------------------------- a model folder, through the command line


@pytest.fixture()
def model_copy(tmp_path: Path) -> Path:
    """The embedded model as a folder of one's own: its small files copied, its weights linked (never written)."""
    src, out = Path(default_model_path()), tmp_path / "model"
    shutil.copytree(src, out, ignore=shutil.ignore_patterns("model.safetensors", ".git*"))
    (out / "model.safetensors").symlink_to(src / "model.safetensors")
    return out


@pytest.mark.parametrize(
    "name",
    [
        "modules.json",
        "config_sentence_transformers.json",
        "sentence_bert_config.json",
        "1_Pooling/config.json",
        "config.json",
        "tokenizer.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
    ],
)
def test_a_deep_model_file_is_one_line(cli, model_copy: Path, name: str) -> None:
    """Before: RecursionError, "internal error, a bug in Isoscope" (transformers and sentence-transformers parse
    config.json, tokenizer.json and the module configs themselves: they are bounded before they get them)."""
    deep = deep_object()
    (model_copy / name).write_text(deep)
    line = assert_cli_refused(cli("params", "--model", str(model_copy)), name, f"deeper than {DEPTH} levels")
    assert "bug" not in line
    assert (model_copy / name).read_text() == deep  # the user's file is left as it was


@pytest.mark.parametrize(
    ("manifest", "fragment"),
    [
        ("[]", "must hold a JSON object, not a list of 0"),
        ('"isoscope-export"', "must hold a JSON object, not the string 'isoscope-export'"),
        (deep_object(), f"deeper than {DEPTH} levels"),
        ('{"format": "isoscope-export", "files": []}', "files must be an object, not a list of 0"),
        ('{"format": "isoscope-export", "files": {"config.json": 5}}', "files['config.json'] must be a SHA-256"),
        ('{"format": "other", "files": {}}', "format must be 'isoscope-export', not the string 'other'"),
    ],
    ids=["list", "string", "deep", "files-list", "digest-number", "foreign"],
)
def test_an_export_manifest_of_the_wrong_shape_is_one_line(cli, model_copy: Path, manifest: str, fragment: str) -> None:
    """Before: AttributeError: 'list' object has no attribute 'get' (an internal error)."""
    (model_copy / MANIFEST_FILE).write_text(manifest)
    assert_cli_refused(cli("params", "--model", str(model_copy)), MANIFEST_FILE, fragment)


MANIFEST_CHILD = """
import sys
from isoscope.encode.manifest import read_manifest
from isoscope.errors import InputError
try:
    read_manifest(sys.argv[2])
except InputError as exc:
    print(exc, file=sys.stderr)
    sys.exit(3)
"""


def test_a_manifest_just_under_the_size_limit_costs_bounded_memory(tmp_path: Path) -> None:
    """16 MiB of empty lists, the costliest JSON per byte (about 25 bytes of Python objects each): parsed within
    the limit, and memory stays far under 1 GiB."""
    folder = tmp_path / "export"
    folder.mkdir()
    filler = "[]," * ((DecodeLimits().max_json_bytes - 200) // 3)
    (folder / MANIFEST_FILE).write_text('{"format": "isoscope-export", "files": {}, "provenance": [' + filler + "0]}")
    (folder / "weights.bin").write_bytes(b"x")
    code, err, peak = child_peak([MANIFEST_CHILD, str(folder)], tmp_path)
    assert code == 3, err[-2000:]
    message = err.strip().splitlines()[-1]
    assert_one_line(message)
    assert "weights.bin is not part of the export" in message
    assert peak < 1 * GiB, f"peak {peak / MiB:,.0f} MiB"


# ---------------------------------------------------------------- an atlas's ledger, manifest and clusters


@pytest.fixture(scope="module")
def built_atlas(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("atlas") / "atlas"
    build(out)
    return out


@pytest.fixture()
def atlas(built_atlas: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "atlas"
    shutil.copytree(built_atlas, copy)
    return copy


def _stage(ledger: dict) -> str:
    return next(iter(ledger["stages"]))


LEDGER_DAMAGE = {
    "deep": (lambda doc: {"stages": json.loads(deep_object(DEPTH + 1))}, f"nests JSON deeper than {DEPTH} levels"),
    "a number": (
        lambda doc: {**doc, "stages": {**doc["stages"], _stage(doc): 3}},
        "must be an object, not the number 3",
    ),
    "a 3-list": (
        lambda doc: _output(doc, lambda size, digest: [size, digest, 0]),
        "must be [bytes, sha256], not a list of 3",
    ),
    "size big": (
        lambda doc: _output(doc, lambda size, digest: ["big", digest]),
        "[0] must be a whole number >= 0, not the string 'big'",
    ),
    "outputs a list": (
        lambda doc: {**doc, "stages": {**doc["stages"], _stage(doc): {"inputs": {}, "outputs": ["xy.npy"]}}},
        "outputs must be an object, not a list of 1",
    ),
    "a list": (lambda doc: [doc], "must hold a JSON object, not a list of 1"),
}


def _output(doc: dict, change) -> dict:
    stage = _stage(doc)
    outputs = doc["stages"][stage]["outputs"]
    rel = next(iter(outputs))
    return {
        **doc,
        "stages": {**doc["stages"], stage: {**doc["stages"][stage], "outputs": {rel: change(*outputs[rel])}}},
    }


@pytest.mark.parametrize("damage", list(LEDGER_DAMAGE))
def test_a_damaged_ledger_is_one_line_naming_its_field(cli, atlas: Path, damage: str) -> None:
    """Before: raw tracebacks with no one-line error at all (int('big'), a 3-list unpacked into two)."""
    change, fragment = LEDGER_DAMAGE[damage]
    damaged = json.dumps(change(json.loads((atlas / LEDGER).read_text())))
    (atlas / LEDGER).write_text(damaged)
    line = assert_cli_refused(cli("app", str(atlas), "--dry-run"), "ledger.json", fragment)
    assert str(atlas) not in line  # the file is named as the folder knows it, no server path
    with pytest.raises(AtlasDamaged) as info:
        load_atlas(atlas)
    assert_one_line(str(info.value))
    assert fragment in str(info.value)
    assert (atlas / LEDGER).read_text() == damaged  # refused, not repaired behind the user's back


def test_a_rebuild_over_a_damaged_ledger_recomputes_and_loses_nothing(atlas: Path) -> None:
    points = (atlas / "points.parquet").read_bytes()
    (atlas / LEDGER).write_text(json.dumps({"stages": {"embed": 3}}))
    result = build(atlas)
    assert result is not None
    loaded = load_atlas(atlas)
    assert loaded.n == 300 and (atlas / "points.parquet").read_bytes() == points  # the same texts, rebuilt alike


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        (deep_object(), f"raw/clusters.json: nests JSON deeper than {DEPTH} levels"),
        (
            '{"bounds": [0, 0, 1, 1], "clusters": [{"cluster": 0, "size": "big", "x": 0, "y": 0, "words": []}]}',
            "raw/clusters.json: clusters[0].size must be a whole number >= 0, not the string 'big'",
        ),
        ('{"bounds": "everywhere", "clusters": []}', "raw/clusters.json: bounds must be [x0, y0, x1, y1]"),
    ],
    ids=["deep", "size-big", "bounds-string"],
)
def test_a_forged_clusters_file_is_one_line(atlas: Path, text: str, fragment: str) -> None:
    """A forger who rewrote the ledger too: the file passes its SHA-256 and is refused by its schema."""
    (atlas / "raw" / "clusters.json").write_text(text)
    rewrite_ledger(atlas, "raw/clusters.json")
    with pytest.raises(AtlasDamaged) as info:
        load_atlas(atlas)
    assert_one_line(str(info.value))
    assert fragment in str(info.value), str(info.value)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [("[]", "manifest.json: must hold a JSON object, not a list of 0"), (deep_object(), "manifest.json: nests JSON")],
)
def test_a_damaged_atlas_manifest_is_one_line(cli, atlas: Path, text: str, fragment: str) -> None:
    (atlas / "manifest.json").write_text(text)
    assert_cli_refused(cli("app", str(atlas), "--dry-run"), fragment)


# ---------------------------------------------------------------- the other readers


def test_a_deep_dataset_state_is_one_line(cli, tmp_path: Path) -> None:
    folder = write_dataset_folder(tmp_path / "ds", vector_table(np.eye(4, 8, dtype=np.float32), list("abcd")))
    (folder / "state.json").write_text(deep_object())
    assert_cli_refused(
        cli("calibrate", "--vectors", str(folder), "--method", "centre", "--out", str(tmp_path / "c")),
        "state.json",
        "deeper than",
    )
    assert not (tmp_path / "c").exists()


@pytest.mark.parametrize("text", [deep_object(), "[]", '{"format": "isoscope-calibrator", "version": "1"}'])
def test_a_damaged_calibrator_file_is_one_line(tmp_path: Path, text: str) -> None:
    folder = make_calibrator("centre").fit(np.eye(8, 4)).save(tmp_path / "cal")
    (folder / "calibrator.json").write_text(text)
    with pytest.raises(InputError) as info:
        load_calibrator(folder)
    assert_one_line(str(info.value))
    assert "calibrator.json" in str(info.value)


def test_a_deep_index_description_is_one_line(tmp_path: Path) -> None:
    build_index(np.random.default_rng(0).normal(size=(8, 4)), "flat").save(tmp_path / "i.faiss")
    sidecar_path(tmp_path / "i.faiss").write_text(deep_object())
    with pytest.raises(InputError, match=r"i\.faiss\.json: nests JSON deeper"):
        VectorIndex.load(tmp_path / "i.faiss")


def test_the_json_limits_are_stated_where_the_limits_are() -> None:
    text = " ".join((Path(__file__).parents[2] / "docs" / "files.md").read_text(encoding="utf-8").split())
    assert f"is at most {DecodeLimits().max_json_bytes // MiB} MB (`ISOSCOPE_MAX_JSON_BYTES`)" in text
    conventions = (Path(__file__).parents[2] / "docs" / "CONVENTIONS.md").read_text(encoding="utf-8")
    assert "isoscope.data.jsonfile.read_json" in conventions and "isoscope.paths.inside" in conventions
