"""The calibration method strings in words (issue 26: "sn+abtt:3" was unexplained)."""

from __future__ import annotations

from isoscope.calibrate.methods import describe_method


def test_a_method_string_in_words() -> None:
    assert describe_method("sn+abtt:3") == (
        "sn+abtt:3: standard normalization per dimension, then all-but-the-top: remove the mean and the top 3 "
        "principal directions"
    )
    assert describe_method("whitening:64") == "whitening:64: whitening that keeps the top 64 principal components"
    assert describe_method("flow").startswith("flow: BERT-flow")
