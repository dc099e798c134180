"""The whole experiment: train, build the plane, and measure the landscape, for pre-trained and scratch.

For each initialisation (``pretrained``: the encoder's weights; ``scratch``: a seeded random init of the
same architecture) the pipeline trains task 1 (theta0 -> theta1) and task 2 (theta0 -> theta2), then
computes the 1D curve along delta1, the training-loss and held-out-error surfaces on the plane, the
signed trajectories of both runs' checkpoints, the layer rollback table and the flatness at theta1.

Second task and the head. theta lives in the parameter space of task 1 (encoder + task-1 head). The
task-2 run trains its own head, whose outputs mean other labels (even with the same number of classes,
its classes are not task 1's), so no head displacement is comparable between the tasks. theta2 is
therefore the task-2 encoder with the task-1 head left at its initial value: delta2 is the shared encoder
displacement only, with zeros on the head. Both runs start from the same theta0 encoder (checked), and
theta2 lies exactly on the plane by construction.

Every stage is cached under ``out_dir`` by content keys (checkpoint and axis digests, the evaluation
set, the grid); grid rows are saved as they finish, so an interrupted run resumes.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch

from core.cache import make_key
from core.landscape.axes import Plane, Projection, make_plane, project
from core.landscape.classifier import INITS, METRICS, Classifier, Evaluator, build_classifier, check_init, make_eval_set
from core.landscape.curvature import grid_curvature, hessian_top_eigenvalue
from core.landscape.flat import FlatLayout, vector_digest
from core.landscape.results import CURVE, RESULTS, SUMMARY, SURFACE, default_root
from core.landscape.rollback import ENCODER_PREFIX, rollback_table
from core.landscape.store import RowStore, read_arrays, read_json, write_arrays, write_json
from core.landscape.surface import check_grid, curve_1d, grid_size_for_budget, interpolate, surface_2d
from core.landscape.tasks import TaskSplit, sample
from core.landscape.train import Checkpoint, TrainConfig, run_key, train_run
from core.models import Encoder

log = logging.getLogger(__name__)

ProgressFn = Callable[[int, int], None]
ProgressFactory = Callable[[str], ProgressFn | None]  # stage description -> (done, total) callback
PIPELINE_VERSION = "landscape-1"


@dataclass
class LandscapeConfig:
    """What to train and how finely to measure."""

    train: TrainConfig = field(default_factory=TrainConfig)
    eval_size: int = 64  # fixed, seeded training examples AND held-out examples evaluated at every point
    eval_chunk: int = 8  # examples per attention block (BERT: packed forward) or per padded forward pass (others)
    grid: int | None = None  # points per axis; None: the largest odd size that fits time_budget
    time_budget: float = 120.0  # seconds for one surface (one initialisation) when grid is None
    range_a: tuple[float, float] = (-0.5, 1.5)
    range_b: tuple[float, float] | None = None  # None: same as range_a
    points_1d: int = 21
    hessian_iters: int = 20  # 0 skips the power iteration
    hessian_tol: float = 1e-3
    hessian_size: int = 32  # training examples of the fixed evaluation batch used for Hessian-vector products
    inits: tuple[str, ...] = INITS
    reuse: bool = True  # read finished checkpoints, rows and results from out_dir

    def validate(self) -> LandscapeConfig:
        self.train.validate()
        for init in self.inits:
            check_init(init)
        if not self.inits:
            raise ValueError(f"choose at least one init of {', '.join(INITS)}")
        if self.grid is not None:
            check_grid(self.grid)
        for lo, hi in (self.range_a, self.range_b or self.range_a):
            if not lo < hi:
                raise ValueError(f"a range must be increasing, got {lo} {hi}")
        if self.eval_size < 2 or self.points_1d < 3 or self.hessian_iters < 0 or self.time_budget <= 0:
            raise ValueError("need eval_size >= 2, points_1d >= 3, hessian_iters >= 0 and time_budget > 0")
        if self.hessian_size < 1:
            raise ValueError("hessian_size must be >= 1")
        return self

    @property
    def alphas_1d(self) -> np.ndarray:
        """The 1D range, with 0 (theta0) and 1 (theta1) always included."""
        return np.unique(np.r_[np.linspace(*self.range_a, self.points_1d), 0.0, 1.0])


def experiment_key(encoder: Encoder, task1: TaskSplit, task2: TaskSplit, config: LandscapeConfig) -> str:
    return make_key(
        PIPELINE_VERSION,
        encoder.fingerprint,
        task1.train.digest(),
        task1.heldout.digest(),
        task2.train.digest(),
        config.train.key(),
        config.eval_size,
    )


def run_landscape(
    encoder: Encoder,
    task1: TaskSplit,
    task2: TaskSplit,
    config: LandscapeConfig | None = None,
    out_dir: str | Path | None = None,
    progress: ProgressFactory | None = None,
) -> dict:
    """Run (or resume) the experiment; write results under ``out_dir``; return the summary."""
    config = (config or LandscapeConfig()).validate()
    start = time.perf_counter()
    out = Path(out_dir).expanduser() if out_dir else default_root() / experiment_key(encoder, task1, task2, config)
    out.mkdir(parents=True, exist_ok=True)
    tc = config.train
    train1 = sample(task1.train, tc.n_train, tc.seed)
    train2 = sample(task2.train, tc.n_train, tc.seed)
    eval_set = make_eval_set(
        encoder.tokenizer,
        sample(train1, config.eval_size, tc.seed + 1),
        sample(task1.heldout, config.eval_size, tc.seed + 2),
        tc.max_length,
        config.eval_chunk,
    )
    summary: dict = {
        "model": encoder.name,
        "model_fingerprint": encoder.fingerprint,
        "task": task1.name,
        "task2": task2.name,
        "n_classes": [task1.train.n_classes, task2.train.n_classes],
        "n_train": [len(train1), len(train2)],
        "class_counts_train": train1.class_counts(),
        "n_eval": {"train": eval_set.n_train, "heldout": eval_set.n_heldout},
        "config": asdict(config),
        "inits": list(config.inits),
        "out_dir": str(out),
        "warnings": task1.warnings + task2.warnings,
    }
    grid_info: dict = {}
    for init in config.inits:
        summary[init] = _run_init(encoder, init, train1, train2, eval_set, config, out, grid_info, progress)
    summary["grid"] = grid_info
    summary["wall_seconds"] = time.perf_counter() - start
    write_json(out / SUMMARY, summary)
    return summary


def _bar(progress: ProgressFactory | None, desc: str) -> ProgressFn | None:
    return progress(desc) if progress is not None else None


def _train(
    encoder: Encoder, init: str, task, config: LandscapeConfig, out: Path, slot: str, progress
) -> tuple[Classifier, FlatLayout, list[Checkpoint], dict]:
    tc = config.train
    model = build_classifier(encoder, task.n_classes, init, tc.seed, tc.pooling)  # type: ignore[arg-type]
    layout = FlatLayout.from_module(model)
    key = run_key(encoder.fingerprint, init, task, tc, layout)
    run_dir = out / "checkpoints" / f"{init}-{slot}-{key[:12]}"
    ckpts, timing = train_run(
        model, layout, encoder.tokenizer, task, tc, run_dir, key, _bar(progress, f"train {init} {slot}"), config.reuse
    )
    info = {"run_dir": str(run_dir), "epoch_losses": [c.train_loss for c in ckpts[1:]], **timing}
    return model, layout, ckpts, info


def _encoder_size(layout: FlatLayout) -> int:
    """Length of the encoder block, which must lead the flat vector (the head comes last)."""
    n_enc = layout.prefix_size(ENCODER_PREFIX)
    offsets = layout.offsets()
    if any(name.startswith(ENCODER_PREFIX) and offsets[name][1] > n_enc for name in layout.names):
        raise ValueError("encoder parameters must come before the head in the flat layout")
    return n_enc


def _to_task1_space(theta_task2: torch.Tensor, theta0: torch.Tensor, n_encoder: int) -> torch.Tensor:
    """Task-2 encoder weights with the task-1 head at its initial value (see the module docstring)."""
    return torch.cat([theta_task2[:n_encoder], theta0[n_encoder:]])


def _run_init(
    encoder: Encoder,
    init: str,
    train1,
    train2,
    eval_set,
    config: LandscapeConfig,
    out: Path,
    grid_info: dict,
    progress: ProgressFactory | None,
) -> dict:
    t_start = time.perf_counter()
    model, layout, ckpts1, info1 = _train(encoder, init, train1, config, out, "task1", progress)
    model2, layout2, ckpts2, info2 = _train(encoder, init, train2, config, out, "task2", progress)
    del model2
    n_enc = _encoder_size(layout)
    if _encoder_size(layout2) != n_enc:
        raise ValueError("the task-1 and task-2 models do not share the encoder parameters")
    theta0 = ckpts1[0].load()
    theta0_t2 = ckpts2[0].load()
    if not torch.equal(theta0[:n_enc], theta0_t2[:n_enc]):
        raise ValueError("the task-1 and task-2 runs do not start from the same encoder weights")
    del theta0_t2
    theta1 = ckpts1[-1].load()
    theta2 = _to_task1_space(ckpts2[-1].load(), theta0, n_enc)
    plane = make_plane(theta0, theta1, theta2)
    p1, p2 = project(plane, theta1), project(plane, theta2)
    evaluate = Evaluator(model, layout, eval_set)
    res: dict = {
        "init": init,
        "train": {"task1": info1, "task2": info2},
        "n_params": layout.size,
        "n_encoder_params": n_enc,
        "axes": plane.summary(),
        "theta1_coords": asdict(p1),
        "theta2_coords": asdict(p2),
    }
    # the origin is theta0, whose digest the checkpoint already holds
    digests = {"origin": ckpts1[0].digest, "e1": vector_digest(plane.e1), "e2": vector_digest(plane.e2)}
    res["digests"] = digests
    folder = out / init
    n = _grid_size(config, evaluate, theta0, out, grid_info)
    alphas = np.linspace(*config.range_a, n)
    betas = np.linspace(*(config.range_b or config.range_a), n)

    t = time.perf_counter()
    curve = _cached_curve(evaluate, plane, config, eval_set.key, digests, folder, progress, init)
    res["curve_1d"] = _curve_summary(curve)
    res["seconds_curve"] = time.perf_counter() - t

    t = time.perf_counter()
    counted = _Counted(evaluate)
    surface = _cached_surface(counted, plane, alphas, betas, config, eval_set.key, digests, folder, progress, init)
    res["seconds_surface"] = time.perf_counter() - t
    res["surface_points_computed"] = counted.calls
    res["surface_seconds_per_point"] = res["seconds_surface"] / counted.calls if counted.calls else None
    res["surface"] = _surface_summary(surface)

    t = time.perf_counter()
    traj_key = make_key(
        "trajectory", str(surface["key"]), *(c.digest for c in ckpts1), "|", *(c.digest for c in ckpts2)
    )
    res["trajectory"] = _cached_json(
        folder / "trajectory.json",
        traj_key,
        config.reuse,
        lambda: _trajectories(
            evaluate,
            plane,
            surface,
            ckpts1,
            ckpts2,
            theta0,
            n_enc,
            {
                ("task1", 0): (theta0, None),
                ("task1", ckpts1[-1].epoch): (theta1, p1),
                ("task2", ckpts2[-1].epoch): (theta2, p2),
            },
        ),
    )
    by_epoch = {(r["run"], r["epoch"]): r for r in res["trajectory"]}
    res["theta0"] = {m: by_epoch[("task1", 0)][m] for m in METRICS}
    res["theta1"] = {m: by_epoch[("task1", ckpts1[-1].epoch)][m] for m in METRICS}
    res["theta2"] = {m: by_epoch[("task2", ckpts2[-1].epoch)][m] for m in METRICS}
    res["seconds_trajectory"] = time.perf_counter() - t

    t = time.perf_counter()
    res["rollback"] = _cached_json(
        folder / "rollback.json",
        make_key("rollback", digests["origin"], ckpts1[-1].digest, eval_set.key, encoder.num_layers),
        config.reuse,
        lambda: rollback_table(
            evaluate,
            layout,
            theta0,
            theta1,
            encoder.num_layers,
            _bar(progress, f"rollback {init}"),
            at_theta1=res["theta1"],  # the trajectory evaluated theta1 already
        ),
    )
    res["seconds_rollback"] = time.perf_counter() - t

    t = time.perf_counter()
    res["flatness"] = {
        "grid_train_loss": grid_curvature(alphas, betas, surface["train_loss"], (1.0, 0.0), plane.gram),
        "grid_heldout_loss": grid_curvature(alphas, betas, surface["heldout_loss"], (1.0, 0.0), plane.gram),
        "hessian": _cached_hessian(evaluate, theta1, ckpts1[-1].digest, config, eval_set.key, folder, progress, init),
    }
    res["seconds_flatness"] = time.perf_counter() - t
    res["seconds_total"] = time.perf_counter() - t_start
    write_json(folder / RESULTS, res)
    return res


def _grid_size(config: LandscapeConfig, evaluate: Evaluator, theta0: torch.Tensor, out: Path, info: dict) -> int:
    """--grid, or the size chosen from the time budget (timed once, remembered so re-runs hit the cache)."""
    if info:
        return int(info["grid"])
    if config.grid is not None:
        info.update({"grid": config.grid, "source": "--grid"})
        return config.grid
    saved = read_json(out / "grid.json") if config.reuse else None
    if saved and saved.get("time_budget") == config.time_budget:
        info.update({"grid": int(saved["grid"]), "source": "grid.json (chosen by an earlier run)"})
        info["seconds_per_point_timed"] = saved.get("seconds_per_point")
    else:
        evaluate(theta0)  # warm-up
        t = time.perf_counter()
        evaluate(theta0)
        spp = time.perf_counter() - t
        info.update({"seconds_per_point_timed": spp, "time_budget": config.time_budget})
        info.update({"grid": grid_size_for_budget(spp, config.time_budget), "source": "time budget"})
        write_json(
            out / "grid.json", {"time_budget": config.time_budget, "grid": info["grid"], "seconds_per_point": spp}
        )
    log.info("grid %d x %d (%s)", info["grid"], info["grid"], info["source"])
    return int(info["grid"])


class _Counted:
    """An evaluate function that counts its calls (points actually computed, not read from the cache)."""

    def __init__(self, evaluate: Callable[[torch.Tensor], dict[str, float]]) -> None:
        self.evaluate = evaluate
        self.calls = 0

    def __call__(self, theta: torch.Tensor) -> dict[str, float]:
        self.calls += 1
        return self.evaluate(theta)


def _cached_json(path: Path, key: str, reuse: bool, compute: Callable[[], object], field: str = "value") -> object:
    """``compute()``, or its earlier result stored in ``path`` under the same key (as ``{"key", field}``)."""
    cached = read_json(path) if reuse else None
    if cached is not None and cached.get("key") == key:
        return cached[field]
    write_json(path, {"key": key, field: compute()})
    return read_json(path)[field]  # the JSON form (NaN -> None) whether computed now or earlier


def _cached_arrays(
    path: Path, key: str, reuse: bool, compute: Callable[[], dict[str, np.ndarray]]
) -> dict[str, np.ndarray]:
    """``compute()`` with its error arrays, or its earlier result stored in the npz ``path`` under the same key."""
    cached = read_arrays(path) if reuse else None
    if cached is not None and str(cached.get("key", "")) == key:
        return cached
    arrays = _with_error(compute())
    arrays["key"] = np.array(key)
    write_arrays(path, arrays)
    return arrays


def _with_error(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    arrays["heldout_error"] = 1.0 - arrays["heldout_acc"]
    arrays["train_error"] = 1.0 - arrays["train_acc"]
    return arrays


def _cached_curve(evaluate, plane: Plane, config, eval_key, digests, folder: Path, progress, init) -> dict:
    alphas = config.alphas_1d
    key = make_key("curve", digests["origin"], digests["e1"], eval_key, alphas.tobytes().hex())
    return _cached_arrays(
        folder / CURVE,
        key,
        config.reuse,
        lambda: curve_1d(evaluate, plane.origin, plane.e1, alphas, _bar(progress, f"1D curve {init}")),
    )


def _cached_surface(evaluate, plane, alphas, betas, config, eval_key, digests, folder, progress, init) -> dict:
    key = make_key(
        "surface",
        digests["origin"],
        digests["e1"],
        digests["e2"],
        eval_key,
        alphas.tobytes().hex(),
        betas.tobytes().hex(),
    )
    rows = RowStore(folder, key, enabled=config.reuse)
    surface = _cached_arrays(
        folder / SURFACE,
        key,
        config.reuse,
        lambda: surface_2d(evaluate, plane, alphas, betas, _bar(progress, f"surface {init}"), rows),
    )
    rows.clear()  # the full grid is saved (also drops rows left by a run stopped right after saving it)
    return surface


def _cached_hessian(
    evaluate: Evaluator, theta1, theta1_digest: str, config, eval_key, folder: Path, progress, init
) -> dict:
    """Top Hessian eigenvalue at theta1; ``theta1_digest`` is its checkpoint's digest (for the cache key)."""
    if config.hessian_iters == 0:
        return {"skipped": True}
    size = min(config.hessian_size, evaluate.eval_set.n_train)
    key = make_key(
        "hessian", theta1_digest, eval_key, size, config.hessian_iters, config.hessian_tol, config.train.seed
    )

    def compute() -> dict:
        t = time.perf_counter()
        result = hessian_top_eigenvalue(
            lambda theta: evaluate.train_loss(theta, size),
            theta1,
            config.hessian_iters,
            config.hessian_tol,
            config.train.seed,
            _bar(progress, f"hessian {init}"),
        ).summary()
        result["seconds"] = time.perf_counter() - t
        result["n_examples"] = size
        return result

    # field "result": hessian.json files written before keep hitting the cache
    return _cached_json(folder / "hessian.json", key, config.reuse, compute, field="result")


