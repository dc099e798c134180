"""Migration (isoscope.migrate): the run from the two sides' vectors, once per vectors, task and settings; the model
B's encoder and poolings; the cost before a run; the per-cluster table and the adapter's download."""

from __future__ import annotations

import io
import tempfile
import zipfile
from pathlib import Path

import numpy as np
import streamlit as st

from isoscope.costs import FREE, Cost
from isoscope.dashboard.services.keyed import HASH_FUNCS, Vectors
from isoscope.migrate.config import MigrationConfig
from isoscope.migrate.results import MigrationResult, SideInfo
from isoscope.retrieval.task import RetrievalTask

HASH = {**HASH_FUNCS, RetrievalTask: lambda task: task.fingerprint}
CLUSTERS = 8


def config(methods: tuple[str, ...], fit_fraction: float | None, curve: tuple[float, ...], threshold: float):
    """The run's ``MigrationConfig`` (InputError in one line for a bad choice)."""
    return MigrationConfig(methods=methods, fit_fraction=fit_fraction, curve=curve, threshold=threshold)


@st.cache_resource(show_spinner=False, max_entries=4, hash_funcs=HASH)
def run(
    old: tuple[Vectors, Vectors, Vectors | None],
    new: tuple[Vectors, Vectors, Vectors | None],
    task: RetrievalTask,
    names: tuple[str, str, str],
    settings: MigrationConfig,
) -> MigrationResult:
    """``evaluate_migration`` of (queries, documents, generic fit texts) on each side; ``names``: the old side's name
    and kind (model or vectors), the new model's name (the result is shared, read only)."""
    from isoscope.migrate.run import evaluate_migration

    (Qa, Da, Xa), (Qb, Db, Xb) = old, new
    bar = st.progress(0.0, text="Fitting the adapters…")
    steps = {"fit": "Fitting the adapters", "curve": "Drawing the curve"}

    def stage(name: str):
        text = steps.get(name)
        if text is None:
            return None
        return lambda done, total: bar.progress(done / max(total, 1), text=f"{text}: {done:,} / {total:,}")

    try:
        fit = None if Xa is None else (Xa.array, Xb.array)
        result = evaluate_migration(
            (Qa.array, Da.array), (Qb.array, Db.array), task, fit=fit, config=settings, progress=stage
        )
    finally:
        bar.empty()
    result.old = SideInfo(names[0], result.old.dims, names[1])
    result.new = SideInfo(names[2], result.new.dims, "model")
    return result


def mlp_cost(settings: MigrationConfig, n_pairs: int, dims: tuple[int, int]) -> Cost:
    """The residual MLP's training at most, as the command estimates it (``isoscope.migrate.costs``)."""
    from isoscope.migrate.costs import mlp_cost as cost_of
    from isoscope.migrate.methods import make_adapter
    from isoscope.migrate.mlp import MIN_MLP_PAIRS

    total = FREE
    if n_pairs < MIN_MLP_PAIRS:
        return total
    for method in settings.methods or ():
        if method == "mlp" or method.startswith("mlp:"):
            mlp = make_adapter(method)
            rate = _mlp_rate(dims[0], dims[1], mlp.hidden)
            total = total + cost_of(n_pairs, rate, epochs=mlp.epochs, directions=len(settings.directions))
    return total


@st.cache_resource(show_spinner="Measuring this machine's speed (once)…", max_entries=4)
def _mlp_rate(d_in: int, d_out: int, hidden: int):
    from isoscope.migrate.costs import measure_mlp_rate

    return measure_mlp_rate(d_in, d_out, hidden)


@st.cache_data(show_spinner="Clustering the old vectors…", max_entries=8, hash_funcs=HASH_FUNCS)
def clusters(documents: Vectors, k: int = CLUSTERS) -> np.ndarray:
    """KMeans labels of the old model's document vectors (``isoscope.migrate.where.cluster_labels``)."""
    from isoscope.migrate.where import cluster_labels

    return cluster_labels(documents.array, min(k, len(documents.array)))


def adapter_zip(result: MigrationResult, method: str, direction: str) -> bytes:
    """The adapter's saved folder (adapter.json + adapter.safetensors: ``Adapter.save``), zipped in memory."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "adapter"
        result.adapter(method, direction).save(out)
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
            for path in sorted(out.rglob("*")):
                if path.is_file():
                    zf.write(path, f"adapter/{path.relative_to(out)}")
        return buffer.getvalue()
