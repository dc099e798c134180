"""isoscope.sampling: the seeded sample every big-corpus view draws."""

from __future__ import annotations

import numpy as np
import pytest

from isoscope.errors import InputError
from isoscope.sampling import sample_indices


def test_sample_indices():
    a = sample_indices(10_000, 500, seed=7)
    assert a.shape == (500,) and a.dtype == np.int64
    assert (np.diff(a) > 0).all() and a.min() >= 0 and a.max() < 10_000
    np.testing.assert_array_equal(a, sample_indices(10_000, 500, seed=7))
    assert not np.array_equal(a, sample_indices(10_000, 500, seed=8))
    np.testing.assert_array_equal(sample_indices(40, 500), np.arange(40))
    np.testing.assert_array_equal(sample_indices(40, None), np.arange(40))
    with pytest.raises(InputError, match="at least 1"):
        sample_indices(40, 0)
