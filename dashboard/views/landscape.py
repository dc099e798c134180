"""Loss surfaces: fine-tuning from pre-trained weights versus training the same architecture from scratch.

Hao et al. (2019), measured rather than assumed: the plane's axes come from two fine-tuning runs (delta1,
and delta2 orthogonalised to it, with cos(delta1, delta2) and the share of delta2 that survives shown),
checkpoints get signed least-squares coordinates with their off-plane residual, and the surface value under
each checkpoint is shown next to its true loss.
"""

from __future__ import annotations

from datetime import datetime

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from core.errors import InputError
from dashboard import ui
from dashboard.services import landscape as services

N_TRAIN = (16, 32, 64, 128)
GRIDS = (3, 5, 7, 9)
EVAL_SIZES = (8, 16, 32, 64)
MAX_LENGTHS = (32, 64, 128)
LRS = (2e-5, 5e-5, 1e-4, 3e-4)
INIT_LABEL = {"pretrained": "Pre-trained", "scratch": "From scratch"}
INIT_COLOUR = {"pretrained": "#1f77b4", "scratch": "#d62728"}
RUNS = (("task1", "task-1 run θ0 → θ1", "θ1", "circle"), ("task2", "task-2 run θ0 → θ2", "θ2", "diamond"))
ROLLBACK_METRICS = ("heldout_acc", "heldout_loss", "train_acc", "train_loss")
LOW_KEPT = 0.3  # below this share of delta2 surviving Gram-Schmidt, the second axis is mostly amplified residue
HIGH_RESIDUAL = 0.5  # off-plane share above which the surface under a checkpoint says little about it
CLI = (
    "HF_HUB_OFFLINE=1 python -m core landscape --task stsb --task2 demo-topic \\\n"
    "    --n-train 300 --epochs 3 --grid 11 --eval-size 64"
)


def fmt(x: object, digits: int = 4) -> str:
    return "n/a" if x is None or not np.isfinite(float(x)) else f"{float(x):.{digits}g}"


def run_label(summary: dict) -> str:
    cfg, train = summary.get("config", {}), summary.get("config", {}).get("train", {})
    g = summary.get("grid", {}).get("grid", "?")
    when = datetime.fromtimestamp(summary.get("mtime", 0)).strftime("%Y-%m-%d %H:%M")
    n = summary.get("n_train", ["?"])[0]
    return (
        f"{summary.get('task', '?')} + {summary.get('task2', '?')} · n={n} · {train.get('epochs', '?')} ep · "
        f"grid {g}x{g} · eval {cfg.get('eval_size', '?')} · {summary.get('model', '?')} · {when}"
    )


# ------------------------------------------------------------------ figures


def add_trajectory(fig: go.Figure, traj: pd.DataFrame, z: str | None = None) -> None:
    """Both runs' checkpoints at their signed (a, b), markers + line; at their true ``z`` in 3D."""
    for run, name, end, symbol in RUNS:
        t = traj[traj["run"] == run].sort_values("epoch")
        if t.empty:
            continue
        last = t["epoch"].max()
        text = ["θ0" if e == 0 else end if e == last else f"ep {e}" for e in t["epoch"]]
        custom = t[["epoch", "residual", "train_loss", "surface_train_loss", "heldout_loss"]].to_numpy(float)
        hover = (
            "epoch %{customdata[0]:.0f}<br>a %{x:.3f}, b %{y:.3f}<br>off-plane residual %{customdata[1]:.3f}"
            "<br>true train loss %{customdata[2]:.4f}<br>surface train loss %{customdata[3]:.4f}"
            "<br>true held-out loss %{customdata[4]:.4f}<extra>" + name + "</extra>"
        )
        common = {"name": name, "text": text, "customdata": custom, "hovertemplate": hover}
        if z is None:
            fig.add_trace(
                go.Scatter(
                    x=t["a"],
                    y=t["b"],
                    mode="lines+markers+text",
                    textposition="top center",
                    marker={"symbol": symbol, "size": 9, "color": "white", "line": {"width": 2, "color": "black"}},
                    line={"color": "white", "width": 2, "dash": "solid" if run == "task1" else "dot"},
                    textfont={"color": "white"},
                    **common,
                )
            )
        else:
            fig.add_trace(
                go.Scatter3d(
                    x=t["a"],
                    y=t["b"],
                    z=t[z],
                    mode="lines+markers+text",
                    marker={"size": 4, "color": "black", "symbol": symbol},
                    line={"color": "black", "width": 4},
                    **common,
                )
            )