Known = dict[tuple[str, int], tuple[torch.Tensor, Projection | None]]  # (run, epoch) -> (theta, projection)


def _trajectories(
    evaluate, plane: Plane, surface, ckpts1, ckpts2, theta0, n_enc, known: Known | None = None
) -> list[dict]:
    """Signed plane coordinates, off-plane residual, true metrics and the surface under every checkpoint.

    ``known`` holds thetas (task-1 space) already in memory, with their projections when computed, so
    those checkpoints are not read again. The task-2 run starts from theta0 itself (same encoder, checked
    by the caller, and the task-1 head at its initial value), so its epoch 0 repeats task 1's epoch-0 row.
    """
    known = known or {}
    rows = []
    for run, ckpts in (("task1", ckpts1), ("task2", ckpts2)):
        for c in ckpts:
            if run == "task2" and c.epoch == 0 and rows and rows[0]["epoch"] == 0:
                rows.append({**rows[0], "run": run, "epoch_train_loss": c.train_loss})
                continue
            theta, p = known.get((run, c.epoch), (None, None))
            if theta is None:
                theta = c.load()
                if run == "task2":
                    theta = _to_task1_space(theta, theta0, n_enc)
            if p is None:
                p = project(plane, theta)
            true = evaluate(theta)
            rows.append(
                {
                    "run": run,
                    "epoch": c.epoch,
                    "a": p.a,
                    "b": p.b,
                    "residual": p.residual,
                    "distance": p.distance,
                    **true,
                    "surface_train_loss": interpolate(
                        surface["alpha"], surface["beta"], surface["train_loss"], p.a, p.b
                    ),
                    "surface_heldout_loss": interpolate(
                        surface["alpha"], surface["beta"], surface["heldout_loss"], p.a, p.b
                    ),
                    "epoch_train_loss": c.train_loss,
                }
            )
    return rows


