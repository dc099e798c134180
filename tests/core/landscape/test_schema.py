"""isoscope.landscape.schema: strict fields that name the file and the field when they are missing or mistyped."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest

from isoscope.data.export import to_jsonable
from isoscope.landscape.schema import INLINE, OPTIONAL, Fields, Record, ResultsSchemaError, arrays
from isoscope.landscape.store import write_arrays

FILE = Path("/results/pretrained/results.json")


def test_values_by_type_and_null_as_nan():
    f = Fields({"a": 1, "b": None, "c": True, "d": "x", "e": [1, None, 2.5], "o": {"k": 3}, "l": [{"v": 1}]}, FILE)
    assert f.num("a") == 1.0 and math.isnan(f.num("b")) and f.flag("c") is True and f.text("d") == "x"
    assert f.integer("a") == 1 and f.nums("e")[0] == 1.0 and math.isnan(f.nums("e")[1])
    assert f.obj("o").integer("k") == 3 and f.opt("missing") is None and f.opt("b") is None
    assert [x.integer("v") for x in f.items("l")] == [1] and f.has("a") and not f.has("z")


@pytest.mark.parametrize(
    ("call", "field", "problem"),
    [
        (lambda f: f.num("missing"), "'missing'", "is missing"),
        (lambda f: f.num("c"), "'c'", "number"),  # a boolean is not a number
        (lambda f: f.num("d"), "'d'", "number"),
        (lambda f: f.integer("half"), "'half'", "integer"),
        (lambda f: f.flag("a"), "'a'", "true or false"),
        (lambda f: f.text("a"), "'a'", "string"),
        (lambda f: f.nums("d"), "'d'", "list of numbers"),
        (lambda f: f.obj("a"), "'a'", "object"),
        (lambda f: f.obj("o").num("gone"), "'o.gone'", "is missing"),
        (lambda f: f.items("l")[0].num("gone"), "'l[0].gone'", "is missing"),
    ],
)
def test_errors_name_the_file_and_the_dotted_field(call, field, problem):
    f = Fields({"a": 1, "c": True, "d": "x", "half": 1.5, "o": {"k": 3}, "l": [{"v": 1}]}, FILE)
    with pytest.raises(ResultsSchemaError, match=problem) as err:
        call(f)
    assert str(FILE) in str(err.value) and f"field {field}" in str(err.value)


def test_arrays_are_required_by_name(tmp_path):
    path = tmp_path / "grid.npz"
    write_arrays(path, {"alpha": np.arange(3.0), "train_loss": np.ones(3)})
    got = arrays(path, ("alpha", "train_loss"))
    assert set(got) == {"alpha", "train_loss"}
    with pytest.raises(ResultsSchemaError, match="heldout_acc missing") as err:
        arrays(path, ("alpha", "heldout_acc"))
    assert str(path) in str(err.value)
    with pytest.raises(ResultsSchemaError, match="missing or unreadable"):
        arrays(tmp_path / "none.npz", ("alpha",))


# ---------------------------------------------------------------- records: one definition for writer and reader


@dataclasses.dataclass(frozen=True)
class Inner(Record):
    x: float
    n: int


@dataclasses.dataclass(frozen=True)
class Outer(Record):
    name: str
    ok: bool
    values: tuple[float, ...]
    ids: tuple[int, ...]
    pair: tuple[float, float]
    inner: Inner
    flat: Inner = dataclasses.field(metadata=INLINE)
    rows: tuple[Inner, ...] = ()
    maybe: Inner | None = None
    later: str = dataclasses.field(default="old files lack it", metadata=OPTIONAL)


def _outer() -> Outer:
    return Outer("a", True, (1.0, math.nan), (3, 4), (0.5, 1.5), Inner(2.0, 1), Inner(3.0, 2), (Inner(4.0, 3),))


def test_a_record_reads_back_what_it_writes():
    record = _outer()
    data = record.to_json()
    assert list(data) == ["name", "ok", "values", "ids", "pair", "inner", "x", "n", "rows", "maybe", "later"]
    assert data["inner"] == {"x": 2.0, "n": 1} and (data["x"], data["n"]) == (3.0, 2)  # inline: keys in the parent
    back = Outer.parse(Fields(json.loads(json.dumps(to_jsonable(data))), FILE))  # NaN -> null -> NaN
    assert math.isnan(back.values[1])
    assert dataclasses.replace(back, values=(1.0, 0.0)) == dataclasses.replace(record, values=(1.0, 0.0))
    with_inner = dataclasses.replace(record, maybe=Inner(5.0, 4))
    assert Outer.parse(Fields(with_inner.to_json(), FILE)).maybe == Inner(5.0, 4)
    assert Outer.fields()[:3] == ("name", "ok", "values")


def test_optional_fields_default_when_absent_and_the_rest_is_required():
    data = _outer().to_json()
    del data["later"], data["maybe"]
    back = Outer.parse(Fields(data, FILE))
    assert back.later == "old files lack it" and back.maybe is None
    for key, problem in (("n", "'n' is missing"), ("inner", "'inner' is missing"), ("rows", "'rows' is missing")):
        broken = {k: v for k, v in _outer().to_json().items() if k != key}
        with pytest.raises(ResultsSchemaError, match=problem):
            Outer.parse(Fields(broken, FILE))
    with pytest.raises(ResultsSchemaError, match="'ids' should be a list of integers"):
        Outer.parse(Fields({**_outer().to_json(), "ids": [1.5]}, FILE))
    with pytest.raises(ResultsSchemaError, match="'pair' should hold 2 values, not 3"):
        Outer.parse(Fields({**_outer().to_json(), "pair": [1, 2, 3]}, FILE))
    with pytest.raises(ResultsSchemaError, match=r"'rows\[0\].x' should be a number"):
        Outer.parse(Fields({**_outer().to_json(), "rows": [{"x": "1", "n": 1}]}, FILE))
