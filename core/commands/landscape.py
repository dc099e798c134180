"""``python -m isoscope landscape``: loss surfaces of fine-tuning from pre-trained weights vs from scratch.

Trains the classifier on ``--task`` (theta0 -> theta1) and on ``--task2`` (theta0 -> theta2) from the
pre-trained weights and from a random init of the same architecture, then writes, under ``--out`` (default
``~/.cache/isoscope/landscape/<key>``): the task-plane 1D curve and surfaces with the signed trajectories
(``--directions task``), the filter-normalised curves, surface and sharpness around theta1 (``filter``),
or both; layer rollback, the top Hessian eigenvalue and per-epoch learning curves. ``--seeds N`` repeats
the whole experiment and reports every headline number as mean +- sd. Re-running resumes from disk.

Runs on ``--device`` (auto: CUDA, then MPS, then the CPU), in float32; the device's kind is part of the default
``<key>`` off the CPU (a GPU's numbers differ from the CPU's). Heavy modules (torch, transformers) are imported
inside ``run``: ``landscape --help`` answers at once.
"""

from __future__ import annotations

import argparse
import math

from isoscope.commands.common import (
    add_json_argument,
    add_model_arguments,
    emit,
    encoder_for,
    output_from_args,
    progress_bar,
    space_from_args,
)
from isoscope.errors import InputError
from isoscope.landscape.options import BUILTIN_TASKS, DIRECTIONS, HEAD_POOLINGS, INITS, default_task2