def contour(surface: dict, metric: str, traj: pd.DataFrame, zrange: tuple[float, float], title: str) -> go.Figure:
    a, b, z = surface["alpha"], surface["beta"], np.asarray(surface[metric])  # z (n_a, n_b)
    fig = go.Figure(
        go.Contour(
            x=a,
            y=b,
            z=z.T,
            zmin=zrange[0],
            zmax=zrange[1],
            colorscale="Viridis",
            contours={"showlabels": True, "labelfont": {"color": "white", "size": 10}},
            colorbar={"title": title},
            hovertemplate="a %{x:.3f}, b %{y:.3f}<br>" + title + " %{z:.4f}<extra></extra>",
        )
    )
    add_trajectory(fig, traj)
    fig.update_layout(
        height=430,
        margin={"t": 30},
        xaxis_title="a (along δ1)",
        yaxis_title="b (along δ2 ⊥ δ1)",
        legend={"orientation": "h", "y": -0.2},
    )
    return fig


def surface3d(surface: dict, traj: pd.DataFrame, zrange: tuple[float, float]) -> go.Figure:
    z = np.asarray(surface["train_loss"])  # (n_a, n_b)
    fig = go.Figure(
        go.Surface(
            x=surface["alpha"],
            y=surface["beta"],
            z=z.T,
            cmin=zrange[0],
            cmax=zrange[1],
            colorscale="Viridis",
            opacity=0.9,
            showscale=False,
            hovertemplate="a %{x:.3f}, b %{y:.3f}<br>train loss %{z:.4f}<extra></extra>",
        )
    )
    add_trajectory(fig, traj, z="train_loss")
    fig.update_layout(
        height=480,
        margin={"t": 10, "l": 0, "r": 0, "b": 0},
        scene={
            "xaxis_title": "a (δ1)",
            "yaxis_title": "b (δ2⊥)",
            "zaxis": {"title": "train loss", "range": list(zrange)},
        },
        legend={"orientation": "h"},
    )
    return fig


def curves(df: pd.DataFrame, metrics: tuple[str, str], title: str) -> go.Figure:
    fig = go.Figure()
    for init, part in df.groupby("init", sort=False):
        for metric, dash in zip(metrics, ("solid", "dot"), strict=True):
            fig.add_trace(
                go.Scatter(
                    x=part["alpha"],
                    y=part[metric],
                    mode="lines+markers",
                    name=f"{INIT_LABEL.get(init, init)} · {metric.split('_')[0]}",
                    line={"color": INIT_COLOUR.get(init), "dash": dash},
                )
            )
    for x, label in ((0.0, "θ0"), (1.0, "θ1")):
        fig.add_vline(x=x, line_dash="dash", line_color="grey", annotation_text=label)
    fig.update_layout(height=380, xaxis_title="α in θ0 + α δ1", yaxis_title=title, margin={"t": 30})
    return fig


def bars(df: pd.DataFrame, y: str, title: str, log: bool = False) -> go.Figure:
    fig = go.Figure(
        [
            go.Bar(x=part["group"], y=part[y], name=INIT_LABEL.get(init, init), marker_color=INIT_COLOUR.get(init))
            for init, part in df.groupby("init", sort=False)
        ]
    )
    fig.update_layout(barmode="group", height=360, yaxis_title=title, margin={"t": 30}, xaxis_title="group restored")
    if log:
        fig.update_yaxes(type="log")
    return fig


def zrange(view: services.LandscapeView, metric: str, with_traj: bool = False) -> tuple[float, float]:
    """One colour/height range for both initialisations, so flatness compares by eye."""
    values = [np.asarray(ir.surface[metric], float).ravel() for ir in view.inits.values() if metric in ir.surface]
    if with_traj and not view.trajectory.empty:
        values.append(view.trajectory[metric].to_numpy(float))
    v = np.concatenate(values) if values else np.array([0.0, 1.0])
    v = v[np.isfinite(v)]
    lo, hi = (float(v.min()), float(v.max())) if len(v) else (0.0, 1.0)
    return (lo, hi if hi > lo else lo + 1e-6)


