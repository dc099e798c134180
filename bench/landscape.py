"""Benchmark isoscope.landscape: short fine-tuning, then a loss-surface grid with the default model.

Usage (from the repo root)::

    .venv/bin/python bench/landscape.py            # 21 x 21 grid, 64 examples per point; target: grid <= 180 s
    .venv/bin/python bench/landscape.py --quick    # 5 x 5 grids, 16 examples per point, under a minute

Fine-tunes all-MiniLM-L6-v2 (+ head) on a few hundred STS-B binary examples (theta1) and on the demo
topic task (theta2), builds the plane, then times the grid; then, side by side in the same run, the
filter-normalised surface around theta1 (two Li et al. 2018 directions, the same grid size, alpha in
[-1, 1]) and the time to draw one filter-normalised direction. Each grid point evaluates a fixed batch of
training and held-out examples (half each) from a flat parameter vector, with the padding-free BERT
forward (isoscope.landscape.packed); one point is also timed side by side with the padded
``functional_call`` forward (``packed_vs_padded_speedup``, and the largest logit difference).
Checkpoints go to a temporary folder, so every run trains and measures for real (no cache).
Prints a table, then as its LAST line one JSON object.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from isoscope.encode.models import load_encoder  # noqa: E402
from isoscope.landscape.axes import make_plane, project  # noqa: E402
from isoscope.landscape.classifier import Evaluator, build_classifier, make_eval_set  # noqa: E402
from isoscope.landscape.curvature import hvp  # noqa: E402
from isoscope.landscape.directions import DirectionPlane, direction_seed, filter_normalized_direction  # noqa: E402
from isoscope.landscape.flat import FlatLayout  # noqa: E402
from isoscope.landscape.surface import surface_2d  # noqa: E402
from isoscope.landscape.tasks import load_task, sample  # noqa: E402
from isoscope.landscape.train import TrainConfig, run_key, train_run  # noqa: E402

TARGET_GRID_SECONDS = 180.0


def _train(encoder, task, config: TrainConfig, folder: Path, slot: str):
    """Fine-tune from the pre-trained weights; returns (model, layout, first and last theta, seconds)."""
    model = build_classifier(encoder, task.n_classes, init="pretrained", seed=config.seed)
    layout = FlatLayout.from_module(model)
    key = run_key(encoder.fingerprint, "pretrained", task, config=config, layout=layout)
    start = time.perf_counter()
    ckpts, _ = train_run(
        model, layout, encoder.tokenizer, task=task, config=config, run_dir=folder / slot, key=key, reuse=False
    )
    return model, layout, ckpts[0].load(), ckpts[-1].load(), time.perf_counter() - start


def _best_of(evaluate: Evaluator, theta: torch.Tensor, repeats: int) -> float:
    """Fastest of ``repeats`` evaluations at ``theta`` (seconds)."""
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        evaluate(theta)
        times.append(time.perf_counter() - t)
    return min(times)


def run(grid: int, eval_size: int, n_train: int, epochs: int, hvps: int, seed: int) -> dict[str, object]:
    t = time.perf_counter()
    encoder = load_encoder()
    load_seconds = time.perf_counter() - t
    stsb, topic = load_task("stsb", seed), load_task("demo-topic", seed)
    config = TrainConfig(n_train=n_train, epochs=epochs, batch_size=16, max_length=128, seed=seed)
    train1, train2 = sample(stsb.train, n_train, seed), sample(topic.train, n_train, seed)
    with tempfile.TemporaryDirectory(prefix="isoscope-landscape-bench-") as tmp:
        model, layout, theta0, theta1, train1_s = _train(encoder, train1, config, Path(tmp), "task1")
        _, _, _, theta2_full, train2_s = _train(encoder, train2, config, Path(tmp), "task2")
    n_enc = layout.prefix_size("encoder.")
    theta2 = torch.cat([theta2_full[:n_enc], theta0[n_enc:]])  # shared encoder displacement only
    plane = make_plane(theta0, theta1, theta2)
    half = eval_size // 2
    eval_set = make_eval_set(
        encoder.tokenizer,
        sample(train1, half, seed + 1),
        sample(stsb.heldout, eval_size - half, seed + 2),
        max_length=128,
        chunk_size=8,
    )
    evaluate = Evaluator(model, layout, eval_set)  # the padding-free forward for this BERT model
    padded = Evaluator(model, layout, eval_set, packed=False)
    evaluate(theta0), padded(theta0)  # warm-up
    one_point, one_point_padded = _best_of(evaluate, theta1, 3), _best_of(padded, theta1, 3)
    logits_gap = float((evaluate.logits(theta1) - padded.logits(theta1)).abs().max())
    alphas, betas = np.linspace(-0.5, 1.5, grid), np.linspace(-0.5, 1.5, grid)
    t, cpu = time.perf_counter(), time.process_time()
    surface = surface_2d(evaluate, plane, alphas=alphas, betas=betas)
    grid_seconds, grid_cpu = time.perf_counter() - t, time.process_time() - cpu
    t = time.perf_counter()
    d1 = filter_normalized_direction(layout, theta1, direction_seed(seed, 0))
    direction_seconds = time.perf_counter() - t
    d2 = filter_normalized_direction(layout, theta1, direction_seed(seed, 1))
    filter_alphas = np.linspace(-1.0, 1.0, grid)
    t = time.perf_counter()
    filter_surface = surface_2d(evaluate, DirectionPlane(theta1, d1, d2), alphas=filter_alphas, betas=filter_alphas)
    filter_seconds = time.perf_counter() - t
    hvp_seconds = None
    if hvps:
        v = torch.randn(theta1.shape, generator=torch.Generator().manual_seed(seed))
        t = time.perf_counter()
        for _ in range(hvps):
            hvp(lambda th: evaluate.train_loss(th), theta1, v)
        hvp_seconds = (time.perf_counter() - t) / hvps
    p1, p2 = project(plane, theta1), project(plane, theta2)
    return {
        "model": encoder.name,
        "n_params": layout.size,
        "n_train": [len(train1), len(train2)],
        "epochs": epochs,
        "grid": [grid, grid],
        "examples_per_point": {"train": eval_set.n_train, "heldout": eval_set.n_heldout},
        "torch_threads": torch.get_num_threads(),
        "load_average_1min": round(os.getloadavg()[0], 2),
        "model_load_seconds": round(load_seconds, 2),
        "train1_seconds": round(train1_s, 2),
        "train2_seconds": round(train2_s, 2),
        "one_point_seconds": round(one_point, 4),
        "one_point_padded_seconds": round(one_point_padded, 4),
        "packed_vs_padded_speedup": round(one_point_padded / one_point, 3),
        "packed_vs_padded_max_logit_gap": logits_gap,
        "grid_seconds": round(grid_seconds, 2),
        "seconds_per_point": round(grid_seconds / grid**2, 4),
        "grid_cpu_seconds": round(grid_cpu, 2),  # CPU time of this process: wall time on an idle machine (1 thread)
        "target_grid_seconds": TARGET_GRID_SECONDS,
        "meets_target": bool(grid_seconds <= TARGET_GRID_SECONDS),
        "hvp_seconds": None if hvp_seconds is None else round(hvp_seconds, 2),
        "filter_direction_seconds": round(direction_seconds, 3),
        "filter_grid_seconds": round(filter_seconds, 2),
        "filter_seconds_per_point": round(filter_seconds / grid**2, 4),
        "filter_vs_task_grid_time": round(filter_seconds / grid_seconds, 3),
        "filter_train_loss_range": [
            float(np.min(filter_surface["train_loss"])),
            float(np.max(filter_surface["train_loss"])),
        ],
        "cos_delta1_delta2": round(plane.cos_delta1_delta2, 6),
        "kept_fraction": round(plane.kept_fraction, 6),
        "cos_e1_e2": plane.cos_e1_e2,
        "theta1_coords": [round(p1.a, 6), round(p1.b, 6)],
        "theta1_residual": p1.residual,
        "theta2_coords": [round(p2.a, 6), round(p2.b, 6)],
        "theta2_residual": p2.residual,
        "train_loss_range": [float(np.min(surface["train_loss"])), float(np.max(surface["train_loss"]))],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5 x 5 grid, 16 examples, tiny training (< 1 min)")
    parser.add_argument("--grid", type=int, default=None, help="points per axis (default: 21, quick: 5)")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (default: torch's default)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.quick:
        result = run(args.grid or 5, eval_size=16, n_train=32, epochs=1, hvps=1, seed=args.seed)
    else:
        result = run(args.grid or 21, eval_size=64, n_train=300, epochs=2, hvps=2, seed=args.seed)
    rows = [
        ("model", result["model"]),
        ("threads / load avg", f"{result['torch_threads']} / {result['load_average_1min']}"),
        ("train task1 / task2 (s)", f"{result['train1_seconds']} / {result['train2_seconds']}"),
        (
            "grid",
            f"{result['grid'][0]} x {result['grid'][1]}, {sum(result['examples_per_point'].values())} examples/pt",
        ),
        ("one point (s)", result["one_point_seconds"]),
        ("one point padded (s)", f"{result['one_point_padded_seconds']} ({result['packed_vs_padded_speedup']}x)"),
        ("grid (s)", f"{result['grid_seconds']} (target <= {TARGET_GRID_SECONDS:.0f})"),
        ("seconds per point", result["seconds_per_point"]),
        ("grid CPU time (s)", result["grid_cpu_seconds"]),
        ("Hessian-vector product (s)", result["hvp_seconds"]),
        ("filter direction (s)", result["filter_direction_seconds"]),
        (
            "filter-normalised grid (s)",
            f"{result['filter_grid_seconds']} ({result['filter_vs_task_grid_time']}x the task grid)",
        ),
        ("cos(delta1, delta2)", result["cos_delta1_delta2"]),
        ("theta1 coords", result["theta1_coords"]),
        ("theta2 coords / residual", f"{result['theta2_coords']} / {result['theta2_residual']:.2e}"),
    ]
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
