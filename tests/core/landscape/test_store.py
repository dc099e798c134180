"""isoscope.landscape.store: arrays, JSON and tensors written atomically and read back without pickle."""

from __future__ import annotations

import numpy as np


def test_array_store_keeps_cache_keys_scalar(tmp_path) -> None:
    """A 0-d key must read back as itself, or every cached curve/surface is silently recomputed."""
    from isoscope.landscape.store import read_arrays, write_arrays

    write_arrays(tmp_path / "a.npz", {"key": np.array("abc123"), "loss": np.ones((2, 3))})
    back = read_arrays(tmp_path / "a.npz")
    assert back["key"].shape == () and str(back["key"]) == "abc123"
    assert back["loss"].shape == (2, 3)


def test_json_tensors_and_rows_round_trip_and_bad_files_read_as_absent(tmp_path) -> None:
    import torch

    from isoscope.landscape.store import RowStore, read_json, read_tensor_names, read_tensors, write_json, write_tensors

    write_json(tmp_path / "a.json", {"x": float("nan"), "y": np.float32(1.5), "z": np.arange(2)})
    assert read_json(tmp_path / "a.json") == {"x": None, "y": 1.5, "z": [0, 1]}
    (tmp_path / "bad.json").write_text("{not json")
    (tmp_path / "list.json").write_text("[1, 2]")
    assert read_json(tmp_path / "bad.json") is None and read_json(tmp_path / "list.json") is None
    assert read_json(tmp_path / "none.json") is None
    path = tmp_path / "t.safetensors"
    write_tensors(path, {"theta": torch.arange(4.0)}, {"epoch": 1})
    tensors, meta = read_tensors(path)
    assert torch.equal(tensors["theta"], torch.arange(4.0)) and meta == {"epoch": 1}
    assert read_tensor_names(path) == ({"theta"}, {"epoch": 1})
    path.with_suffix(".json").unlink()  # the sidecar marks completion: without it the file does not count
    assert read_tensors(path) is None and read_tensor_names(path) is None
    rows = RowStore(tmp_path, "k" * 40)
    rows.put(3, {"v": np.ones(2)})
    np.testing.assert_array_equal(rows.get(3)["v"], np.ones(2))
    assert rows.get(2) is None and RowStore(tmp_path, "k" * 40, enabled=False).get(3) is None
    rows.clear()
    assert rows.get(3) is None and not rows.dir.exists()
    (tmp_path / "junk.npz").write_bytes(b"not an npz")
    from isoscope.landscape.store import read_arrays

    assert read_arrays(tmp_path / "junk.npz") is None
