"""The whole experiment: train, build the plane, and measure the landscape, for pre-trained and scratch.

For each initialisation (``pretrained``: the encoder's weights; ``scratch``: a seeded random init of the
same architecture) the pipeline trains task 1 (theta0 -> theta1) and task 2 (theta0 -> theta2), then
measures, around theta1:

- the task-plane view (``directions`` task or both): the 1D curve along delta1, the training-loss and
  held-out-error surfaces on the plane. For trajectories; not for comparing flatness across inits.
- the filter-normalised view (``directions`` filter or both): curves along random filter-normalised
  directions, a surface on two of them and the sharpness, on the same alpha range for both inits.
- the signed trajectories of both runs' checkpoints, the layer rollback table, the top Hessian
  eigenvalue, and the learning curve (held-out loss and accuracy after every epoch).

With ``seeds`` > 1 the whole experiment is repeated with seeds s, s+1, ... (``isoscope.landscape.seeds``);
the first seed's results sit in ``out_dir`` itself, the others in ``out_dir/seeds/seed-<s>``, and the
summary carries the mean and sd of every headline number.

Second task and the head. theta lives in the parameter space of task 1 (encoder + task-1 head). The
task-2 run trains its own head, whose outputs mean other labels (even with the same number of classes,
its classes are not task 1's), so no head displacement is comparable between the tasks. theta2 is
therefore the task-2 encoder with the task-1 head left at its initial value: delta2 is the shared encoder
displacement only, with zeros on the head. Both runs start from the same theta0 encoder (checked), and
theta2 lies exactly on the plane by construction.

Every stage is cached under ``out_dir`` by content keys (checkpoint and axis digests, the evaluation
set, the grid); grid rows and direction curves are saved as they finish, so an interrupted run resumes.

Devices (``isoscope.landscape.placement``): everything runs on the encoder's device (``Encoder.device``, resolved
as for embedding); the flat vectors sit beside the model (on the CPU for MPS, which has no float64). A device
other than the CPU changes the numbers, so its kind is part of the experiment's key and of every training run's;
the stages after training are keyed by the checkpoints' digests, which differ with them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np
import torch

from isoscope.cache import make_key
from isoscope.encode.models import Encoder
from isoscope.errors import InputError
from isoscope.landscape import measures
from isoscope.landscape.axes import make_plane, project
from isoscope.landscape.classifier import (
    INITS,
    Classifier,
    Evaluator,
    build_classifier,
    check_init,
    make_eval_set,
)
from isoscope.landscape.directions import DIRECTIONS, check_directions
from isoscope.landscape.filter_view import FilterConfig
from isoscope.landscape.flat import FlatLayout, vector_digest
from isoscope.landscape.measures import InitRun, to_task1_space
from isoscope.landscape.placement import key_parts, vector_device
from isoscope.landscape.records import EvalCounts, RunInfo, SeedSummary
from isoscope.landscape.results import RESULTS, SUMMARY, default_root, load_results, seed_dir
from isoscope.landscape.rollback import ENCODER_PREFIX
from isoscope.landscape.seeds import headline_summary, learning_bands
from isoscope.landscape.store import read_json, write_json
from isoscope.landscape.surface import check_grid, grid_size_for_budget
from isoscope.landscape.tasks import TaskSplit, sample
from isoscope.landscape.train import Checkpoint, TrainConfig, run_key, train_run

log = logging.getLogger(__name__)

ProgressFn = Callable[[int, int], None]
ProgressFactory = Callable[[str], ProgressFn | None]  # stage description -> (done, total) callback
PIPELINE_VERSION = "landscape-1"
MAX_SEEDS = 20


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
    directions: str = "both"  # task: the task plane; filter: filter-normalised directions; both
    filter_config: FilterConfig = field(default_factory=FilterConfig)
    learning_heldout: int = 256  # held-out examples of the per-epoch learning curve (0 skips it)
    seeds: int = 1  # repetitions of the whole experiment with seeds train.seed, train.seed + 1, ...

    def validate(self) -> LandscapeConfig:
        """InputError (the user's options) that says what to fix."""
        try:
            self.train.validate()
            for init in self.inits:
                check_init(init)
            check_directions(self.directions)
            if self.grid is not None:
                check_grid(self.grid)
        except InputError:
            raise
        except ValueError as exc:
            raise InputError(str(exc)) from None
        if not self.inits:
            raise InputError(f"choose at least one init of {', '.join(INITS)}")
        for lo, hi in (self.range_a, self.range_b or self.range_a):
            if not lo < hi:
                raise InputError(f"a range must be increasing, got {lo} {hi}")
        if self.eval_size < 2 or self.points_1d < 3 or self.hessian_iters < 0 or self.time_budget <= 0:
            raise InputError("need eval_size >= 2, points_1d >= 3, hessian_iters >= 0 and time_budget > 0")
        if self.hessian_size < 1:
            raise InputError("hessian_size must be >= 1")
        if self.learning_heldout < 0:
            raise InputError("learning_heldout must be >= 0 (0 skips the learning curves)")
        if not 1 <= self.seeds <= MAX_SEEDS:
            raise InputError(f"seeds must be between 1 and {MAX_SEEDS}, got {self.seeds}")
        if self.directions != "task":
            self.filter_config.validate()
        return self

    @property
    def alphas_1d(self) -> np.ndarray:
        """The 1D range, with 0 (theta0) and 1 (theta1) always included."""
        return np.unique(np.r_[np.linspace(*self.range_a, self.points_1d), 0.0, 1.0])

    @property
    def task_view(self) -> bool:
        return self.directions in ("task", "both")

    @property
    def filter_view_on(self) -> bool:
        return self.directions in ("filter", "both")


def experiment_key(encoder: Encoder, task1: TaskSplit, task2: TaskSplit, *, config: LandscapeConfig) -> str:
    """The experiment's content key (its default folder's name); the encoder's device kind is part of it when it is
    not the CPU."""
    return make_key(
        PIPELINE_VERSION,
        encoder.fingerprint,
        task1.train.digest(),
        task1.heldout.digest(),
        task2.train.digest(),
        config.train.key(),
        config.eval_size,
        *key_parts(torch.device(encoder.device)),
    )


def run_landscape(
    encoder: Encoder,
    task1: TaskSplit,
    task2: TaskSplit,
    *,
    config: LandscapeConfig | None = None,
    out_dir: str | Path | None = None,
    progress: ProgressFactory | None = None,
) -> dict:
    """Run (or resume) the experiment for every seed; write results under ``out_dir``; return the summary."""
    config = (config or LandscapeConfig()).validate()
    start = time.perf_counter()
    out = (
        Path(out_dir).expanduser() if out_dir else default_root() / experiment_key(encoder, task1, task2, config=config)
    )
    out.mkdir(parents=True, exist_ok=True)
    seeds = [config.train.seed + k for k in range(config.seeds)]
    summaries: list[dict] = []
    for k, seed in enumerate(seeds):
        cfg = replace(config, train=replace(config.train, seed=seed), seeds=1)  # one seed's own experiment
        if k > 0:  # every seed on the grid the first one chose
            cfg = replace(cfg, grid=int(summaries[0]["grid"]["grid"]))
        tag = f" seed {seed}" if len(seeds) > 1 else ""
        seed_out = out if k == 0 else seed_dir(out, seed)
        summaries.append(_run_seed(encoder, task1, task2, cfg, seed_out, progress, tag))
    summary = summaries[0]
    per_seed = [load_results(out if k == 0 else seed_dir(out, s)).inits for k, s in enumerate(seeds)]
    summary.update(
        {
            "config": asdict(config),
            "seeds": len(seeds),
            "seed_runs": [s["out_dir"] for s in summaries],
            **SeedSummary(tuple(seeds), headline_summary(per_seed), learning_bands(per_seed)).to_json(),
            "filter_normalized": {
                init: {k: summary[init]["filter_normalized"][k] for k in ("curve_1d", "surface", "sharpness")}
                for init in config.inits
                if summary[init].get("filter_normalized")
            },
            "wall_seconds": time.perf_counter() - start,
        }
    )
    write_json(out / SUMMARY, summary)
    return summary


def _run_seed(
    encoder: Encoder,
    task1: TaskSplit,
    task2: TaskSplit,
    config: LandscapeConfig,
    out: Path,
    progress: ProgressFactory | None,
    tag: str,
) -> dict:
    """One seed of the experiment, in ``out``; writes and returns its summary."""
    start = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    tc = config.train
    train1 = sample(task1.train, tc.n_train, tc.seed)
    train2 = sample(task2.train, tc.n_train, tc.seed)
    eval_train = sample(train1, config.eval_size, tc.seed + 1)
    eval_set = make_eval_set(
        encoder.tokenizer,
        eval_train,
        sample(task1.heldout, config.eval_size, tc.seed + 2),
        max_length=tc.max_length,
        chunk_size=config.eval_chunk,
    )
    curve_set = None
    if config.learning_heldout:
        heldout = sample(task1.heldout, config.learning_heldout, tc.seed + 3)
        curve_set = make_eval_set(
            encoder.tokenizer, eval_train, heldout, max_length=tc.max_length, chunk_size=config.eval_chunk
        )
    info = RunInfo(
        model=encoder.name,
        task=task1.name,
        task2=task2.name,
        n_train=(len(train1), len(train2)),
        n_eval=EvalCounts(eval_set.n_train, eval_set.n_heldout),
        inits=tuple(config.inits),
        warnings=tuple(task1.warnings + task2.warnings),
        model_fingerprint=encoder.fingerprint,
        seed=tc.seed,
        n_classes=(task1.train.n_classes, task2.train.n_classes),
        class_counts_train=tuple(train1.class_counts()),
        n_learning_heldout=curve_set.n_heldout if curve_set is not None else 0,
        out_dir=str(out),
    )
    summary: dict = {**info.to_json(), "config": asdict(config)}
    grid_info: dict = {}
    stage = _Stages(progress, tag)
    for init in config.inits:
        summary[init] = _run_init(encoder, init, train1, train2, eval_set, curve_set, config, out, grid_info, stage)
    summary["grid"] = grid_info
    summary["wall_seconds"] = time.perf_counter() - start
    write_json(out / SUMMARY, summary)
    return summary


class _Stages:
    """Progress bars named ``<stage> <init>[ <slot>][ seed <s>]`` (the CLI reads the unit from the first word)."""

    def __init__(self, progress: ProgressFactory | None, tag: str) -> None:
        self.progress, self.tag = progress, tag

    def bar(self, desc: str, init: str, suffix: str = "") -> ProgressFn | None:
        return self.progress(f"{desc} {init}{suffix}{self.tag}") if self.progress is not None else None

    def factory(self, init: str) -> Callable[[str], ProgressFn | None]:
        return lambda desc: self.bar(desc, init)


def _train(
    encoder: Encoder, init: str, task, config: LandscapeConfig, out: Path, slot: str, stage: _Stages
) -> tuple[Classifier, FlatLayout, list[Checkpoint], dict]:
    tc = config.train
    model = build_classifier(encoder, task.n_classes, init=init, seed=tc.seed, pooling=tc.pooling)  # type: ignore[arg-type]
    layout = FlatLayout.from_module(model)
    key = run_key(encoder.fingerprint, init, task, config=tc, layout=layout, device=torch.device(encoder.device))
    run_dir = out / "checkpoints" / f"{init}-{slot}-{key[:12]}"
    bar = stage.bar("train", init, f" {slot}")  # "train pretrained task1"
    ckpts, timing = train_run(
        model,
        layout,
        encoder.tokenizer,
        task=task,
        config=tc,
        run_dir=run_dir,
        key=key,
        progress=bar,
        reuse=config.reuse,
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


def _run_init(
    encoder: Encoder,
    init: str,
    train1,
    train2,
    eval_set,
    curve_set,
    config: LandscapeConfig,
    out: Path,
    grid_info,
    stage,
) -> dict:
    t_start = time.perf_counter()
    run, res = _train_both(encoder, init, train1, train2, eval_set, config=config, out=out, stage=stage)
    n = _grid_size(config, run.evaluate, run.theta0, out, grid_info)
    alphas = np.linspace(*config.range_a, n)
    betas = np.linspace(*(config.range_b or config.range_a), n)
    surface = None
    if config.task_view:
        surface = measures.task_view_step(run, res, eval_set, alphas=alphas, betas=betas, config=config, stage=stage)
    measures.trajectory_step(run, res, surface, reuse=config.reuse)
    measures.rollback_step(run, res, eval_set.key, encoder.num_layers, reuse=config.reuse, stage=stage)
    measures.flatness_step(run, res, surface, (alphas, betas), config=config, eval_key=eval_set.key, stage=stage)
    if config.filter_view_on:
        measures.filter_step(run, res, eval_set.key, n, config=config, stage=stage)
    if curve_set is not None:
        measures.learning_step(run, res, curve_set, reuse=config.reuse, stage=stage)
    res["seconds_total"] = time.perf_counter() - t_start
    write_json(run.folder / RESULTS, res)
    return res


def _train_both(
    encoder: Encoder, init: str, train1, train2, eval_set, *, config: LandscapeConfig, out: Path, stage: _Stages
) -> tuple[InitRun, dict]:
    """Train both tasks from the same theta0, span the plane; the initialisation's results begin here."""
    model, layout, ckpts1, info1 = _train(encoder, init, train1, config, out, "task1", stage)
    model2, layout2, ckpts2, info2 = _train(encoder, init, train2, config, out, "task2", stage)
    del model2
    n_enc = _encoder_size(layout)
    if _encoder_size(layout2) != n_enc:
        raise ValueError("the task-1 and task-2 models do not share the encoder parameters")
    where = vector_device(torch.device(encoder.device))  # the flat vectors and their float64 algebra
    theta0 = ckpts1[0].load(where)
    theta0_t2 = ckpts2[0].load(where)
    if not torch.equal(theta0[:n_enc], theta0_t2[:n_enc]):
        raise ValueError("the task-1 and task-2 runs do not start from the same encoder weights")
    del theta0_t2
    theta1 = ckpts1[-1].load(where)
    theta2 = to_task1_space(ckpts2[-1].load(where), theta0, n_enc)
    plane = make_plane(theta0, theta1, theta2)
    p1, p2 = project(plane, theta1), project(plane, theta2)
    evaluate = Evaluator(model, layout, eval_set)
    res: dict = {
        "init": init,
        "seed": config.train.seed,
        "train": {"task1": info1, "task2": info2},
        "n_params": layout.size,
        "n_encoder_params": n_enc,
        "axes": plane.axes().to_json(),
        "theta1_coords": p1.to_json(),
        "theta2_coords": p2.to_json(),
    }
    # the origin is theta0, whose digest the checkpoint already holds
    digests = {"origin": ckpts1[0].digest, "e1": vector_digest(plane.e1), "e2": vector_digest(plane.e2)}
    res["digests"] = digests
    run = InitRun(
        init, model, layout, ckpts1, ckpts2, n_enc, theta0, theta1, theta2, plane, p1, p2, evaluate, digests, out / init
    )
    return run, res


def _grid_size(config: LandscapeConfig, evaluate: Evaluator, theta0: torch.Tensor, out: Path, info: dict) -> int:
    """--grid, or the size chosen from the time budget (timed once, remembered so re-runs hit the cache)."""
    if info:
        return int(info["grid"])
    if config.grid is not None:
        info.update({"grid": config.grid, "source": "--grid"})
        return config.grid
    saved = read_json(out / "grid.json") if config.reuse else None
    device = evaluate.device.type  # a grid timed on one kind of device is not the time budget's on another
    if saved and saved.get("time_budget") == config.time_budget and saved.get("device", "cpu") == device:
        info.update({"grid": int(saved["grid"]), "source": "grid.json (chosen by an earlier run)"})
        info["seconds_per_point_timed"] = saved.get("seconds_per_point")
    else:
        evaluate(theta0)  # warm-up
        t = time.perf_counter()
        evaluate(theta0)  # returns Python floats: the device's work is finished when it returns
        spp = time.perf_counter() - t
        info.update({"seconds_per_point_timed": spp, "time_budget": config.time_budget})
        info.update({"grid": grid_size_for_budget(spp, config.time_budget), "source": "time budget"})
        timed = {"time_budget": config.time_budget, "grid": info["grid"], "seconds_per_point": spp}
        write_json(out / "grid.json", timed if device == "cpu" else {**timed, "device": device})
    log.info("grid %d x %d (%s)", info["grid"], info["grid"], info["source"])
    return int(info["grid"])


__all__ = ["DIRECTIONS", "FilterConfig", "LandscapeConfig", "experiment_key", "run_landscape"]