def _curve_summary(curve: dict) -> dict:
    a = curve["alpha"]
    i0, i1 = int(np.argmin(np.abs(a))), int(np.argmin(np.abs(a - 1.0)))
    best = int(np.argmin(curve["train_loss"]))
    return {
        "alpha_min_train_loss": float(a[best]),
        "min_train_loss": float(curve["train_loss"][best]),
        "train_loss_at_0": float(curve["train_loss"][i0]),
        "train_loss_at_1": float(curve["train_loss"][i1]),
        "heldout_acc_at_1": float(curve["heldout_acc"][i1]),
        "alpha_max_heldout_acc": float(a[int(np.argmax(curve["heldout_acc"]))]),
        "max_heldout_acc": float(np.max(curve["heldout_acc"])),
    }


def _surface_summary(surface: dict) -> dict:
    a, b, loss, err = surface["alpha"], surface["beta"], surface["train_loss"], surface["heldout_error"]
    i, j = np.unravel_index(int(np.nanargmin(loss)), loss.shape)
    k, m = np.unravel_index(int(np.nanargmin(err)), err.shape)
    return {
        "grid": [len(a), len(b)],
        "alpha_range": [float(a[0]), float(a[-1])],
        "beta_range": [float(b[0]), float(b[-1])],
        "min_train_loss": float(loss[i, j]),
        "argmin_train_loss": [float(a[i]), float(b[j])],
        "min_heldout_error": float(err[k, m]),
        "argmin_heldout_error": [float(a[k]), float(b[m])],
        "train_loss_at_theta1": interpolate(a, b, loss, 1.0, 0.0),
        "heldout_error_at_theta1": interpolate(a, b, err, 1.0, 0.0),
    }
