"""isoscope.landscape.schema: strict fields that name the file and the field when they are missing or mistyped."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from isoscope.landscape.schema import Fields, ResultsSchemaError, arrays
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