# ------------------------------------------------------------------ page

s = ui.settings()
st.title("Loss surfaces")
st.caption(
    "Hao et al. (2019): fine-tuning from pre-trained weights finds wider, flatter optima along smoother paths "
    "than training the same architecture from scratch, and lower layers change least. Here both start the "
    "same classifier (encoder + mean pooling + linear head) and train with the same recipe. The plane is "
    "θ0 + a·δ1 + b·δ2⊥: δ1 = θ1 − θ0 from task 1, δ2 from a second task, orthogonalised to δ1 (Gram-Schmidt); "
    "how much of δ2 survives is shown, not hidden."
)

# ---- live run
with st.expander("Run a small experiment live", expanded=not services.landscape_runs(), icon=":material/play_arrow:"):
    if s.is_encoder_decoder:
        st.info("Loss surfaces need an encoder-only (BERT-like) model: choose one in the sidebar.")
    tasks = services.landscape_tasks()
    c = st.columns(4)
    task = c[0].selectbox(
        "Task (first axis)",
        tasks,
        key="land_task",
        help="demo-topic: topic of each demo text (8 classes); demo-pairs: demo pairs similar when score >= 3; "
        "stsb: STS-B pairs (train / dev), when ../shared/data/stsb is present.",
    )
    n_train = c[1].select_slider("Training examples per task", N_TRAIN, 64, key="land_n")
    epochs = c[2].select_slider("Epochs", (1, 2, 3), 2, key="land_epochs")
    grid = c[3].select_slider("Grid points per axis", GRIDS, 5, key="land_grid")
    c = st.columns(4)
    lr = c[0].select_slider("Learning rate", LRS, 5e-5, key="land_lr", format_func=str)
    max_length = c[1].select_slider("Max tokens", MAX_LENGTHS, 64, key="land_maxlen")
    eval_size = c[2].select_slider(
        "Evaluation examples",
        EVAL_SIZES,
        16,
        key="land_eval",
        help="Fixed training and held-out examples (this many of each) evaluated at every point.",
    )
    hessian_iters = int(
        c[3].number_input(
            "Hessian iterations",
            0,
            30,
            3,
            key="land_hess",
            help="Power-iteration steps for the top Hessian eigenvalue at θ1 (0 skips it; each is a double backward).",
        )
    )
    st.caption(
        f"Second axis: {services.landscape_task2(task)}. Model: {ui.literal(s.model_label)}. Four runs (pre-trained "
        f"and scratch × two tasks), AdamW with batch 16 and linear decay; every epoch's weights are kept on disk "
        f"(about {services.landscape_disk_estimate(s.model, epochs):,.0f} MB) under "
        f"{ui.literal(services.landscape_root())}. A live run is a sketch: for faithful numbers, precompute a "
        "larger one from the command line (`python -m core landscape`)."
    )
    request = (s.model, task, n_train, epochs, float(lr), grid, max_length, eval_size, hessian_iters)
    if st.button("Run live", type="primary", key="land_run", disabled=s.is_encoder_decoder):
        st.session_state["land_request"] = request
        st.session_state.pop("land_done", None)
        st.session_state.pop("land_error", None)
    if st.session_state.get("land_request") == request and st.session_state.get("land_done") != request:
        try:
            out_dir = services.landscape_run(*request[:8], hessian_iters=hessian_iters)
        except InputError as exc:
            st.session_state["land_error"] = (request, str(exc))
            st.session_state.pop("land_request", None)
        else:
            st.session_state["land_done"] = request
            st.session_state["land_pick"] = out_dir
    error = st.session_state.get("land_error")
    if error and error[0] == request:
        ui.user_error(error[1])
    elif st.session_state.get("land_done") == request:
        st.success("Finished: the result is selected below.", icon=":material/check:")
    else:
        st.info("Press **Run live** to train and measure this configuration (cached: a second run is instant).")

