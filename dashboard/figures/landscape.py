"""The Loss surfaces page's figures and tables: trajectories on the task plane, contour and 3-D surfaces,
1D curves, seed and direction bands, the rollback bars, and the labels and numbers around them.

Pure functions of typed results (``isoscope.landscape.results``) and their tables
(``isoscope.landscape.tables``); one colour per initialisation throughout.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import datetime

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from isoscope.dashboard.text import plot_text

INIT_LABEL = {"pretrained": "Pre-trained", "scratch": "From scratch"}
INIT_COLOUR = {"pretrained": "#1f77b4", "scratch": "#d62728"}
RUNS = (("task1", "task-1 run θ0 → θ1", "θ1", "circle"), ("task2", "task-2 run θ0 → θ2", "θ2", "diamond"))
TASK_AXES = ("a (along δ1)", "b (along δ2 ⊥ δ1)")
FILTER_AXES = ("α (direction d1)", "β (direction d2)")


# ------------------------------------------------------------------ numbers and labels


def fmt(x: object, digits: int = 4) -> str:
    """``x`` with ``digits`` significant digits; "n/a" for None, NaN and infinity."""
    return "n/a" if x is None or not np.isfinite(float(x)) else f"{float(x):.{digits}g}"


def pm(mean: float, sd: float, digits: int = 3) -> str:
    """mean ± sd (the mean alone when sd is undefined: one seed or one direction)."""
    return fmt(mean, digits) if not np.isfinite(sd) else f"{fmt(mean, digits)} ± {fmt(sd, 2)}"


def run_label(summary: Mapping, shown_name: Callable[[str], str] = str) -> str:
    """One line naming a finished run in the selector (from ``isoscope.landscape.results.list_results``);
    its model and tasks as ``shown_name`` names them (classroom mode: no server path)."""
    cfg, train = summary.get("config", {}), summary.get("config", {}).get("train", {})
    g = summary.get("grid", {}).get("grid", "?")
    when = datetime.fromtimestamp(summary.get("mtime", 0)).strftime("%Y-%m-%d %H:%M")
    n = summary.get("n_train", ["?"])[0]
    seeds = summary.get("seeds", 1)
    task, task2, model = (shown_name(str(summary.get(k, "?"))) for k in ("task", "task2", "model"))
    return (
        f"{task} + {task2} · n={n} · {train.get('epochs', '?')} ep · "
        f"grid {g}x{g} · eval {cfg.get('eval_size', '?')} · {seeds} seed{'s' if seeds != 1 else ''} · "
        f"{model} · {when}"
    )


def headline_table(seeds: pd.DataFrame) -> pd.DataFrame:
    """The seeds table (``tables.seed_table``) wide: one row per headline number, ``mean ± sd`` per
    initialisation, scale invariance as yes/no (blank where the question does not apply); as strings."""
    table = seeds.assign(
        value=[pm(m, sd, 4) for m, sd in zip(seeds["mean"], seeds["sd"], strict=True)],
        scale_invariant=seeds["scale_invariant"].map({True: "yes", False: "no"}).fillna(""),
    )
    wide = table.pivot(index=["label", "scale_invariant"], columns="init", values="value").reset_index()
    order = {lab: k for k, lab in enumerate(dict.fromkeys(table["label"]))}
    wide = wide.sort_values("label", key=lambda c: c.map(order)).rename(columns=INIT_LABEL)
    return wide.astype(str)


def zrange(grids: Iterable[Mapping | None], metric: str, trajectory: pd.DataFrame | None = None) -> tuple[float, float]:
    """One colour/height range over ``metric`` of every grid (and of the trajectory's true values), so both
    initialisations share a scale; (0, 1) when nothing is finite."""
    values = [np.asarray(g[metric], float).ravel() for g in grids if g is not None and metric in g]
    if trajectory is not None and not trajectory.empty:
        values.append(trajectory[metric].to_numpy(float))
    v = np.concatenate(values) if values else np.array([0.0, 1.0])
    v = v[np.isfinite(v)]
    lo, hi = (float(v.min()), float(v.max())) if len(v) else (0.0, 1.0)
    return (lo, hi if hi > lo else lo + 1e-6)


# ------------------------------------------------------------------ the task plane


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


def contour(
    surface: Mapping,
    metric: str,
    traj: pd.DataFrame | None,
    *,
    zrange: tuple[float, float],
    title: str,
    axis_titles: tuple[str, str] = TASK_AXES,
) -> go.Figure:
    """``metric`` of a 2D grid (``alpha`` (n_a,), ``beta`` (n_b,), values (n_a, n_b)) as a labelled contour
    plot on ``zrange``, with the trajectories over it when ``traj`` is given."""
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
    if traj is not None:
        add_trajectory(fig, traj)
    fig.update_layout(
        height=430,
        margin={"t": 30},
        xaxis_title=axis_titles[0],
        yaxis_title=axis_titles[1],
        legend={"orientation": "h", "y": -0.2},
    )
    return fig


def surface3d(surface: Mapping, traj: pd.DataFrame, zrange: tuple[float, float]) -> go.Figure:
    """The training-loss grid as a 3-D surface with both runs' checkpoints at their true loss."""
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


# ------------------------------------------------------------------ curves and bars


def curves(df: pd.DataFrame, metrics: tuple[str, str], title: str) -> go.Figure:
    """Task-plane 1D curves (``tables.grid_tables()["curves"]``): per init, a solid and a dotted metric."""
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


def band_curves(
    df: pd.DataFrame, x: str, metric: str, *, title: str, x_title: str, marks: tuple[tuple[float, str], ...] = ()
) -> go.Figure:
    """Mean line with a ±sd band per initialisation, from columns ``<metric>_mean`` and ``<metric>_sd``."""
    fig = go.Figure()
    for init, part in df.groupby("init", sort=False):
        part = part.sort_values(x)
        mean, sd = part[f"{metric}_mean"].to_numpy(float), part[f"{metric}_sd"].fillna(0.0).to_numpy(float)
        colour, name = INIT_COLOUR.get(init), INIT_LABEL.get(init, init)
        xs = part[x].to_numpy(float)
        fig.add_trace(
            go.Scatter(
                x=np.r_[xs, xs[::-1]],
                y=np.r_[mean + sd, (mean - sd)[::-1]],
                fill="toself",
                fillcolor=colour,
                opacity=0.2,
                line={"width": 0},
                hoverinfo="skip",
                showlegend=False,
            )
        )
        fig.add_trace(go.Scatter(x=xs, y=mean, mode="lines+markers", name=name, line={"color": colour}))
    for xv, label in marks:
        fig.add_vline(x=xv, line_dash="dash", line_color="grey", annotation_text=label)
    fig.update_layout(height=360, xaxis_title=x_title, yaxis_title=title, margin={"t": 30})
    return fig


def bars(df: pd.DataFrame, y: str, title: str, *, log: bool = False) -> go.Figure:
    """The rollback table (``tables.rollback_table``): ``y`` per group restored, one bar colour per init (group
    and init names come from the results files: escaped, plotly renders HTML in ticks and legends)."""
    fig = go.Figure(
        [
            go.Bar(
                x=[plot_text(g, 40) for g in part["group"]],
                y=part[y],
                name=plot_text(INIT_LABEL.get(init, init), 40),
                marker_color=INIT_COLOUR.get(init),
            )
            for init, part in df.groupby("init", sort=False)
        ]
    )
    fig.update_layout(barmode="group", height=360, yaxis_title=title, margin={"t": 30}, xaxis_title="group restored")
    if log:
        fig.update_yaxes(type="log")
    return fig
