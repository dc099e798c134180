"""A calibrator of your own is one class (issue 52): defined in its own module, it is parsed, offered, fitted,
saved, loaded in a new process and exported like Isoscope's own, in-process and as an installed plugin (an
``isoscope.plugins`` entry point, the way pip installs a package's)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from isoscope.calibrate import Calibrator, calibration_methods, load_calibrator, make_calibrator, parse_method
from isoscope.calibrate.methods import explain_method
from isoscope.errors import InputError
from isoscope.export.affine import affine_map
from tests.core.calibrate.shrink_calibrator import Shrink
from tests.core.calibrate.synthetic import distorted_gaussian

ROOT = Path(__file__).resolve().parents[3]


def test_a_class_of_your_own_is_a_method_of_the_grammar(tmp_path):
    x = distorted_gaussian(300, seed=1).astype(np.float32)  # (300, D)
    assert "shrink" in calibration_methods()  # offered by every selector
    assert explain_method("shrink:0.25") == "remove a share of the mean vector (share of the mean removed 0.25)"
    cal = make_calibrator("SHRINK:A=0.25")  # the symbol names the parameter too
    assert isinstance(cal, Shrink) and cal.alpha == 0.25 and cal.method == "shrink:0.25"
    chain = make_calibrator("shrink:0.5+whitening:4").fit(x)  # and it chains with Isoscope's
    np.testing.assert_allclose(affine_map(chain).apply(x), chain.transform(x), atol=1e-4)
    with pytest.raises(InputError, match=r"share of the mean removed\) must be <= 1"):
        parse_method("shrink:2")


def test_a_name_taken_by_another_class_is_refused():
    with pytest.raises(InputError, match=r"name .whitening. is taken by isoscope\.calibrate\.linear\.Whitening"):

        class Whitening2(Calibrator):
            name = "whitening"


def _plugin(tmp_path: Path) -> dict[str, str]:
    """An installed plugin: a dist-info whose entry point names the test's module, on PYTHONPATH."""
    info = tmp_path / "site" / "isoscope_shrink-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: isoscope-shrink\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[isoscope.plugins]\nshrink = tests.core.calibrate.shrink_calibrator\n")
    path = os.pathsep.join([str(info.parent), str(ROOT), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path}


def _run(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    done = subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def test_an_installed_plugin_is_fitted_saved_loaded_and_exported_by_the_command_line(tmp_path):
    x = distorted_gaussian(300, seed=2).astype(np.float32)  # (300, D)
    np.save(tmp_path / "x.npy", x)
    env, isoscope = _plugin(tmp_path), [sys.executable, "-m", "isoscope"]
    listed = _run([*isoscope, "calibrate", "--methods"], env, tmp_path).stdout
    assert "shrink" in listed and "alpha (A, a number in [0, 1]): share of the mean removed" in listed
    made = _run(
        [*isoscope, "calibrate", "--vectors", "x.npy", "--method", "shrink:0.25", "--out", "cal", "--json"],
        env,
        tmp_path,
    )
    assert json.loads(made.stdout.splitlines()[-1])["method"] == "shrink:0.25"
    # a new process finds the class through the entry point, never through a name in the file
    load = "import sys, numpy as np; from isoscope.calibrate import load_calibrator as l; np.save('y.npy', l('cal').transform(np.load('x.npy')))"
    _run([sys.executable, "-c", load], env, tmp_path)
    expected = x - 0.25 * x.astype(np.float64).mean(axis=0)
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), expected, atol=1e-5)
    _run(
        [*isoscope, "export", "--vectors", "x.npy", "--calibrate", "shrink:0.25", "--faiss", "--out", "idx.faiss"],
        env,
        tmp_path,
    )
    import faiss

    index = faiss.read_index(str(tmp_path / "idx.faiss"))
    transform = faiss.downcast_VectorTransform(faiss.downcast_index(index).chain.at(0))
    np.testing.assert_allclose(transform.apply(x), expected, atol=1e-4)  # the pre-transform is the fitted map


def test_without_the_plugin_a_saved_folder_says_what_is_missing(tmp_path):
    Shrink(0.5).fit(distorted_gaussian(50, seed=3)).save(tmp_path / "cal")
    code = "from isoscope.calibrate import load_calibrator; load_calibrator('cal')"
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0
    assert "unknown calibrator class 'Shrink'" in done.stderr and "isoscope.plugins entry point" in done.stderr
    assert load_calibrator(tmp_path / "cal").alpha == 0.5  # here the class is imported: it loads
