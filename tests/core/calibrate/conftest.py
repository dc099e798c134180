"""Fixtures of the calibrator tests: one synthetic cloud and one small fitted flow per module."""

from __future__ import annotations

import numpy as np
import pytest

from isoscope.calibrate import Flow
from tests.core.calibrate.synthetic import distorted_gaussian


@pytest.fixture(scope="module")
def synth() -> np.ndarray:
    return distorted_gaussian(1500, seed=7)


@pytest.fixture(scope="module")
def small_flow(synth) -> Flow:
    return Flow(epochs=3, hidden=32, n_steps=2, batch_size=256, lr=1e-3, linear="lu").fit(synth)
