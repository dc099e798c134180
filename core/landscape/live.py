"""A live run: the loss-surface experiment at a size two CPU cores finish while someone waits.

``LiveRun`` holds everything such a run depends on, as one frozen value: the dashboard's page builds it from
its widgets, keeps it as the request in the session, its service caches on it, and ``run_live`` turns it
into the ``LandscapeConfig`` of a small, fixed recipe (batch 16, both views, two filter-normalised
directions, 32 held-out examples per learning-curve point) and runs it. Its second task is
``options.default_task2`` of the first. Imports torch only inside ``config`` and ``run_live``.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from isoscope.landscape.options import INITS, default_task2

if TYPE_CHECKING:
    from isoscope.encode.models import Encoder
    from isoscope.landscape.costs import LandscapeRates
    from isoscope.landscape.pipeline import LandscapeConfig, ProgressFactory


LIVE_DEFAULTS: dict = {  # see default_live_run
    # measured (issue 41; held-out accuracy at theta1 on the run's 16 held-out examples, pre-trained vs scratch):
    # demo-topic (31 classes) at lr 5e-5: 0.00 vs 0.00; at 3e-4: 0.12 vs 0.00; demo-pairs at 3e-4: 0.69 vs 0.44
    "task": "demo-pairs",
    "n_train": 64,
    "epochs": 2,
    "lr": 3e-4,
    "grid": 5,
    "max_length": 64,
    "eval_size": 16,
    # a Hessian-vector product (a double backward) costs 15-25 evaluation points: the Hessian is an extra to ask for
    "hessian_iters": 0,
}


@dataclass(frozen=True)
class LiveRun:
    """One live experiment: what to train, on what, and how finely to measure (one seed)."""

    model: Hashable  # the caller's name for the encoder ("" = the embedded default; the dashboard's ModelKey)
    task: str  # the first axis's task: a built-in task (isoscope.landscape.tasks.available_tasks)
    n_train: int  # training examples per task
    epochs: int
    lr: float
    grid: int  # points per axis of both surfaces
    max_length: int
    eval_size: int  # fixed training and held-out examples evaluated at every point (this many of each)
    points_1d: int = 11
    hessian_iters: int = 5  # power-iteration steps at theta1 (0 skips them)
    seed: int = 0

    BATCH_SIZE: ClassVar[int] = 16
    EVAL_CHUNK: ClassVar[int] = 16  # attention blocks of 16 length-sorted examples (the packed BERT forward)
    FILTER_DIRECTIONS: ClassVar[int] = 2  # a sketch on 2 cores: two directions span the surface, sd needs two
    LEARNING_HELDOUT: ClassVar[int] = 32
    HESSIAN_SIZE: ClassVar[int] = 16
    RUNS: ClassVar[int] = 2 * len(INITS)  # pre-trained and scratch, each on both tasks

    @property
    def task2(self) -> str:
        """The second axis's task: a different demo task."""
        return default_task2(self.task)

    def config(self) -> LandscapeConfig:
        """The run's ``LandscapeConfig`` (validated: InputError for options that cannot run)."""
        from isoscope.landscape.filter_view import FilterConfig
        from isoscope.landscape.pipeline import LandscapeConfig
        from isoscope.landscape.train import TrainConfig

        train = TrainConfig(
            lr=self.lr,
            epochs=self.epochs,
            batch_size=self.BATCH_SIZE,
            n_train=self.n_train,
            max_length=self.max_length,
            seed=self.seed,
        )
        return LandscapeConfig(
            train=train,
            eval_size=self.eval_size,
            eval_chunk=self.EVAL_CHUNK,
            grid=self.grid,
            points_1d=self.points_1d,
            hessian_iters=self.hessian_iters,
            hessian_size=min(self.HESSIAN_SIZE, self.eval_size),
            directions="both",
            filter_config=FilterConfig(directions=self.FILTER_DIRECTIONS, points_1d=5, grid=self.grid),
            learning_heldout=self.LEARNING_HELDOUT,
        ).validate()

    @property
    def n_stages(self) -> int:
        """Progress stages of the run: per init, train x2, 1D curve, surface, rollback, (Hessian,) filter
        curves, filter surface, learning curve."""
        return len(INITS) * (8 + (self.hessian_iters > 0))

    def disk_mb(self, n_params: int) -> float:
        """Approximate MB of the checkpoints kept: every run's (epochs + 1) float32 parameter vectors."""
        return self.RUNS * (self.epochs + 1) * n_params * 4 / 2**20


def default_live_run(model: str = "") -> LiveRun:
    """The live run the Loss surfaces page offers first (and ``bench/costs.py`` times): one whose result shows the
    page's point. Issue 41: the old defaults (demo-topic: 31 classes from 64 examples, 2 epochs at 5e-5) left
    both models at held-out accuracy 0, and the first live run taught nothing; on the binary demo-pairs task at
    3e-4 the pre-trained model generalises (0.69 held-out) where the one from scratch stays near chance (0.44).
    No Hessian by default: a Hessian-vector product costs 15-25 evaluation points."""
    return LiveRun(model, **LIVE_DEFAULTS)


def run_live(encoder: Encoder, run: LiveRun, root: str | Path, *, progress: ProgressFactory | None = None) -> str:
    """Train and measure ``run`` with ``encoder`` (its fp32 weights) in a folder under ``root`` named by the
    experiment's content key, resuming what is on disk; returns that folder.

    Raises InputError (a task that cannot load, a run that did not move, ...) with one line to show.
    """
    from isoscope.landscape.pipeline import run_landscape

    task1, task2 = _tasks(run)
    out = _folder(encoder, run, root, task1, task2)
    return run_landscape(encoder, task1, task2, config=run.config(), out_dir=out, progress=progress)["out_dir"]


