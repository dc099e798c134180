"""Every calibrator the grammar accepts survives save -> a new process -> load -> the same vectors.

Each folder is loaded by a process of its own that has imported nothing but ``isoscope.calibrate.load_calibrator``:
a class that only loads when its module happens to be imported already (``Centering`` once was) fails here.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np

from isoscope.calibrate import Flow, calibration_methods, make_calibrator, method_names, parse_method
from isoscope.calibrate.methods import fill_placeholder, placeholder
from isoscope.calibrate.registry import lookup
from tests.core.calibrate.synthetic import distorted_gaussian


def _ours(method: str) -> bool:
    """A method of Isoscope's own (a test's plugin, such as ``shrink``, registers itself in this process when its
    module is collected; the grammar covers it, this file does not)."""
    steps = (step.split(":")[0] for step in method.split("+"))
    return all(lookup("calibrator", step).__module__.startswith("isoscope.") for step in steps)


# every choice of the grammar, its number filled in, and chains of the steps that take none
METHODS = (
    *(fill_placeholder(c, 3) if placeholder(c) else c for c in calibration_methods() if _ours(c)),
    "centre+whitening:4",
    "sn+centre",
    "flow+abtt:1",
)

LOAD = """
import sys
import numpy as np
from isoscope.calibrate import load_calibrator
np.save(sys.argv[2] + ".npy", load_calibrator(sys.argv[2]).transform(np.load(sys.argv[1])))
"""


def test_the_methods_cover_the_grammar():
    assert {step.name for m in METHODS for step in parse_method(m).steps} == {
        name for name in method_names() if _ours(name)
    }


def test_every_method_round_trips_through_a_new_process(tmp_path):
    x = distorted_gaussian(400, seed=3).astype(np.float32)  # (400, D)
    np.save(tmp_path / "x.npy", x)
    flow = Flow(epochs=1, hidden=16, n_steps=1, batch_size=128)
    expected, folders = {}, []
    for i, method in enumerate(METHODS):
        cal = make_calibrator(method, flow=flow).fit(x)
        folder = tmp_path / f"cal{i}"
        cal.save(folder)
        expected[str(folder)] = cal.transform(x)
        folders.append(str(folder))
    loads = [
        subprocess.Popen(
            [sys.executable, "-c", LOAD, str(tmp_path / "x.npy"), folder], stderr=subprocess.PIPE, text=True
        )
        for folder in folders
    ]
    for method, load in zip(METHODS, loads, strict=True):
        _, err = load.communicate(timeout=300)
        assert load.returncode == 0, f"{method}: {err[-2000:]}"
    for method, folder in zip(METHODS, folders, strict=True):
        got = np.load(folder + ".npy")
        # the same float32 arithmetic on the same arrays: equal up to the last bit of BLAS's summation order
        scale = np.abs(expected[folder]).max()
        np.testing.assert_allclose(got, expected[folder], rtol=0, atol=1e-5 * scale, err_msg=method)
