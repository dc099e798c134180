"""Loss surfaces: fine-tuning from pre-trained weights versus training the same architecture from scratch.

Hao et al. (2019), measured rather than assumed, in two views: the task plane (signed checkpoint coordinates,
off-plane residuals, surface vs true loss) for trajectories, and filter-normalised directions (Li et al. 2018,
the same alpha range for both initialisations, a scale-invariant sharpness) for flatness. Learning curves per
epoch test the overfitting claim; with several seeds, headline numbers are mean +- sd with seed bands.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from isoscope.dashboard import classroom, ui
from isoscope.dashboard.figures.landscape import (
    FILTER_AXES,
    INIT_LABEL,
    band_curves,
    bars,
    contour,
    curves,
    fmt,
    headline_table,
    pm,
    run_label,
    surface3d,
    zrange,
)
from isoscope.dashboard.services import landscape as services
from isoscope.errors import InputError
from isoscope.landscape.live import LIVE_DEFAULTS, LiveRun
from isoscope.landscape.tasks import available_tasks

# its place in the navigation and its line on the Home page (dashboard/navigation.py)
PAGE = {
    "section": "Model anatomy",
    "title": "Loss surfaces",
    "icon": ":material/landscape:",
    "order": 30,
    "teaches": "Why pre-training helps: fine-tuning vs training from scratch on the same loss landscape.",
}

N_TRAIN = (16, 32, 64, 128)
GRIDS = (3, 5, 7, 9)
EVAL_SIZES = (8, 16, 32, 64)
MAX_LENGTHS = (32, 64, 128)
LRS = (2e-5, 5e-5, 1e-4, 3e-4)
ROLLBACK_METRICS = ("heldout_acc", "heldout_loss", "train_acc", "train_loss")
LOW_KEPT = 0.3  # below this share of delta2 surviving Gram-Schmidt, the second axis is mostly amplified residue
HIGH_RESIDUAL = 0.5  # off-plane share above which the surface under a checkpoint says little about it
CLI = (
    "HF_HUB_OFFLINE=1 python -m isoscope landscape --task stsb --task2 demo-topic \\\n"
    "    --n-train 300 --epochs 3 --grid 11 --eval-size 64 --directions both --seeds 3"
)
SCALE_NOTE = (
    "Scale-invariant: rescaling a layer that feeds a LayerNorm (weight and bias times c) leaves the function, "
    "the filter-normalised directions relative to it, and so this number unchanged. The top Hessian eigenvalue "
    "and the grid curvature are in raw parameter units: the same rescaling changes them without changing the model."
)


# ------------------------------------------------------------------ page

s = ui.settings()
st.title("Loss surfaces")
ui.needs_model("Loss surfaces")
st.caption(
    "Hao et al. (2019): fine-tuning from pre-trained weights finds wider, flatter optima along smoother paths "
    "than training the same architecture from scratch, is robust to overfitting, and lower layers change least. "
    "Here both start the same classifier (encoder + mean pooling + linear head) and train with the same recipe. "
    "Two views: the task plane θ0 + a·δ1 + b·δ2⊥ (δ1 = θ1 − θ0 from task 1, δ2 from a second task, "
    "orthogonalised to δ1) shows the trajectories; filter-normalised random directions around θ1 (Li et al. "
    "2018) show flatness on a scale that compares across the two initialisations."
)

# ---- live run
with st.expander("Run a small experiment live", expanded=not services.landscape_runs(), icon=":material/play_arrow:"):
    if s.is_encoder_decoder:
        st.info("Loss surfaces need an encoder-only (BERT-like) model: choose one in the sidebar.")
    tasks = available_tasks()
    c = st.columns(4)
    task = c[0].selectbox(
        "Task (first axis)",
        tasks,
        index=tasks.index(LIVE_DEFAULTS["task"]),
        key="land_task",
        help="demo-topic: topic of each demo text (one class per topic); demo-pairs: demo pairs similar when "
        "score >= 3; "
        "stsb: STS-B pairs (train / dev), when ../shared/data/stsb is present.",
    )
    n_train = c[1].select_slider("Training examples per task", N_TRAIN, LIVE_DEFAULTS["n_train"], key="land_n")
    epochs = c[2].select_slider("Epochs", (1, 2, 3), LIVE_DEFAULTS["epochs"], key="land_epochs")
    grid = c[3].select_slider("Grid points per axis", GRIDS, LIVE_DEFAULTS["grid"], key="land_grid")
    c = st.columns(4)
    lr = c[0].select_slider("Learning rate", LRS, LIVE_DEFAULTS["lr"], key="land_lr", format_func=str)
    max_length = c[1].select_slider("Max tokens", MAX_LENGTHS, LIVE_DEFAULTS["max_length"], key="land_maxlen")
    eval_size = c[2].select_slider(
        "Evaluation examples",
        EVAL_SIZES,
        LIVE_DEFAULTS["eval_size"],
        key="land_eval",
        help="Fixed training and held-out examples (this many of each) evaluated at every point.",
    )
    hessian_iters = int(
        c[3].number_input(
            "Hessian iterations",
            0,
            30,
            LIVE_DEFAULTS["hessian_iters"],
            key="land_hess",
            help="Power-iteration steps for the top Hessian eigenvalue at θ1 (0 skips it; each is a double backward).",
        )
    )
    request = LiveRun(
        s.model, task, n_train, epochs, float(lr), grid, max_length, eval_size, hessian_iters=hessian_iters
    )
    st.caption(
        f"Second axis: {request.task2}. Model: {ui.literal(s.model_label)}, in float32 on "
        f"{services.live_device(request)} (the sidebar's Device). Four runs (pre-trained "
        f"and scratch × two tasks, one seed), AdamW with batch {request.BATCH_SIZE} and linear decay, both views "
        f"({request.FILTER_DIRECTIONS} filter-normalised directions); every epoch's weights are kept on disk "
        f"(about {request.disk_mb(services.parameter_count(s.model)):,.0f} MB) under "
        f"{ui.literal(classroom.shown_path(services.landscape_root()))}. A live run is a sketch: for faithful "
        "numbers, precompute a larger one from the command line (`python -m isoscope landscape`)."
    )
    estimate = st.empty()  # what the run will cost, until it has run
    if not s.is_encoder_decoder:
        try:
            with estimate:
                ui.estimate(services.live_cost(request), device=services.live_device(request))
        except InputError:  # a task that cannot load: the run says so when it is pressed
            pass
    if st.button("Run live", type="primary", key="land_run", disabled=s.is_encoder_decoder):
        st.session_state["land_request"] = request
        st.session_state.pop("land_done", None)
        st.session_state.pop("land_error", None)
    if st.session_state.get("land_request") == request and st.session_state.get("land_done") != request:
        try:
            out_dir = services.landscape_run(request)
        except InputError as exc:
            st.session_state["land_error"] = (request, str(exc))
            st.session_state.pop("land_request", None)
        else:
            st.session_state["land_done"] = request
            st.session_state["land_pick"] = out_dir
            estimate.empty()  # done: it costs nothing now
    error = st.session_state.get("land_error")
    if error and error[0] == request:
        ui.user_error(classroom.without_server_paths(error[1]))
    elif st.session_state.get("land_done") == request:
        st.success("Finished: the result is selected below.", icon=":material/check:")
    else:
        st.info("Press **Run live** to train and measure this configuration (cached: a second run is instant).")

# ---- results
runs = services.landscape_runs()
if not runs:
    st.info(
        f"No results yet in {ui.literal(classroom.shown_path(services.landscape_root()))}. Run a small experiment "
        "above, or precompute a full one from the command line (re-running resumes from what is on disk):",
        icon=":material/info:",
    )
    st.code(CLI, language="bash")
    st.stop()

labels = {r["out_dir"]: run_label(r, classroom.shown_name) for r in runs}
if st.session_state.get("land_pick") not in labels:
    st.session_state["land_pick"] = runs[0]["out_dir"]
pick = st.selectbox("Result", list(labels), key="land_pick", format_func=labels.get)
try:
    view = services.landscape_view(pick)
except InputError as exc:
    ui.user_error(classroom.without_server_paths(str(exc)))
    st.stop()

sm = view.summary
n_seeds = sm.seeds.n_seeds if sm.seeds is not None else 1
st.caption(
    f"Model {ui.literal(classroom.shown_name(sm.model))} · task 1 {ui.literal(classroom.shown_name(sm.task))} "
    f"(n = {sm.n_train[0]}), task 2 {ui.literal(classroom.shown_name(sm.task2))} (n = {sm.n_train[1]}) · "
    f"{sm.epochs} epochs at lr {sm.lr} · "
    f"{sm.n_eval_train} + {sm.n_eval_heldout} evaluation examples per point · views: {sm.directions} · "
    f"{n_seeds} seed{'s' if n_seeds != 1 else ''} · {sm.wall_seconds:.0f} s · {view.disk_mb:,.0f} MB on disk."
)
ui.show_warnings(sm.warnings)
with st.expander("Precompute a full run from the command line", icon=":material/terminal:"):
    st.code(CLI, language="bash")
    st.caption(
        f"Results go to {ui.literal(classroom.shown_path(services.landscape_root()))} and appear in the selector; "
        "re-running resumes from what is on disk."
    )
inits = [i for i in ("pretrained", "scratch") if i in view.inits]
if len(inits) < 2:
    st.warning("Only one initialisation in this result: the comparison needs both (CLI --init both).")
axes = view.axes.set_index("init")
traj = view.trajectory

st.subheader("Headline numbers")
if view.seeds.empty:
    st.caption("One run, no seeds recorded (results written before --seeds): no spread to show.")
else:
    st.dataframe(headline_table(view.seeds), width="stretch", hide_index=True)
    st.caption(
        (f"Mean ± sample sd over {n_seeds} seeds" if n_seeds > 1 else "One seed, so no spread to show")
        + " (each seed repeats sampling, head "
        "init, scratch init and data order). scale_invariant: yes for the filter-normalised sharpness, no for "
        "the Hessian eigenvalue and the grid curvature, blank where the question does not apply."
    )
    ui.download_table(view.seeds, "landscape_seeds", "Download headline numbers CSV")

st.subheader("The plane")
for col, init in zip(st.columns(len(inits)), inits, strict=True):
    r = axes.loc[init]
    with col:
        st.markdown(f"**{INIT_LABEL[init]}**")
        m = st.columns(3)
        m[0].metric(
            "cos(δ1, δ2)",
            fmt(r["cos_delta1_delta2"]),
            help="Cosine between the task-1 and task-2 displacements (encoder only for task 2).",
        )
        m[1].metric(
            "δ2 kept",
            f"{100 * r['kept_fraction_delta2']:.1f}%",
            help="|δ2⊥| / |δ2| = sqrt(1 − cos²): the share of δ2 that the second axis is made of.",
        )
        m[2].metric("cos(e1, e2)", fmt(r["cos_e1_e2"], 2), help="Measured between the two axes: ~0 after Gram-Schmidt.")
        st.caption(
            f"|δ1| = {fmt(r['norm_delta1'])}, |δ2| = {fmt(r['norm_delta2'])}; θ2 at "
            f"({fmt(r['theta2_a'], 3)}, {fmt(r['theta2_b'], 3)}), off-plane residual {fmt(r['theta2_residual'], 2)}."
        )
        if r["kept_fraction_delta2"] < LOW_KEPT:
            st.warning(
                f"Only {100 * r['kept_fraction_delta2']:.0f}% of δ2 survives: the second axis is a small residue of "
                "δ2 stretched to |δ1|; read the b direction with care."
            )

st.subheader("Along δ1 (task plane)")
if not view.curves.empty:
    c1, c2 = st.columns(2)
    with c1:
        ui.chart(curves(view.curves, ("train_loss", "heldout_loss"), "loss"), "landscape_curve_loss")
    with c2:
        ui.chart(curves(view.curves, ("train_acc", "heldout_acc"), "accuracy"), "landscape_curve_acc")
    st.caption("Solid: training examples; dotted: held-out examples. α = 0 is θ0, α = 1 is θ1.")

st.subheader("Training loss on the task plane: trajectories")
st.caption(
    "Markers: every epoch's checkpoint at its signed least-squares coordinates (a, b); hover for the off-plane "
    "residual and the true loss. One colour scale for both, but NOT a flatness comparison: each plane's axes are "
    "scaled to its own |δ1|, and fine-tuning from pre-trained weights moves far less than training from scratch, "
    "so one unit of a is a different distance in the two. Compare flatness in the filter-normalised view below."
)
task_surfaces = [ir.surface for ir in view.inits.values()]
loss_range = zrange(task_surfaces, "train_loss")
for col, init in zip(st.columns(len(inits)), inits, strict=True):
    ir, t = view.inits[init], traj[traj["init"] == init]
    with col:
        st.markdown(f"**{INIT_LABEL[init]}**")
        if ir.surface is not None:
            ui.chart(contour(ir.surface, "train_loss", t, loss_range, "train loss"), f"landscape_contour_{init}")
for col, init in zip(st.columns(len(inits)), inits, strict=True):
    ir, t = view.inits[init], traj[traj["init"] == init]
    with col:
        if ir.surface is not None:
            ui.chart(surface3d(ir.surface, t, zrange(task_surfaces, "train_loss", traj)), f"landscape_surface_{init}")

st.subheader("Generalisation: held-out error on the plane")
err_range = zrange(task_surfaces, "heldout_error")
for col, init in zip(st.columns(len(inits)), inits, strict=True):
    ir, t = view.inits[init], traj[traj["init"] == init]
    with col:
        st.markdown(f"**{INIT_LABEL[init]}**")
        if ir.surface is not None:
            ui.chart(contour(ir.surface, "heldout_error", t, err_range, "held-out error"), f"landscape_error_{init}")

st.subheader("Flatness that compares: filter-normalised directions around θ1")
st.caption(
    "Li et al. (2018): a Gaussian direction d with every filter (row of a weight matrix, row of an embedding "
    "table) rescaled to the norm of the same filter of θ1, biases and LayerNorm parameters zero; α = 1 moves "
    "each filter by its own length. The same α range, directions per seed and colour scale for both "
    "initialisations, so here flatness does compare by eye."
)
fc = view.filter_curves
if fc.empty:
    st.info("This result has no filter-normalised view (written before it existed, or run with --directions task).")
else:
    bands = view.filter_bands
    c1, c2 = st.columns(2)
    with c1:
        fig = band_curves(bands, "alpha", "train_loss", "training loss", "α in θ1 + α d", ((0.0, "θ1"),))
        ui.chart(fig, "landscape_filter_curve_loss")
    with c2:
        fig = band_curves(bands, "alpha", "heldout_acc", "held-out accuracy", "α in θ1 + α d", ((0.0, "θ1"),))
        ui.chart(fig, "landscape_filter_curve_acc")
    st.caption("Mean over the random directions, band ± one sample sd across directions (first seed).")
    f_range = zrange([ir.filter_surface for ir in view.inits.values()], "train_loss")
    for col, init in zip(st.columns(len(inits)), inits, strict=True):
        g = view.inits[init].filter_surface
        with col:
            st.markdown(f"**{INIT_LABEL[init]}**")
            if g is not None:
                fig = contour(g, "train_loss", None, f_range, "train loss", FILTER_AXES)
                ui.chart(fig, f"landscape_filter_surface_{init}")
    for col, init in zip(st.columns(len(inits)), inits, strict=True):
        fn, over = view.inits[init].filter_normalized, sm.seeds.stats[init] if n_seeds > 1 else None
        if fn is not None:
            sh = over["filter_sharpness"] if over else fn.sharpness
            col.metric(
                f"Sharpness · {INIT_LABEL[init]}",
                pm(sh.mean, sh.sd, 3),
                help=f"Mean loss increase L(θ1 + αd) − L(θ1) over α in {', '.join(f'{a:g}' for a in fn.sharpness.alphas)}"
                f" and {fn.n_directions} directions; ± sample sd over {'seeds' if over else 'directions'}. Scale-invariant.",
            )
    st.caption(SCALE_NOTE)
    st.dataframe(view.sharpness.round(5), width="stretch", hide_index=True)

st.subheader("Flatness at θ1 (raw parameter units)")
for col, init in zip(st.columns(len(inits)), inits, strict=True):
    r = axes.loc[init]
    with col:
        st.markdown(f"**{INIT_LABEL[init]}**")
        m = [*st.columns(2), *st.columns(2)]
        if pd.isna(r["hessian_top_eigenvalue"]):
            m[0].metric("Top Hessian eigenvalue", "skipped", help="Run with Hessian iterations > 0.")
        else:
            state = "converged" if r["hessian_converged"] else "NOT converged (raise the iterations)"
            m[0].metric(
                "Top Hessian eigenvalue",
                fmt(r["hessian_top_eigenvalue"]),
                help=f"Power iteration at θ1: {r['hessian_iterations']} Hessian-vector products on "
                f"{r['hessian_examples']} training examples, {state}.",
            )
        m[1].metric(
            "Grid curvature (max)",
            fmt(r["grid_curvature_max"]),
            help="Largest curvature of the training-loss grid around θ1 per unit parameter step (quadratic fit "
            f"to 3x3 points, rmse {fmt(r['grid_fit_rmse'], 2)}); bounded by the top Hessian eigenvalue.",
        )
        m[2].metric("Train loss at θ1", fmt(r["theta1_train_loss"]))
        m[3].metric("Held-out acc at θ1", fmt(r["theta1_heldout_acc"], 3))
        if r["hessian_converged"] is False:
            st.caption("The power iteration did not converge: the eigenvalue is a lower estimate.")
st.caption(
    "Not scale-invariant: the top Hessian eigenvalue and the grid curvature change when a layer feeding a "
    "LayerNorm is rescaled, although the model computes the same function. Compare the sharpness above instead."
)

st.subheader("Learning curves: the overfitting test")
lc = view.learning
if lc.empty:
    st.info("This result has no learning curves (written before they existed, or run with --learning-heldout 0).")
else:
    c1, c2 = st.columns(2)
    with c1:
        ui.chart(band_curves(lc, "epoch", "heldout_loss", "held-out loss", "epoch"), "landscape_learning_loss")
    with c2:
        ui.chart(band_curves(lc, "epoch", "heldout_acc", "held-out accuracy", "epoch"), "landscape_learning_acc")
    stats = sm.seeds.stats if sm.seeds is not None else {}
    lines = []
    for init in inits:
        g, b = stats.get(init, {}).get("lc_overfit_gap"), stats.get(init, {}).get("lc_best_epoch")
        if g is not None and b is not None:
            lines.append(
                f"{INIT_LABEL[init]}: lowest held-out loss at epoch {pm(b.mean, b.sd, 2)}, then a rise of "
                f"{pm(g.mean, g.sd, 3)} by the last epoch ({sm.epochs})."
            )
    n_held = [ir.learning_curve.n_heldout for ir in view.inits.values() if ir.learning_curve is not None]
    st.caption(
        f"Held-out loss and accuracy of the task-1 run after every epoch (epoch 0 = θ0) on {n_held[0] if n_held else '?'} "
        f"held-out examples; bands ± one sample sd over {n_seeds} seed(s). Overfitting shows as a held-out loss "
        "that rises after its minimum. " + " ".join(lines)
    )
    ui.download_table(lc, "landscape_learning_curves", "Download learning curves CSV")

st.subheader("Trajectories: surface value vs true loss")
st.caption(
    "(a, b) solve the least-squares projection onto the plane (signed: a < 0 or b < 0 is possible); residual = "
    "|off-plane part| / |θ − θ0|. Where the residual is large, the surface under a checkpoint is not its loss."
)
if not traj.empty:
    for col, init in zip(st.columns(len(inits)), inits, strict=True):
        t = traj[traj["init"] == init]
        col.metric(f"Max off-plane residual · {INIT_LABEL[init]}", fmt(t["residual"].max(), 3))
    if (traj["residual"] > HIGH_RESIDUAL).any():
        st.warning(
            f"Some checkpoints lie mostly off the plane (residual > {HIGH_RESIDUAL}): their markers show a "
            "projection, and the surface value there differs from the true loss (see the table)."
        )
    cols = ["init", "run", "epoch", "a", "b", "residual", "distance", "train_loss", "surface_train_loss"]
    cols += ["surface_minus_true_train_loss", "heldout_loss", "surface_heldout_loss", "train_acc", "heldout_acc"]
    st.dataframe(traj[cols].round(4), width="stretch", hide_index=True)
    ui.download_table(traj, "landscape_trajectory")

st.subheader("Layer rollback")
st.caption(
    "θ1 with one group of layers put back to θ0 (head kept). If lower layers changed least, restoring them costs "
    "least. 'none' is θ1 as trained; 'encoder' restores the whole encoder."
)
rb = view.rollback
if not rb.empty:
    metric = st.radio("Metric", ROLLBACK_METRICS, horizontal=True, key="land_rb_metric")
    c1, c2 = st.columns(2)
    with c1:
        ui.chart(bars(rb, metric, metric.replace("_", " ")), "landscape_rollback")
    with c2:
        moved = rb[rb["group"] != "none"]
        ui.chart(bars(moved, "relative_change", "|Δ group| / |θ0 group|", log=True), "landscape_rollback_change")
    st.dataframe(rb.round(4), width="stretch", hide_index=True)
    ui.download_table(rb, "landscape_rollback")

st.subheader("All numbers")
st.dataframe(view.axes.round(4), width="stretch", hide_index=True)
downloads = (
    (view.axes, "landscape_axes_flatness", "Download axes + flatness CSV"),
    (view.curves, "landscape_curves", "Download 1D curves CSV"),
    (view.surfaces, "landscape_surfaces", "Download surfaces CSV"),
    (view.filter_curves, "landscape_filter_curves", "Download filter-normalised curves CSV"),
    (view.filter_surfaces, "landscape_filter_surfaces", "Download filter-normalised surfaces CSV"),
)
for col, (table, name, label) in zip(st.columns(len(downloads)), downloads, strict=True):
    with col:
        ui.download_table(table, name, label)