# ---- results
runs = services.landscape_runs()
if not runs:
    st.info(
        f"No results yet in {ui.literal(services.landscape_root())}. Run a small experiment above, or precompute "
        "a full one from the command line (re-running resumes from what is on disk):",
        icon=":material/info:",
    )
    st.code(CLI, language="bash")
    st.stop()

labels = {r["out_dir"]: run_label(r) for r in runs}
if st.session_state.get("land_pick") not in labels:
    st.session_state["land_pick"] = runs[0]["out_dir"]
pick = st.selectbox("Result", list(labels), key="land_pick", format_func=labels.get)
try:
    view = services.landscape_view(pick)
except InputError as exc:
    ui.user_error(exc)
    st.stop()

sm = view.summary
tc = sm.get("config", {}).get("train", {})
st.caption(
    f"Model {ui.literal(sm.get('model'))} · task 1 {ui.literal(sm.get('task'))} (n = {sm['n_train'][0]}), task 2 "
    f"{ui.literal(sm.get('task2'))} (n = {sm['n_train'][1]}) · {tc.get('epochs')} epochs at lr {tc.get('lr')} · "
    f"{sm['n_eval']['train']} + {sm['n_eval']['heldout']} evaluation examples per point · "
    f"{sm['wall_seconds']:.0f} s · {view.disk_mb:,.0f} MB on disk."
)
ui.show_warnings(sm.get("warnings", []))
with st.expander("Precompute a full run from the command line", icon=":material/terminal:"):
    st.code(CLI, language="bash")
    st.caption(
        f"Results go to {ui.literal(services.landscape_root())} and appear in the selector; re-running resumes "
        "from what is on disk."
    )
inits = [i for i in ("pretrained", "scratch") if i in view.inits]
if len(inits) < 2:
    st.warning("Only one initialisation in this result: the comparison needs both (CLI --init both).")
axes = view.axes.set_index("init")
traj = view.trajectory

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

st.subheader("Along δ1")
if not view.curves.empty:
    c1, c2 = st.columns(2)
    with c1:
        ui.chart(curves(view.curves, ("train_loss", "heldout_loss"), "loss"), "landscape_curve_loss")
    with c2:
        ui.chart(curves(view.curves, ("train_acc", "heldout_acc"), "accuracy"), "landscape_curve_acc")
    st.caption("Solid: training examples; dotted: held-out examples. α = 0 is θ0, α = 1 is θ1.")

st.subheader("Training loss on the plane")
st.caption(
    "Markers: every epoch's checkpoint at its signed least-squares coordinates (a, b); hover for the off-plane "
    "residual and the true loss. Both initialisations share one colour scale, so flatness compares by eye."
)
loss_range = zrange(view, "train_loss")
for col, init in zip(st.columns(len(inits)), inits, strict=True):
    ir, t = view.inits[init], traj[traj["init"] == init]
    with col:
        st.markdown(f"**{INIT_LABEL[init]}**")
        if "train_loss" in ir.surface:
            ui.chart(contour(ir.surface, "train_loss", t, loss_range, "train loss"), f"landscape_contour_{init}")
for col, init in zip(st.columns(len(inits)), inits, strict=True):
    ir, t = view.inits[init], traj[traj["init"] == init]
    with col:
        if "train_loss" in ir.surface:
            ui.chart(surface3d(ir.surface, t, zrange(view, "train_loss", True)), f"landscape_surface_{init}")

st.subheader("Generalisation: held-out error on the plane")
err_range = zrange(view, "heldout_error")
for col, init in zip(st.columns(len(inits)), inits, strict=True):
    ir, t = view.inits[init], traj[traj["init"] == init]
    with col:
        st.markdown(f"**{INIT_LABEL[init]}**")
        if "heldout_error" in ir.surface:
            ui.chart(contour(ir.surface, "heldout_error", t, err_range, "held-out error"), f"landscape_error_{init}")

st.subheader("Flatness at θ1")
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
d = st.columns(3)
with d[0]:
    ui.download_table(view.axes, "landscape_axes_flatness", "Download axes + flatness CSV")
with d[1]:
    ui.download_table(view.curves, "landscape_curves", "Download 1D curves CSV")
with d[2]:
    ui.download_table(view.surfaces, "landscape_surfaces", "Download surfaces CSV")
