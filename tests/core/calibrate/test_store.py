"""isoscope.calibrate.store: fitted calibrators kept on disk under their key, read back checked, dropped when
damaged, and a disk that cannot be written costs a refit, never an error."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest

from isoscope.cache import make_key
from isoscope.calibrate import Flow, make_calibrator
from isoscope.calibrate.base import JSON_NAME, TENSORS_NAME
from isoscope.calibrate.store import CalibratorKey, is_stored, keep, load_stored
from tests.core.calibrate.synthetic import distorted_gaussian


@pytest.fixture(scope="module")
def x() -> np.ndarray:
    return distorted_gaussian(400, seed=3).astype(np.float32)  # (400, 8)


def test_a_kept_calibrator_comes_back_under_its_key_and_maps_the_same(x, tmp_path):
    key = CalibratorKey("sn+abtt:2", "", "fit-vectors-1")
    assert not is_stored(key, tmp_path) and load_stored(key, tmp_path) is None
    fitted = make_calibrator(key.method).fit(x)
    keep(fitted, key, tmp_path)
    # the folder the dashboard has always used: calibrators/<make_key(method, flow_json, fit_key)>
    assert key.folder(tmp_path) == tmp_path / "calibrators" / make_key("sn+abtt:2", "", "fit-vectors-1")
    assert is_stored(key, tmp_path)
    back = load_stored(key, tmp_path)
    assert back is not None and back is not fitted
    np.testing.assert_array_equal(back.transform(x), fitted.transform(x))  # the same arrays, read back
    for other in (
        CalibratorKey("sn+abtt:2", "", "fit-vectors-2"),  # fitted on other vectors
        CalibratorKey("whitening", "", "fit-vectors-1"),  # another method
        CalibratorKey("sn+abtt:2", '{"epochs": 1}', "fit-vectors-1"),  # other flow settings
    ):
        assert not is_stored(other, tmp_path) and load_stored(other, tmp_path) is None, other


def test_a_damaged_folder_is_dropped_and_not_served(x, tmp_path, caplog):
    key = CalibratorKey("whitening", "", "fit")
    keep(make_calibrator("whitening").fit(x), key, tmp_path)
    tensors = key.folder(tmp_path) / TENSORS_NAME
    blob = bytearray(tensors.read_bytes())
    blob[-1] ^= 0xFF  # one flipped bit in the arrays: the checksum in calibrator.json no longer matches
    tensors.write_bytes(bytes(blob))
    with caplog.at_level(logging.WARNING, logger="isoscope.calibrate.store"):
        assert load_stored(key, tmp_path) is None
    assert "dropping the unreadable cached calibrator" in caplog.text
    assert not key.folder(tmp_path).exists() and not is_stored(key, tmp_path)


def test_a_disk_that_cannot_be_written_costs_a_refit_not_an_error(x, tmp_path, caplog):
    root = tmp_path / "a-file"
    root.write_text("not a folder")  # every folder under it fails to be created
    key = CalibratorKey("whitening", "", "fit")
    with caplog.at_level(logging.WARNING, logger="isoscope.calibrate.store"):
        keep(make_calibrator("whitening").fit(x), key, root)
    assert "could not keep the fitted calibrator" in caplog.text
    assert not is_stored(key, root) and load_stored(key, root) is None


def test_the_key_names_the_unfitted_calibrator_with_its_flow_settings(x, tmp_path):
    settings = Flow(epochs=2, hidden=16, n_steps=2, batch_size=128)
    key = CalibratorKey("flow", json.dumps(settings.get_params(), sort_keys=True), "fit")
    flow = key.calibrator()
    assert isinstance(flow, Flow)
    flow.fit(x)
    assert len(flow.history_) == 2  # the key's epochs, not the default schedule
    keep(flow, key, tmp_path)
    assert (key.folder(tmp_path) / JSON_NAME).is_file()
    np.testing.assert_array_equal(load_stored(key, tmp_path).transform(x), flow.transform(x))
    assert type(CalibratorKey("whitening:4", "", "fit").calibrator()).__name__ == "Whitening"
