"""Caches and saved state that must prove what they hold (issue 28): embedding-cache entries swapped between
keys, entries that are FIFOs or links to devices or far larger than their shape, saved calibrators loaded in a
fresh process or with parameters that would allocate without bound, landscape results read back.

A file read back that is damaged, special or of another key is dropped (and recomputed) or refused with one
line; it is never served, never hangs the reader and never costs more memory than what it should hold.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from isoscope.cache import ArrayCache
from tests.hostile.conftest import assert_one_line
from tests.hostile.peak import ROOT, GiB, child_peak

DEMO_PAIRS = str(ROOT / "assets" / "demo_pairs.csv")


# ---------------------------------------------------------------- the embedding cache


def _spearman(cli, pooling: str) -> float:
    r = cli("sts", "--pairs", DEMO_PAIRS, "--pooling", pooling, "--json")
    assert r.code == 0, r.err
    return json.loads(r.out.strip().splitlines()[-1])["spearman"]


def _new_entries(root: Path, before: set[Path]) -> list[Path]:
    return sorted(set(root.glob("*.npy")) - before)


def test_two_swapped_valid_entries_are_recomputed_not_served(cli, tmp_cache: ArrayCache) -> None:
    """Issue 28: the mean and cls entries of the same texts swapped on disk: `--pooling mean` returned cls's
    score without a word (the SHA-256 trailer proved the bytes, not which key they belong to). Each entry now
    names its key in the trailer: a swapped entry is dropped and recomputed."""
    root = tmp_cache.root
    mean = _spearman(cli, "mean")
    mean_files = _new_entries(root, set())
    cls = _spearman(cli, "cls")
    cls_files = _new_entries(root, set(mean_files))
    assert mean != cls and mean_files and len(mean_files) == len(cls_files)
    for a, b in zip(mean_files, cls_files, strict=True):  # swap the two spaces' files
        tmp = a.with_suffix(".swap")
        a.rename(tmp)
        b.rename(a)
        tmp.rename(b)
    assert _spearman(cli, "mean") == mean  # recomputed, not cls's vectors
    assert _spearman(cli, "cls") == cls


def test_an_entry_under_another_key_is_dropped(tmp_cache: ArrayCache) -> None:
    a, b = np.ones((4, 3), np.float32), np.zeros((4, 3), np.float32)
    tmp_cache.put("a", a)
    tmp_cache.put("b", b)
    shutil.copy(tmp_cache.path("b"), tmp_cache.path("a"))
    assert tmp_cache.get("a", expected_rows=4, expected_cols=3) is None
    assert not tmp_cache.path("a").exists()
    np.testing.assert_array_equal(tmp_cache.get("b", expected_rows=4, expected_cols=3), b)


@pytest.mark.timeout(60, method="signal")
def test_an_entry_that_is_a_fifo_is_dropped_at_once(tmp_cache: ArrayCache) -> None:
    """Issue 28: a FIFO under an entry's name hung the reader."""
    tmp_cache.root.mkdir(parents=True)
    os.mkfifo(tmp_cache.path("k"))
    assert tmp_cache.get("k", expected_rows=4, expected_cols=3) is None
    assert not tmp_cache.path("k").exists()
    tmp_cache.put("k", np.ones((4, 3), np.float32))  # and the work goes on
    assert tmp_cache.get("k", expected_rows=4, expected_cols=3) is not None


def test_an_entry_linked_to_dev_zero_costs_no_memory(tmp_path: Path) -> None:
    """Issue 28: a symlink to /dev/zero was read until a MemoryError at 3.85 GB."""
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero")
    root = tmp_path / "emb"
    root.mkdir()
    (root / "k.npy").symlink_to("/dev/zero")
    stmt = (
        "from isoscope.cache import ArrayCache\n"
        f"c = ArrayCache({str(root)!r})\n"
        "assert c.get('k', expected_rows=4, expected_cols=3) is None\n"
        "assert c.get('k') is None\n"
    )
    code, err, peak = child_peak([stmt], tmp_path, limit=2 * GiB)
    assert code == 0, err[-2000:]
    assert peak < GiB // 2, f"peak {peak / 2**20:.0f} MiB"
    assert not (root / "k.npy").exists()  # the link is removed, /dev/zero is not touched