# isoscope --help's line for this command, read from the file (isoscope.cli imports only the chosen command)
COMMAND = {
    "order": 40,
    "help": "loss surfaces of fine-tuning from pre-trained weights vs training from scratch (Hao et al. 2019)",
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    tasks = "|".join(BUILTIN_TASKS)
    p.add_argument(
        "--task", required=True, help=f"{tasks} or a labelled file (text,label or sentence1,sentence2,label)"
    )
    p.add_argument(
        "--task2",
        default=None,
        help=f"second task for the second axis: {tasks} or a file (default: a different demo task)",
    )
    p.add_argument(
        "--stsb-dir",
        default=None,
        help="folder with stsb-en-train.csv and stsb-en-dev.csv (default: ../shared/data/stsb)",
    )
    p.add_argument("--n-train", type=int, default=300, help="training examples per task (default: 300)")
    p.add_argument(
        "--epochs",
        type=int,
        default=3,
        help="fine-tuning epochs; well past convergence for the overfitting test (default: 3)",
    )
    p.add_argument("--lr", type=float, default=5e-5, help="AdamW learning rate, decayed linearly to 0 (default: 5e-5)")
    p.add_argument("--train-batch-size", type=int, default=16, help="examples per training step (default: 16)")
    p.add_argument("--seed", type=int, default=0, help="seed of sampling, head init, scratch init, order (default: 0)")
    p.add_argument(
        "--seeds",
        type=int,
        default=1,
        help="repeat the whole experiment with seeds SEED, SEED+1, ...; headline numbers as mean +- sd (default: 1)",
    )
    p.add_argument("--head-pooling", default="mean", choices=HEAD_POOLINGS, help="head input (default: mean)")
    p.add_argument(
        "--eval-size", type=int, default=64, help="fixed training and held-out examples per point (default: 64 each)"
    )
    p.add_argument(
        "--directions",
        default="both",
        choices=DIRECTIONS,
        help="task: the task plane (for trajectories); filter: filter-normalised random directions (flatness that "
        "compares across initialisations); both (default: both)",
    )
    p.add_argument(
        "--grid", type=int, default=None, help="points per axis of the 2D surfaces (default: from --time-budget)"
    )
    p.add_argument(
        "--time-budget", type=float, default=120.0, help="seconds per surface used to choose --grid (default: 120)"
    )
    p.add_argument(
        "--range",
        nargs=2,
        type=float,
        default=(-0.5, 1.5),
        metavar=("LO", "HI"),
        help="alpha range of the task plane (default: -0.5 1.5)",
    )
    p.add_argument(
        "--range-b", nargs=2, type=float, default=None, metavar=("LO", "HI"), help="beta range (default: --range)"
    )
    p.add_argument("--points-1d", type=int, default=21, help="points of the 1D curve along delta1 (default: 21)")
    p.add_argument(
        "--filter-directions",
        type=int,
        default=4,
        help="filter-normalised random directions per initialisation (curves and sharpness; default: 4)",
    )
    p.add_argument(
        "--filter-range",
        nargs=2,
        type=float,
        default=(-1.0, 1.0),
        metavar=("LO", "HI"),
        help="alpha range of the filter-normalised curves and surface, the same for both inits (default: -1 1)",
    )
    p.add_argument("--filter-points", type=int, default=9, help="points of each filter-normalised curve (default: 9)")
    p.add_argument(
        "--filter-grid",
        type=int,
        default=None,
        help="points per axis of the filter-normalised surface (default: --grid)",
    )
    p.add_argument(
        "--sharpness-alphas",
        nargs="+",
        type=float,
        default=(0.1, 0.25),
        metavar="A",
        help="sharpness = mean loss increase at +-A along the filter-normalised directions (default: 0.1 0.25)",
    )
    p.add_argument(
        "--learning-heldout",
        type=int,
        default=256,
        help="held-out examples of the per-epoch learning curves, 0 to skip (default: 256)",
    )
    p.add_argument("--hessian-iters", type=int, default=20, help="power-iteration steps, 0 to skip (default: 20)")
    p.add_argument(
        "--hessian-size", type=int, default=32, help="training examples for Hessian-vector products (default: 32)"
    )
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (default: 0 = torch's default)")
    p.add_argument("--init", default="both", choices=("both", *INITS), help="initialisations to run (default: both)")
    p.add_argument("--out", default=None, help="result folder (default: ~/.cache/isoscope/landscape/<key>)")
    add_model_arguments(
        p,
        pooling=False,
        batch_size=8,  # length-sorted chunks of 8 pad little
        batch_help="examples per evaluation forward pass",
        cache_help="recompute everything (do not reuse checkpoints or results in --out)",
        precision=False,
        fp32_note="always fp32 (no --precision): this command trains the model, and int8 is for encoding only",
    )
    add_json_argument(p)


def config_from_args(args: argparse.Namespace):
    """The LandscapeConfig the options describe; InputError when they are out of range."""
    from isoscope.landscape.filter_view import FilterConfig
    from isoscope.landscape.pipeline import LandscapeConfig
    from isoscope.landscape.train import TrainConfig

    train = TrainConfig(
        lr=args.lr,
        epochs=args.epochs,
        batch_size=args.train_batch_size,
        n_train=args.n_train,
        max_length=args.max_length,
        seed=args.seed,
        pooling=args.head_pooling,
    )
    filter_config = FilterConfig(
        directions=args.filter_directions,
        range=tuple(args.filter_range),
        points_1d=args.filter_points,
        grid=args.filter_grid,
        alphas=tuple(args.sharpness_alphas),
    )
    return LandscapeConfig(
        train=train,
        eval_size=args.eval_size,
        eval_chunk=args.batch_size,
        grid=args.grid,
        time_budget=args.time_budget,
        range_a=tuple(args.range),
        range_b=tuple(args.range_b) if args.range_b else None,
        points_1d=args.points_1d,
        hessian_iters=args.hessian_iters,
        hessian_size=args.hessian_size,
        inits=INITS if args.init == "both" else (args.init,),
        reuse=not args.no_cache,
        directions=args.directions,
        filter_config=filter_config,
        learning_heldout=args.learning_heldout,
        seeds=args.seeds,
    ).validate()


def _check_device(args: argparse.Namespace) -> None:
    """The loss surfaces train and are measured on ``--device`` (``isoscope.landscape.placement``), resolved here
    before anything loads, as every command that embeds resolves it (a device this machine lacks is one line); in
    float32 only: a half dtype would change the surface being measured, not just its speed."""
    from isoscope.encode.device import resolve_device

    resolve_device(args.device)
    if args.dtype != "float32":
        raise InputError("landscape trains in float32 only (a half dtype changes the loss surface); drop --dtype")


def run(args: argparse.Namespace) -> dict:
    import torch

    from isoscope.landscape.pipeline import run_landscape
    from isoscope.landscape.tasks import load_task

    config = config_from_args(args)
    if args.threads < 0:
        raise InputError("--threads must be >= 0")
    if args.threads:
        torch.set_num_threads(args.threads)
    _check_device(args)
    if args.out is not None:
        from isoscope.data.outputs import LANDSCAPE_FOLDER

        output_from_args(args, args.out, LANDSCAPE_FOLDER)  # before any work: no input, no folder of another kind
    task1 = load_task(args.task, args.seed, args.stsb_dir)
    task2 = load_task(args.task2 or default_task2(args.task), args.seed, args.stsb_dir)
    encoder = encoder_for(args, space_from_args(args, "landscape"))
    summary = run_landscape(
        encoder,
        task1,
        task2,
        config=config,
        out_dir=args.out,
        progress=lambda desc: progress_bar(args, desc, _unit(desc)),
    )
    emit(args, summary, _lines(summary))
    return summary


# what each stage's bar counts, by the first word of its description in isoscope.landscape.pipeline
_UNITS = {
    "train": "step",
    "1D": "point",
    "surface": "point",
    "filter": "point",
    "rollback": "group",
    "hessian": "iter",
    "learning": "epoch",
}


def _unit(desc: str) -> str:
    return _UNITS.get(desc.split(" ", 1)[0], "it")


def _f(x: object, digits: int = 4) -> str:
    return "nan" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}g}"