def result_folder(encoder: Encoder, run: LiveRun, root: str | Path) -> Path:
    """The folder under ``root`` where ``run_live`` writes (and resumes) ``run``: named by the experiment's
    content key (InputError for a task that cannot load)."""
    return _folder(encoder, run, root, *_tasks(run))


def finished(run: LiveRun, folder: str | Path) -> bool:
    """Whether ``run_live`` would only read ``run`` back from its ``result_folder``: the folder holds the summary
    of this very configuration (runs that differ in their grid or views share a folder; they resume, not repeat)."""
    import json
    from dataclasses import asdict

    from isoscope.landscape.results import SUMMARY
    from isoscope.landscape.store import read_json

    data = read_json(Path(folder) / SUMMARY)  # the bounded reader: None when absent or unreadable
    return data is not None and data.get("config") == json.loads(json.dumps(asdict(run.config())))


def _tasks(run: LiveRun):
    from isoscope.landscape.tasks import load_task

    return load_task(run.task, run.seed), load_task(run.task2, run.seed)


def _folder(encoder: Encoder, run: LiveRun, root: str | Path, task1, task2) -> Path:
    from isoscope.landscape.pipeline import experiment_key

    return Path(root) / experiment_key(encoder, task1, task2, config=run.config())


def _probe_model(encoder: Encoder, run: LiveRun):
    """The pre-trained classifier of ``run``'s first task, its flat layout, its evaluator on the run's own fixed
    evaluation set (the pipeline's samples) and its training sample: what the probes time."""
    from isoscope.landscape.classifier import Evaluator, build_classifier, make_eval_set
    from isoscope.landscape.flat import FlatLayout
    from isoscope.landscape.tasks import sample

    task1 = _tasks(run)[0]
    train = sample(task1.train, run.n_train, run.seed)
    heldout = sample(task1.heldout, run.eval_size, run.seed + 2)
    eval_set = make_eval_set(
        encoder.tokenizer,
        sample(train, run.eval_size, run.seed + 1),
        heldout,
        max_length=run.max_length,
        chunk_size=run.EVAL_CHUNK,
    )
    model = build_classifier(encoder, task1.train.n_classes, init="pretrained", seed=run.seed)
    layout = FlatLayout.from_module(model)
    return model, layout, Evaluator(model, layout, eval_set), train


def _timed(fn, device=None) -> float:
    """Seconds ``fn()`` takes, the work it queued on ``device`` (a GPU) included."""
    import time

    from isoscope.landscape.placement import synchronize

    start = time.perf_counter()
    fn()
    if device is not None:
        synchronize(device)
    return max(time.perf_counter() - start, 1e-6)


def seconds_per_point(encoder: Encoder, run: LiveRun) -> float:
    """One evaluation point of ``run`` timed as its pipeline evaluates one: the pre-trained classifier of its
    first task on the same fixed evaluation set, evaluated at theta0 once to warm up, then once timed."""
    model, layout, evaluate, _ = _probe_model(encoder, run)
    theta0 = layout.flatten(model)
    evaluate(theta0)
    return _timed(lambda: evaluate(theta0))


def measure_rates(encoder: Encoder, run: LiveRun) -> LandscapeRates:
    """Each kind of work of ``run`` timed once here, as its pipeline does it, on the run's own classifier and data
    (what ``isoscope.landscape.costs.landscape_cost`` multiplies): an evaluation point (after a warm-up), a
    Hessian-vector product on the run's Hessian examples, a training step of a real batch (the first one's extra
    time apart: a one-off warm-up), and one parameter vector written to disk. A few seconds on two cores. Timed on
    the encoder's device, where the run trains (``isoscope.landscape.placement``)."""
    import tempfile
    from pathlib import Path

    import numpy as np
    import torch

    from isoscope.landscape.costs import LandscapeRates
    from isoscope.landscape.curvature import hvp
    from isoscope.landscape.store import write_tensors
    from isoscope.landscape.train import train_step, training_batch

    model, layout, evaluate, train = _probe_model(encoder, run)
    device = evaluate.device
    theta0 = layout.flatten(model)  # (p,) on the model's device, where the pipeline keeps it (CUDA, CPU)
    evaluate(theta0)
    point = _timed(lambda: evaluate(theta0), device)
    size = min(run.HESSIAN_SIZE, evaluate.eval_set.n_train)
    v = torch.randn(theta0.shape, generator=torch.Generator().manual_seed(run.seed)).to(device)

    def hessian() -> None:
        hvp(lambda th: evaluate.train_loss(th, size), theta0, v)

    product = _timed(hessian, device) if run.hessian_iters else 0.0
    with tempfile.TemporaryDirectory() as folder:
        write = _timed(lambda: write_tensors(Path(folder) / "probe.safetensors", {"theta": theta0}, {}))
    idx = np.arange(min(run.BATCH_SIZE, len(train)))
    inputs, labels = training_batch(encoder.tokenizer, train, idx, max_length=run.max_length, device=device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=run.lr)
    model.train()

    def step() -> None:
        train_step(model, optimizer, inputs, labels, max_grad_norm=1.0)

    first = _timed(step, device)
    warm = _timed(step, device)
    model.eval()
    return LandscapeRates(point=point, step=warm, hvp=product, write=write, warmup=max(first - warm, 0.0))
