"""isoscope.calibrate.methods: the one grammar of method strings, and the method strings in words (issue 26:
"sn+abtt:3" was unexplained)."""

from __future__ import annotations

import subprocess
import sys
from typing import get_args

import pytest

from isoscope.calibrate.methods import (
    CALIBRATION_METHODS,
    METHOD_NAMES,
    CalibrationMethod,
    MethodSpec,
    MethodStep,
    describe_method,
    fill_placeholder,
    methods_help,
    parse_method,
    placeholder,
)
from isoscope.errors import InputError


def test_a_method_string_in_words() -> None:
    assert describe_method("sn+abtt:3") == (
        "sn+abtt:3: standard normalization per dimension, then all-but-the-top: remove the mean and the top 3 "
        "principal directions"
    )
    assert describe_method("whitening:64") == "whitening:64: whitening that keeps the top 64 principal components"
    assert describe_method("flow").startswith("flow: BERT-flow")


@pytest.mark.parametrize(
    ("method", "steps", "canonical"),
    [
        ("none", [("none", None)], "none"),
        ("flow", [("flow", None)], "flow"),
        ("whitening", [("whitening", None)], "whitening"),
        ("whitening:64", [("whitening", 64)], "whitening:64"),
        ("sn", [("sn", None)], "sn"),
        ("abtt", [("abtt", None)], "abtt"),
        ("abtt:3", [("abtt", 3)], "abtt:3"),
        (" SN+abtt:5 ", [("sn", None), ("abtt", 5)], "sn+abtt:5"),
        ("sn + whitening: 8 + flow", [("sn", None), ("whitening", 8), ("flow", None)], "sn+whitening:8+flow"),
    ],
)
def test_parse_method_gives_typed_steps_and_the_string_back(method, steps, canonical) -> None:
    spec = parse_method(method)
    assert spec == MethodSpec(tuple(MethodStep(name, arg) for name, arg in steps))
    assert str(spec) == canonical and parse_method(canonical) == spec
    assert parse_method(spec) is spec
    assert spec.trains_flow == ("flow" in canonical)


def test_the_literal_names_the_real_methods() -> None:
    """``CalibrationMethod`` lists the step names the parser accepts, and only those (no placeholders)."""
    assert METHOD_NAMES == get_args(CalibrationMethod)
    assert {str(parse_method(name)) for name in METHOD_NAMES} == set(METHOD_NAMES)
    named = {step.name for choice in CALIBRATION_METHODS for step in parse_method(fill_placeholder(choice, 2)).steps}
    assert named == set(METHOD_NAMES)  # every name is offered, and every offered choice is made of names


@pytest.mark.parametrize(
    ("method", "message"),
    [
        ("foo", f"unknown calibration method 'foo'; valid choices: {methods_help()}"),
        ("", f"unknown calibration method ''; valid choices: {methods_help()}"),
        ("sn+", f"unknown calibration method 'sn+'; valid choices: {methods_help()}"),
        (" FLOW:3", f"unknown calibration method 'flow:3'; valid choices: {methods_help()}"),
        ("whitening:x", "'whitening:x': K (dimensions kept) must be a whole number, like whitening:256 or abtt:3"),
        ("sn+abtt:0", "'sn+abtt:0': D (directions removed) must be >= 1"),
        ("whitening:K", "'whitening:k': K (dimensions kept) must be a whole number, like whitening:256 or abtt:3"),
    ],
)
def test_parse_method_refuses_in_one_line(method, message) -> None:
    with pytest.raises(InputError) as exc:
        parse_method(method)
    assert str(exc.value) == message


def test_generic_choices_and_their_placeholders() -> None:
    assert [placeholder(c) for c in CALIBRATION_METHODS] == [None, None, None, None, "K", None, "D", "D"]
    assert fill_placeholder("whitening:K", 64) == "whitening:64"
    assert fill_placeholder("sn+abtt:D", 3) == "sn+abtt:3"
    assert fill_placeholder("flow", 3) == "flow"
    with pytest.raises(InputError, match="must be >= 1"):
        fill_placeholder("abtt:D", 0)
    assert parse_method("whitening:12").generic == "whitening:K"
    assert parse_method("sn+abtt:3").generic == "sn+abtt:D"
    assert parse_method("abtt").generic == "abtt"  # no number given: not the abtt:D choice
    assert {parse_method(fill_placeholder(c, 5)).generic for c in CALIBRATION_METHODS} == set(CALIBRATION_METHODS)


def test_the_grammar_is_light_to_import() -> None:
    """The CLI's --help and the dashboard's selectors import it: no numpy, torch or scikit-learn."""
    code = (
        "import sys, isoscope.calibrate.methods as m; m.parse_method('sn+abtt:3')\n"
        "heavy = [n for n in ('numpy', 'torch', 'sklearn', 'scipy') if n in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
