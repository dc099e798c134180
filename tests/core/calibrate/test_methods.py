"""isoscope.calibrate.methods: the one grammar of method strings, built from the registered classes (issue 52:
a calibrator is one class), and the method strings in words (issue 26: "sn+abtt:3" was unexplained)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from isoscope.calibrate import make_calibrator
from isoscope.calibrate.methods import (
    MethodSpec,
    MethodStep,
    calibration_methods,
    describe_method,
    fill_placeholder,
    method_names,
    open_param,
    parse_method,
    placeholder,
)
from isoscope.errors import InputError

CHOICES = ", ".join(("none", "centre", "flow", "whitening", "whitening:K", "sn", "abtt:D", "sn+abtt:D"))


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
        ("none", [("none", ())], "none"),
        ("flow", [("flow", ())], "flow"),
        ("whitening", [("whitening", ())], "whitening"),
        ("whitening:64", [("whitening", (("n_components", 64),))], "whitening:64"),
        ("whitening:K=64", [("whitening", (("n_components", 64),))], "whitening:64"),  # the symbol names it too
        (
            "whitening:eps=1e-4,n_components=8",
            [("whitening", (("n_components", 8), ("eps", 1e-4)))],
            "whitening:8,eps=0.0001",
        ),
        ("sn", [("sn", ())], "sn"),
        ("center", [("centre", ())], "centre"),  # an alias
        ("abtt", [("abtt", ())], "abtt"),
        ("abtt:3", [("abtt", (("n_components", 3),))], "abtt:3"),
        (" SN+abtt:5 ", [("sn", ()), ("abtt", (("n_components", 5),))], "sn+abtt:5"),
        (
            "sn + whitening: 8 + flow",
            [("sn", ()), ("whitening", (("n_components", 8),)), ("flow", ())],
            "sn+whitening:8+flow",
        ),
    ],
)
def test_parse_method_gives_typed_steps_and_the_string_back(method, steps, canonical) -> None:
    spec = parse_method(method)
    firsts = {"whitening": "n_components", "abtt": "n_components"}
    assert spec == MethodSpec(tuple(MethodStep(name, args, firsts.get(name, "")) for name, args in steps))
    assert str(spec) == canonical and parse_method(canonical) == spec
    assert make_calibrator(spec).method == canonical  # the class writes the string the grammar reads
    assert parse_method(spec) is spec
    assert spec.trains_for_epochs == ("flow" in canonical)


def test_the_choices_are_made_of_the_registered_names() -> None:
    """Every registered name is offered, and every offered choice is made of names (no placeholders left)."""
    assert calibration_methods()[:8] == tuple(CHOICES.split(", "))
    assert {str(parse_method(name)) for name in method_names()} == set(method_names())
    named = {step.name for c in calibration_methods() for step in parse_method(fill_placeholder(c, 2)).steps}
    assert named == set(method_names())


@pytest.mark.parametrize(
    ("method", "message"),
    [
        ("foo", "unknown calibration method 'foo'; valid choices: {choices}"),
        ("", "unknown calibration method ''; valid choices: {choices}"),
        ("sn+", "unknown calibration method 'sn+'; valid choices: {choices}"),
        (" FLOW:3", "'FLOW:3': flow takes no values"),
        ("whitening:x", "'whitening:x': K (components kept) must be a whole number, like whitening:3"),
        ("sn+abtt:0", "'sn+abtt:0': D (top directions removed) must be >= 1"),
        ("whitening:K", "'whitening:K': K (components kept) must be a whole number, like whitening:3"),
        ("whitening:eps=2", "'whitening:eps=2': eps (relative eigenvalue floor) must be <= 1"),
        ("whitening:eps=nan", "'whitening:eps=nan': eps (relative eigenvalue floor) must be a finite number"),
        ("whitening:3,4,5", "'whitening:3,4,5': whitening takes 2 value(s) in order, then name=value"),
        ("abtt:d=3,d=4", "'abtt:d=3,d=4': n_components is given twice"),
        ("abtt:depth=3", "'abtt:depth=3': abtt has no parameter 'depth' (it takes: n_components)"),
    ],
)
def test_parse_method_refuses_in_one_line(method, message) -> None:
    with pytest.raises(InputError) as exc:
        parse_method(method)
    # every registered calibrator is a valid choice (a test's own calibrator too, when its module is imported)
    assert str(exc.value) == message.format(choices=", ".join(calibration_methods()))
    assert ", ".join(calibration_methods()).startswith(CHOICES)


def test_generic_choices_and_their_placeholders() -> None:
    CALIBRATION_METHODS = calibration_methods()
    assert [placeholder(c) for c in CALIBRATION_METHODS[:8]] == [None, None, None, None, "K", None, "D", "D"]
    assert open_param("sn+abtt:D").label == "D (top directions removed)"
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
    """The CLI's --help imports it (methods_help): no numpy, torch or scikit-learn until a method is parsed, which
    needs the classes."""
    code = (
        "import sys, isoscope.calibrate.methods as m; m.methods_help()\n"
        "heavy = [n for n in ('numpy', 'torch', 'sklearn', 'scipy') if n in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
