"""isoscope.landscape.results: typed results that load new and older folders and fail loudly on a schema change."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from isoscope.errors import InputError
from isoscope.landscape.results import (
    CURVE,
    FILTER_CURVES,
    FILTER_SURFACE,
    RESULTS,
    SUMMARY,
    SURFACE,
    list_results,
    load_results,
    seed_dir,
)
from isoscope.landscape.schema import ResultsSchemaError
from isoscope.landscape.store import read_arrays, write_arrays


def _copy(tiny_run, tmp_path: Path) -> Path:
    out = tmp_path / "copy"
    shutil.copytree(tiny_run[0], out, ignore=shutil.ignore_patterns("checkpoints"))
    return out


def _edit(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def test_a_finished_run_reads_back_typed(tiny_run):
    out, summary, config, _ = tiny_run
    res = load_results(out)
    assert res.summary.seeds is not None and res.summary.seeds.seeds == (0, 1) and res.summary.directions == "both"
    assert res.summary.n_train == tuple(summary["n_train"]) and res.summary.epochs == 2
    for init in ("pretrained", "scratch"):
        r, raw = res.inits[init], summary[init]
        assert r.axes.cos_delta1_delta2 == raw["axes"]["cos_delta1_delta2"]
        assert r.theta1.heldout_acc == raw["theta1"]["heldout_acc"]
        assert r.flatness.hessian is not None and r.flatness.hessian.scale_invariant is False
        assert r.curve["train_loss"].shape == (len(config.alphas_1d),) and r.surface["train_loss"].shape == (5, 5)
        fn = r.filter_normalized
        assert fn is not None and fn.n_directions == 3 and fn.range == (-1.0, 1.0)
        assert fn.curves["train_loss"].shape == (3, 9)  # 5 points in [-1, 1] plus +-0.1 and +-0.25
        assert fn.surface["heldout_error"].shape == (5, 5)
        assert r.filter_surface is fn.surface
        assert fn.sharpness.scale_invariant and fn.sharpness.mean == raw["filter_normalized"]["sharpness"]["mean"]
        assert r.learning_curve is not None and r.learning_curve.epochs == (0, 1, 2)
        assert r.learning_curve.n_heldout == 16
        assert [p.run for p in r.trajectory].count("task1") == 3
        assert r.rollback[0].group == "none" and math.isnan(r.rollback[0].change_norm)
        assert list(r.trajectory_frame().columns)[:4] == ["run", "epoch", "a", "b"]
    with pytest.raises(KeyError, match="alpha, beta"):
        res.inits["pretrained"].surface["no_such_metric"]
    assert "beta" in res.inits["pretrained"].surface and "beta" not in res.inits["pretrained"].curve
    seed1 = load_results(seed_dir(out, 1))
    assert seed1.summary.seeds is None  # a seed's own summary; the experiment's summary aggregates
    assert [r["out_dir"] for r in list_results(out.parent)] == [str(out)]  # seed folders are not listed


def test_results_written_before_the_new_sections_still_load(tiny_run, tmp_path):
    """Drop what older versions did not write: seeds and summary, filter_normalized, learning curves, the
    scale-invariance flags and the directions option. Optional sections become None; everything else reads."""
    out = _copy(tiny_run, tmp_path)

    def old_summary(s: dict) -> None:
        for key in ("seeds", "seed_values", "seed_runs", "summary", "learning_curves", "filter_normalized", "seed"):
            s.pop(key, None)
        for key in ("directions", "filter_config", "learning_heldout", "seeds"):
            s["config"].pop(key)
        for init in s["inits"]:
            s[init].pop("filter_normalized"), s[init].pop("learning_curve")

    def old_results(r: dict) -> None:
        r.pop("filter_normalized"), r.pop("learning_curve"), r.pop("seed")
        r["flatness"]["hessian"].pop("scale_invariant")
        for k in ("grid_train_loss", "grid_heldout_loss"):
            r["flatness"][k].pop("scale_invariant")

    _edit(out / SUMMARY, old_summary)
    for init in ("pretrained", "scratch"):
        _edit(out / init / RESULTS, old_results)
        (out / init / FILTER_CURVES).unlink()
        (out / init / FILTER_SURFACE).unlink()
    res = load_results(out)
    assert res.summary.seeds is None and res.summary.directions == "task"
    for r in res.inits.values():
        assert r.filter_normalized is None and r.learning_curve is None and r.filter_surface is None
        assert r.surface is not None and r.flatness.hessian.scale_invariant is False


@pytest.mark.parametrize(
    ("where", "change", "names"),
    [
        ("pretrained", lambda r: r["axes"].pop("cos_delta1_delta2"), "'axes.cos_delta1_delta2' is missing"),
        (
            "scratch",
            lambda r: r["axes"].__setitem__("cos_d1_d2", r["axes"].pop("cos_delta1_delta2")),
            "'axes.cos_delta1_delta2' is missing",
        ),
        ("pretrained", lambda r: r["trajectory"][1].pop("residual"), "'trajectory[1].residual' is missing"),
        ("pretrained", lambda r: r["theta1"].__setitem__("heldout_acc", "0.5"), "'theta1.heldout_acc' should be"),
        ("scratch", lambda r: r["flatness"]["hessian"].pop("eigenvalue"), "'flatness.hessian.eigenvalue'"),
        (
            "pretrained",
            lambda r: r["filter_normalized"]["sharpness"].pop("sd"),
            "'filter_normalized.sharpness.sd' is missing",
        ),
        ("scratch", lambda r: r["learning_curve"]["overfitting"].pop("overfit_gap"), "overfitting.overfit_gap"),
        ("summary", lambda s: s.pop("model"), "'model' is missing"),
        ("summary", lambda s: s["summary"]["pretrained"]["filter_sharpness"].pop("sd"), "filter_sharpness.sd"),
    ],
)
def test_a_missing_or_renamed_field_fails_loudly_with_field_and_file(tiny_run, tmp_path, where, change, names):
    out = _copy(tiny_run, tmp_path)
    path = out / SUMMARY if where == "summary" else out / where / RESULTS
    _edit(path, change)
    with pytest.raises(ResultsSchemaError, match=names.replace("[", r"\[").replace("]", r"\]")) as err:
        load_results(out)
    assert str(path) in str(err.value)


@pytest.mark.parametrize("name", [SURFACE, CURVE, FILTER_SURFACE])
def test_a_missing_array_or_file_fails_loudly(tiny_run, tmp_path, name):
    out = _copy(tiny_run, tmp_path)
    path = out / "scratch" / name
    arrays = read_arrays(path)
    arrays.pop("heldout_acc")
    write_arrays(path, arrays)
    with pytest.raises(ResultsSchemaError, match="heldout_acc missing") as err:
        load_results(out)
    assert str(path) in str(err.value)
    path.unlink()
    with pytest.raises(ResultsSchemaError, match="missing or unreadable"):
        load_results(out)


def test_no_results_and_no_finished_initialisation_are_the_users_to_fix(tmp_path):
    with pytest.raises(InputError, match="no landscape results here"):
        load_results(tmp_path)
    (tmp_path / SUMMARY).write_text(json.dumps({"task": "demo-topic", "inits": ["pretrained", "scratch"]}))
    with pytest.raises(InputError, match="no finished initialisation"):
        load_results(tmp_path)


def test_a_null_number_reads_as_nan_not_as_a_missing_field(tiny_run, tmp_path):
    out = _copy(tiny_run, tmp_path)
    _edit(out / "pretrained" / RESULTS, lambda r: r["trajectory"][0].__setitem__("surface_train_loss", None))
    r = load_results(out).inits["pretrained"]
    assert math.isnan(r.trajectory[0].surface_train_loss)
    assert np.isfinite(r.trajectory[1].surface_train_loss)


def test_every_record_in_a_result_folder_is_exactly_what_its_class_writes(tiny_run):
    """The writer and the reader share one definition per record: parsing a section and writing it again
    gives the file's own JSON, key for key (nothing the pipeline writes is unknown to the records)."""
    from isoscope.data.export import to_jsonable
    from isoscope.landscape import records
    from isoscope.landscape.schema import Fields

    out = tiny_run[0]

    def same(cls, obj: dict, path: Path) -> None:
        assert to_jsonable(cls.parse(Fields(obj, path)).to_json()) == obj, cls.__name__

    for init in ("pretrained", "scratch"):
        path = out / init / RESULTS
        r = json.loads(path.read_text())
        same(records.Axes, r["axes"], path)
        for key in ("theta1_coords", "theta2_coords"):
            same(records.Coords, r[key], path)
        for key in ("theta0", "theta1", "theta2"):
            same(records.Metrics, r[key], path)
        for row in r["trajectory"]:
            same(records.TrajectoryPoint, row, path)
        for row in r["rollback"]:
            same(records.RollbackRow, row, path)
        same(records.Hessian, r["flatness"]["hessian"], path)
        fn = r["filter_normalized"]
        same(records.FilterDirections, fn["directions"], path)
        same(records.Sharpness, fn["sharpness"], path)
        same(records.Sharpness, fn["heldout_sharpness"], path)
        same(records.LearningCurve, r["learning_curve"], path)
    summary = json.loads((out / SUMMARY).read_text())
    info = records.RunInfo.parse(Fields(summary, out / SUMMARY)).to_json()
    assert to_jsonable(info) == {k: summary[k] for k in info}
    seeds = records.SeedSummary.parse(Fields(summary, out / SUMMARY)).to_json()
    assert to_jsonable(seeds) == {k: summary[k] for k in records.SeedSummary.KEYS}
