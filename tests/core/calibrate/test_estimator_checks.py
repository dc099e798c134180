"""scikit-learn's own estimator checks over every calibrator (issue 36: the estimator contract, whole).

What the checks found and the calibrators now do: complex input was cast to real with only a warning (now
refused), sparse input was refused without saying why (now named), a chain fitted the steps it was given (its
parameters: now clones, in ``steps_``), ``abtt`` refused one-dimensional vectors by default, and the
output dtype is declared (``preserves_dtype``: float32, whatever the input). The checks expected to fail
below differ only in the words of an error that is raised (Isoscope's one-line ``InputError``, a
``ValueError``), each with its reason; ``xfail_strict`` makes a check that starts to pass fail here, so the list
cannot go stale.
"""

from __future__ import annotations

import pytest

pytest.importorskip("sklearn", minversion="1.8")  # expected_failed_checks (1.6) and xfail_strict (1.8)

from sklearn.utils.estimator_checks import parametrize_with_checks

from isoscope.calibrate import (
    AllButTheTop,
    Calibrator,
    Chain,
    Flow,
    Identity,
    StandardNormalization,
    Whitening,
)
from isoscope.calibrate.registry import classes

# a flow small and short enough for the checks' many fits of tiny arrays
SMALL_FLOW = {"epochs": 1, "hidden": 4, "n_steps": 1, "batch_size": 16}
# every calibrator Isoscope registers, with its defaults (a new class is checked without an edit here), and the
# variants whose code paths differ
CALIBRATORS = [
    Flow(**SMALL_FLOW) if cls is Flow else cls()
    for cls in classes("calibrator")
    if cls.__module__.startswith("isoscope.")
] + [Whitening(n_components=1), Chain([StandardNormalization(), AllButTheTop()])]

WORDING = "raises InputError (a ValueError) in Isoscope's words"
EXPECTED_FAILURES = {
    "check_n_features_in_after_fitting": f"{WORDING}: 'X has 1 columns; this Whitening was fitted on 4', not "
    "'X has 1 features, but Whitening is expecting 4 features as input'",
    "check_estimators_empty_data_messages": f"{WORDING}: 'X must have shape (n, d); got (12, 0)', not "
    "'0 feature(s) (shape=(12, 0)) while a minimum of 1 is required'",
    "check_fit2d_predict1d": f"{WORDING}: 'X must have shape (n, d); got (3,)', not 'Reshape your data'",
    "check_dtype_object": "a non-numeric entry is the user's mistake: InputError 'X must be a numeric array of "
    "shape (n, d)' (a ValueError), not numpy's TypeError",
}
ONE_ROW = {  # every calibrator but Identity estimates a mean or a covariance: it needs two rows
    "check_fit2d_1sample": f"{WORDING}: 'X needs at least 2 rows to fit; got 1', not '1 sample'",
}


ONE_COLUMN = {  # the check sets n_components=1, which for abtt means "remove 1 direction", not "keep 1"
    "check_fit2d_1feature": f"{WORDING}: abtt:1 would remove the only direction of a 1-column X: 'abtt:D needs D "
    "between 0 and 0 (below the dimension of the vectors); got 1', not '1 feature(s)'",
}


def expected_failures(estimator: Calibrator) -> dict[str, str]:
    out = {**EXPECTED_FAILURES, **({} if isinstance(estimator, Identity) else ONE_ROW)}
    return {**out, **(ONE_COLUMN if isinstance(estimator, AllButTheTop) else {})}


@parametrize_with_checks(CALIBRATORS, expected_failed_checks=expected_failures, xfail_strict=True)
def test_scikit_learn_estimator_checks(estimator, check):
    check(estimator)