def test_an_entry_larger_than_its_shape_is_not_read(tmp_path: Path) -> None:
    """A valid header for the expected (4, 3) entry, followed by 8 GB (a sparse file): the size is checked
    against the shape before anything is read."""
    cache = ArrayCache(tmp_path / "emb")
    cache.put("k", np.ones((4, 3), np.float32))
    with open(cache.path("k"), "r+b") as f:
        f.truncate(8 * GiB)
    stmt = (
        "from isoscope.cache import ArrayCache\n"
        f"c = ArrayCache({str(cache.root)!r})\n"
        "assert c.get('k', expected_rows=4, expected_cols=3) is None\n"
    )
    code, err, peak = child_peak([stmt], tmp_path, limit=2 * GiB)
    assert code == 0, err[-2000:]
    assert peak < GiB // 2, f"peak {peak / 2**20:.0f} MiB"


def test_an_entry_whose_header_claims_another_shape_is_not_read(tmp_cache: ArrayCache) -> None:
    tmp_cache.put("k", np.ones((5, 3), np.float32))
    assert tmp_cache.get("k", expected_rows=4, expected_cols=3) is None
    assert not tmp_cache.path("k").exists()


# ---------------------------------------------------------------- saved calibrators

METHODS = ("whitening", "sn+abtt:2", "flow")


@pytest.fixture(scope="module")
def saved_calibrators(tmp_path_factory) -> dict[str, Path]:
    from isoscope.calibrate import Flow, make_calibrator

    rng = np.random.default_rng(0)
    x = (rng.standard_normal((300, 8)) @ rng.standard_normal((8, 8)) + 2.0).astype(np.float32)
    root = tmp_path_factory.mktemp("calibrators")
    out = {}
    for method in METHODS:
        cal = make_calibrator(method, flow=Flow(epochs=1, hidden=16, n_steps=2))
        out[method] = cal.fit(x).save(root / method.replace(":", "_").replace("+", "_"))
        np.save(out[method] / "x.npy", x)
        np.save(out[method] / "z.npy", cal.transform(x))
    return out


def test_a_saved_calibrator_loads_in_a_fresh_process(saved_calibrators, tmp_path: Path) -> None:
    """Issue 28: `load_calibrator(folder)` failed in a fresh process ("unknown calibrator class 'Whitening';
    known: "): the registry was filled only by importing the modules that define the classes. One fresh process
    loads every method's folder (each load is the first of its class there)."""
    folders = [str(saved_calibrators[method]) for method in METHODS]
    stmt = (
        "import numpy as np\n"
        "from isoscope.calibrate import load_calibrator\n"
        f"for folder in {folders!r}:\n"
        "    cal = load_calibrator(folder)\n"
        "    x, z = np.load(folder + '/x.npy'), np.load(folder + '/z.npy')\n"
        "    np.testing.assert_array_equal(cal.transform(x), z, err_msg=folder)\n"
    )
    code, err, _ = child_peak([stmt], tmp_path)
    assert code == 0, err[-2000:]


OUT_OF_BOUNDS = (  # (field, value, words of the one-line refusal)
    ("n_steps", 10**7, "between 1 and 256"),
    ("n_levels", 10**6, "between 1 and 16"),
    ("hidden", 10**9, "between 1 and 65,536"),
    ("n_steps", "4", "whole number"),
    ("lr", float("inf"), "finite"),
)


def test_a_calibrator_json_out_of_bounds_is_refused_before_allocating(saved_calibrators, tmp_path: Path) -> None:
    """Issue 28: `n_steps: 10**7` in calibrator.json grew memory without bound (the network was built to learn
    the shapes it should have). The parameters are checked against bounds first, and the shapes follow from
    them without building anything. Each case is its own folder, all refused in one fresh process whose peak
    memory stays under 1 GiB (one case that allocated would pass it)."""
    cases = []
    for i, (field, value, fragment) in enumerate(OUT_OF_BOUNDS):
        folder = tmp_path / f"flow-{i}"
        shutil.copytree(saved_calibrators["flow"], folder)
        doc = json.loads((folder / "calibrator.json").read_text())
        doc["params"][field] = value
        (folder / "calibrator.json").write_text(json.dumps(doc))  # inf is written as Infinity, which json reads
        cases.append((str(folder), fragment))
    stmt = (
        "import isoscope.calibrate.flow  # the class is known: what is tested is the bound\n"
        "from isoscope.calibrate import load_calibrator\n"
        "from isoscope.errors import InputError\n"
        f"for folder, fragment in {cases!r}:\n"
        "    try:\n"
        "        load_calibrator(folder)\n"
        "    except InputError as exc:\n"
        "        assert fragment in str(exc), (folder, str(exc))\n"
        "    else:\n"
        "        raise SystemExit(f'loaded {folder}')\n"
    )
    code, err, peak = child_peak([stmt], tmp_path, limit=4 * GiB, timeout=300)
    assert code == 0, err[-2000:]
    assert peak < GiB, f"peak {peak / 2**20:.0f} MiB"