def _pm(stat: dict, digits: int = 3) -> str:
    """mean +- sd of a seed statistic (just the mean for one seed)."""
    if stat.get("sd") is None:
        return _f(stat.get("mean"), digits)
    return f"{_f(stat.get('mean'), digits)} +- {_f(stat.get('sd'), 2)}"


def _lines(s: dict) -> list[str]:
    g = s["grid"]
    spp = [s[i]["surface_seconds_per_point"] for i in s["inits"] if s[i].get("surface_seconds_per_point")]
    lines = [
        f"{s['model']}: task {s['task']} (n={s['n_train'][0]}), second task {s['task2']} (n={s['n_train'][1]})",
        f"grid {g['grid']}x{g['grid']} ({g['source']}), "
        + (f"{_f(spp[0], 3)} s per point, " if spp else "surfaces read from the cache, ")
        + f"{s.get('seeds', 1)} seed(s), wall {s['wall_seconds']:.0f} s; results in {s['out_dir']}",
    ]
    for init in s["inits"]:
        r = s[init]
        ax, t1, fl = r["axes"], r["theta1"], r["flatness"]
        hess = fl["hessian"].get("eigenvalue")
        grid_eig = fl["grid_train_loss"].get("eigenvalues_param")
        lines += [
            f"[{init}] theta1: train loss {_f(t1['train_loss'])} acc {_f(t1['train_acc'], 3)} | "
            f"held-out loss {_f(t1['heldout_loss'])} acc {_f(t1['heldout_acc'], 3)}",
            f"  axes: |d1| {_f(ax['norm_delta1'])} |d2| {_f(ax['norm_delta2'])} cos(d1,d2) {_f(ax['cos_delta1_delta2'])} "
            f"kept {_f(ax['kept_fraction'])} cos(e1,e2) {_f(ax['cos_e1_e2'], 2)}",
            f"  theta1 at ({_f(r['theta1_coords']['a'])}, {_f(r['theta1_coords']['b'])}), "
            f"theta2 residual {_f(r['theta2_coords']['residual'], 2)}",
            f"  flatness (not scale-invariant): top Hessian eigenvalue {_f(hess)}, grid curvature (per unit "
            f"parameter) {[_f(v) for v in grid_eig] if grid_eig else 'n/a'}",
            "  rollback (held-out acc): "
            + ", ".join(f"{row['group']} {_f(row['heldout_acc'], 3)}" for row in r["rollback"]),
        ]
        fn = r.get("filter_normalized")
        if fn:
            sh = fn["sharpness"]
            lines.append(
                f"  filter-normalised sharpness (scale-invariant): {_f(sh['mean'])} +- {_f(sh['sd'], 2)} over "
                f"{sh['n_directions']} directions at alpha +-{', +-'.join(_f(a, 3) for a in sh['alphas'] if a > 0)}"
            )
        lc = r.get("learning_curve")
        if lc:
            o = lc["overfitting"]
            lines.append(
                f"  learning curve ({lc['n_heldout']} held-out): lowest held-out loss {_f(o['min_heldout_loss'])} at "
                f"epoch {o['best_epoch']}, last {_f(o['final_heldout_loss'])} (gap {_f(o['overfit_gap'], 3)}), "
                f"held-out acc last {_f(o['final_heldout_acc'], 3)}"
            )
    if s.get("seeds", 1) > 1:
        lines.append(f"over {s['seeds']} seeds (mean +- sd):")
        for init, stats in s["summary"].items():
            keys = ("train_loss_theta1", "heldout_acc_theta1", "hessian_top_eigenvalue", "filter_sharpness")
            lines.append(f"  [{init}] " + ", ".join(f"{k} {_pm(stats[k])}" for k in keys if k in stats))
    return lines