def test_the_flow_shapes_follow_from_the_config_without_building() -> None:
    """The shapes a saved flow must have, computed from its parameters, are exactly its network's."""
    from isoscope.calibrate.flow import Flow, _FlowNet

    for d, cfg in [
        (8, Flow()),
        (9, Flow(n_levels=3, n_steps=2, hidden=5, coupling="affine")),
        (7, Flow(linear="lu", n_levels=2, n_steps=1, hidden=3)),
        (2, Flow(n_levels=2, n_steps=1, hidden=2, linear="lu", coupling="affine")),
    ]:
        real = {k: tuple(v.shape) for k, v in _FlowNet(d, cfg).state_dict().items()}
        assert _FlowNet.shapes(d, cfg) == real


def test_the_refusal_is_one_line(saved_calibrators, tmp_path: Path) -> None:
    from isoscope.calibrate import load_calibrator
    from isoscope.errors import InputError

    folder = tmp_path / "flow"
    shutil.copytree(saved_calibrators["flow"], folder)
    doc = json.loads((folder / "calibrator.json").read_text())
    doc["params"]["n_steps"] = 10**7
    (folder / "calibrator.json").write_text(json.dumps(doc))
    with pytest.raises(InputError, match="n_steps must be between 1 and 256") as err:
        load_calibrator(folder)
    assert_one_line(str(err.value))


# ---------------------------------------------------------------- landscape results read back


def _npz_with_lying_member(path: Path) -> None:
    """An npz whose array header claims 10**12 rows for a few bytes of data."""
    import zipfile

    header = np.lib.format.header_data_from_array_1_0(np.zeros((1, 4), np.float32))
    header["shape"] = (10**12, 4)
    import io

    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, header)
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("alpha.npy", buf.getvalue() + b"\x00" * 16)


@pytest.mark.timeout(60, method="signal")
def test_landscape_files_read_back_are_checked(tmp_path: Path) -> None:
    """Results that are FIFOs, too large, or npz members whose header lies are treated as absent (and the run
    recomputes them), never hung on or allocated."""
    from isoscope.landscape.store import read_arrays, read_json, read_tensors

    os.mkfifo(tmp_path / "results.json")
    assert read_json(tmp_path / "results.json") is None
    os.mkfifo(tmp_path / "grid.npz")
    assert read_arrays(tmp_path / "grid.npz") is None
    os.mkfifo(tmp_path / "ckpt.safetensors")
    (tmp_path / "ckpt.json").write_text("{}")
    assert read_tensors(tmp_path / "ckpt.safetensors") is None
    _npz_with_lying_member(tmp_path / "lie.npz")
    assert read_arrays(tmp_path / "lie.npz") is None
    compressed = tmp_path / "deflated.npz"
    np.savez_compressed(compressed, alpha=np.zeros(10**6))  # a zip bomb would be deflated too
    assert read_arrays(compressed) is None
    good = tmp_path / "good.npz"
    np.savez(good, alpha=np.arange(3.0), key=np.asarray("abc"))
    got = read_arrays(good)
    assert got is not None and got["alpha"].tolist() == [0.0, 1.0, 2.0] and str(got["key"]) == "abc"


@pytest.mark.timeout(60, method="signal")
def test_a_results_folder_with_a_fifo_summary_is_refused_in_one_line(tmp_path: Path) -> None:
    from isoscope.errors import InputError
    from isoscope.landscape.results import load_results

    os.mkfifo(tmp_path / "summary.json")
    with pytest.raises(InputError, match="no landscape results") as err:
        load_results(tmp_path)
    assert_one_line(str(err.value))


def test_a_grid_whose_arrays_do_not_fit_its_axes_is_refused(tmp_path: Path) -> None:
    from isoscope.landscape.results import GRID_METRICS, Grid
    from isoscope.landscape.schema import ResultsSchemaError
    from isoscope.landscape.store import write_arrays

    alpha, beta = np.linspace(-1, 1, 3), np.linspace(-1, 1, 4)
    good = {"alpha": alpha, "beta": beta, **{m: np.zeros((3, 4)) for m in GRID_METRICS}}
    write_arrays(tmp_path / "good.npz", good)
    assert Grid.read(tmp_path / "good.npz", two_d=True).values[GRID_METRICS[0]].shape == (3, 4)
    write_arrays(tmp_path / "bad.npz", {**good, GRID_METRICS[0]: np.zeros((4, 3))})
    with pytest.raises(ResultsSchemaError, match="does not fit the grid's axes"):
        Grid.read(tmp_path / "bad.npz", two_d=True)
